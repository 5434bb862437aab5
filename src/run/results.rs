//! Reading stored results back for steps that evaluate them (gates,
//! screens, decisions): `{kind: {name: result}}` for the expression resolver.

use anvil_store::Store;
use serde_json::{Map, Value};

use crate::plan::Plan;

/// The results of `index`'s dependencies, plus the recipe's params.
pub fn inputs_of(plan: &Plan, index: usize, store: &Store) -> Value {
    let mut doc: Map<String, Value> = Map::new();
    for &d in &plan.nodes[index].deps {
        let dep = &plan.nodes[d];
        let Ok(Some(entry)) = store.read(&dep.fingerprint) else { continue };
        let kind = doc.entry(dep.kind.as_str()).or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(map) = kind {
            map.insert(dep.name.clone(), entry.result);
        }
    }
    crate::quality::inputs::attach(&mut doc, plan, index, store);
    let params: Map<String, Value> = plan.recipe.params.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    doc.insert("param".into(), Value::Object(params));
    Value::Object(doc)
}
