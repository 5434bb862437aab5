//! A `task`'s (or `finally`'s) result: the command's exit status, the tail
//! of its output and a hash of each declared output file (the full output
//! and the files are the step's files).

use serde::{Deserialize, Serialize};

use super::named::NamedMap;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// `null` when the command was ended by a signal.
    pub exit_code: Option<i32>,
    /// The last few thousand bytes of stdout (`…` in front when cut).
    pub stdout: String,
    pub stderr: String,
    /// Each declared output, as declared, to `blake3:<hex>` of its bytes.
    pub outputs: NamedMap<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value, json};

    /// What `run_task` built before results were typed.
    fn old_way(exit_code: Option<i32>, stdout: &str, stderr: &str, files: &[(&str, &[u8])]) -> Value {
        let mut outputs = Map::new();
        for (declared, bytes) in files {
            outputs.insert(declared.to_string(), json!(format!("blake3:{}", blake3::hash(bytes).to_hex())));
        }
        json!({
            "exit_code": exit_code,
            "stdout": stdout,
            "stderr": stderr,
            "outputs": outputs,
        })
    }

    fn new_way(exit_code: Option<i32>, stdout: &str, stderr: &str, files: &[(&str, &[u8])]) -> Value {
        let mut outputs = NamedMap::new();
        for (declared, bytes) in files {
            outputs.insert(*declared, format!("blake3:{}", blake3::hash(bytes).to_hex()));
        }
        super::super::to_value(&TaskResult {
            exit_code,
            stdout: stdout.into(),
            stderr: stderr.into(),
            outputs,
        })
    }

    fn assert_same(old: Value, new: Value) {
        assert_eq!(old, new);
        assert_eq!(old.to_string(), new.to_string());
        let back: TaskResult = super::super::from_value(old.clone()).unwrap();
        assert_eq!(super::super::to_value(&back), old);
    }

    #[test]
    fn same_json_as_before() {
        let files: [(&str, &[u8]); 3] =
            [("out/z.json", b"{}"), ("./a.txt", b"hello"), ("out/z.json", b"{\"again\":1}")];
        assert_same(
            old_way(Some(0), "done\n", "…warning: x\n", &files),
            new_way(Some(0), "done\n", "…warning: x\n", &files),
        );
        assert_same(old_way(Some(0), "", "", &[]), new_way(Some(0), "", "", &[]));
        // No exit code stays `null`, not omitted.
        let new = new_way(None, "", "", &[]);
        assert_same(old_way(None, "", "", &[]), new.clone());
        assert_eq!(new.get("exit_code"), Some(&Value::Null));
    }
}
