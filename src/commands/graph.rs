//! `anvil graph`: the DAG as Graphviz dot or Mermaid.

use crate::cli::{GraphFormat, RecipeArgs};

use super::common::{Exit, load_plan};

pub fn graph(args: &RecipeArgs, format: GraphFormat) -> Result<i32, Exit> {
    let plan = load_plan(args, None)?;
    let id = |i: usize| format!("n{i}");
    let label = |i: usize| format!("{} {}", plan.nodes[i].kind, plan.nodes[i].name);
    let mut out = String::new();
    match format {
        GraphFormat::Dot => {
            out.push_str("digraph anvil {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n");
            for &i in &plan.order {
                out.push_str(&format!("  {} [label=\"{}\"];\n", id(i), label(i).replace('"', "\\\"")));
            }
            for &i in &plan.order {
                for &d in &plan.nodes[i].deps {
                    out.push_str(&format!("  {} -> {};\n", id(d), id(i)));
                }
            }
            out.push_str("}\n");
        }
        GraphFormat::Mermaid => {
            out.push_str("flowchart LR\n");
            for &i in &plan.order {
                out.push_str(&format!("  {}[\"{}\"]\n", id(i), label(i).replace('"', "#quot;")));
            }
            for &i in &plan.order {
                for &d in &plan.nodes[i].deps {
                    out.push_str(&format!("  {} --> {}\n", id(d), id(i)));
                }
            }
        }
    }
    print!("{out}");
    Ok(0)
}
