//! `{placeholders}` in recipe strings, in one place. Two passes fill them:
//! loading fills params and sweep variables (and refuses unknown names),
//! launching fills what only a run knows (`{port}`, `{gpus}`, …). `{{` and
//! `}}` are literal braces: loading keeps them doubled so the run-time pass
//! still sees them as escapes, and the run-time pass turns them into one.
//! (The load generator fills `{marker}`, `{index}` and `{seed}` in request
//! bodies itself, per request.) Names with dots, `{screen.NAME.winner_server}`,
//! are upstream results (`result_refs.rs`): loading fills those it is given
//! and keeps the others, for the plan to settle once the results exist.

use std::collections::BTreeMap;

/// Placeholders filled when the step runs, not when the recipe loads.
/// Server command lines get port, host, gpus and replica; a workload's
/// `extra-body` gets marker, index and seed per request.
pub const RUNTIME_PLACEHOLDERS: &[&str] = &["port", "host", "gpus", "replica", "marker", "index", "seed"];

/// One piece of a string with placeholders.
#[derive(Debug, PartialEq)]
enum Token<'a> {
    Text(&'a str),
    /// `{{` or `}}`: one literal brace.
    Escaped(char),
    /// `{name}`.
    Placeholder(&'a str),
    /// A `}` with no `{` (load time only).
    LoneClose,
    /// A `{` with no `}` (load time only).
    Unclosed,
}

/// Split `text` into tokens. Strictly (at load), every `{…}` is a
/// placeholder and stray braces are errors; leniently (at run time), only
/// names `accept` knows are placeholders and other braces are text.
fn tokens<'a>(text: &'a str, strict: bool, accept: &dyn Fn(&str) -> bool) -> Vec<Token<'a>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(pos) = rest.find(['{', '}']) {
        if pos > 0 {
            out.push(Token::Text(&rest[..pos]));
        }
        let tail = &rest[pos..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push(Token::Escaped(tail.as_bytes()[0] as char));
            rest = &tail[2..];
            continue;
        }
        let closed = tail.strip_prefix('{').and_then(|inner| inner.find('}').map(|end| &inner[..end]));
        match (tail.starts_with('}'), closed) {
            (true, _) if strict => {
                out.push(Token::LoneClose);
                return out;
            }
            (false, None) if strict => {
                out.push(Token::Unclosed);
                return out;
            }
            (false, Some(name)) if strict || accept(name) => {
                out.push(Token::Placeholder(name));
                rest = &tail[name.len() + 2..];
                continue;
            }
            _ => out.push(Token::Text(&tail[..1])),
        }
        rest = &tail[1..];
    }
    if !rest.is_empty() {
        out.push(Token::Text(rest));
    }
    out
}

/// Why a string's placeholders could not be filled at load.
#[derive(Debug, PartialEq)]
pub enum PlaceholderError {
    LoneClose,
    Unclosed,
    Unknown(String),
}

/// Fill params and sweep variables at load. Run-time names are kept for
/// later; `{{`/`}}` stay doubled for the run-time pass.
pub fn fill_at_load(text: &str, vars: &BTreeMap<String, String>) -> Result<String, PlaceholderError> {
    let mut out = String::with_capacity(text.len());
    for token in tokens(text, true, &|_| true) {
        match token {
            Token::Text(t) => out.push_str(t),
            Token::Escaped(brace) => {
                out.push(brace);
                out.push(brace);
            }
            Token::Placeholder(name) => match vars.get(name) {
                Some(value) => out.push_str(value),
                None if RUNTIME_PLACEHOLDERS.contains(&name) || is_result_name(name) => {
                    out.push('{');
                    out.push_str(name);
                    out.push('}');
                }
                None => return Err(PlaceholderError::Unknown(name.to_string())),
            },
            Token::LoneClose => return Err(PlaceholderError::LoneClose),
            Token::Unclosed => return Err(PlaceholderError::Unclosed),
        }
    }
    Ok(out)
}

/// `kind.step.field`: a placeholder that names an upstream result.
pub fn is_result_name(name: &str) -> bool {
    name.contains('.')
}

/// The result placeholders (`{screen.x.winner}`) a loaded string still holds.
pub fn result_names(text: &str) -> Vec<&str> {
    if !text.contains('{') {
        return Vec::new(); // most strings: no token list to build
    }
    tokens(text, false, &is_result_name)
        .into_iter()
        .filter_map(|token| match token {
            Token::Placeholder(name) => Some(name),
            _ => None,
        })
        .collect()
}

/// Fill run-time placeholders: `{port}`, `{gpus}`, …; `{{` is a literal `{`.
/// Braces around anything else are kept as written.
pub fn render(text: &str, vars: &BTreeMap<&str, String>) -> String {
    let mut out = String::with_capacity(text.len());
    for token in tokens(text, false, &|name| vars.contains_key(name)) {
        match token {
            Token::Text(t) => out.push_str(t),
            Token::Escaped(brace) => out.push(brace),
            Token::Placeholder(name) => out.push_str(&vars[name]),
            // Only produced strictly.
            Token::LoneClose | Token::Unclosed => {}
        }
    }
    out
}

/// `{{`/`}}` → `{`/`}`, filling no placeholder.
pub fn unescape(text: &str) -> String {
    render(text, &BTreeMap::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn renders_placeholders_and_escapes() {
        let vars = BTreeMap::from([("port", "8001".to_string())]);
        assert_eq!(render("--port={port} {{x}} {other}", &vars), "--port=8001 {x} {other}");
        assert_eq!(render("root ::= \"{marker} \" [^_]*", &vars), "root ::= \"{marker} \" [^_]*");
        assert_eq!(render("} { {port", &vars), "} { {port");
        assert_eq!(render("{a{port}", &vars), "{a8001");
        assert_eq!(unescape("{\"a\": {marker}}}"), "{\"a\": {marker}}");
    }

    #[test]
    fn load_fills_variables_and_keeps_runtime_names_and_escapes() {
        let v = vars(&[("depth", "8")]);
        assert_eq!(fill_at_load("d{depth} --port {port} {{x}}", &v), Ok("d8 --port {port} {{x}}".into()));
        assert_eq!(fill_at_load("{dept}", &v), Err(PlaceholderError::Unknown("dept".into())));
        assert_eq!(fill_at_load("a } b", &v), Err(PlaceholderError::LoneClose));
        assert_eq!(fill_at_load("a { b", &v), Err(PlaceholderError::Unclosed));
    }

    #[test]
    fn result_names_wait_for_the_plan() {
        let v = vars(&[("screen.d.winner_server", "k12")]);
        assert_eq!(fill_at_load("{screen.d.winner_server}", &v), Ok("k12".into()));
        let kept = fill_at_load("--rate={search.c.max_rate} {{x}}", &v).unwrap();
        assert_eq!(kept, "--rate={search.c.max_rate} {{x}}");
        assert_eq!(result_names(&kept), vec!["search.c.max_rate"]);
        assert_eq!(result_names("{port} {{a.b}}"), Vec::<&str>::new());
    }

    #[test]
    fn the_two_passes_compose() {
        // What loading leaves, the run-time pass finishes: escapes survive both.
        let loaded = fill_at_load("{{\"n\": {n}}} on {port}", &vars(&[("n", "3")])).unwrap();
        let ran = render(&loaded, &BTreeMap::from([("port", "9".to_string())]));
        assert_eq!(ran, "{\"n\": 3} on 9");
    }
}
