//! A `check`'s result: the functional check's verdict over every replica
//! (its evidence is the step's `evidence.json`).

use serde::{Deserialize, Serialize};

use super::verdict::Verdict;
use crate::words::CheckType;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    #[serde(rename = "type")]
    pub check_type: CheckType,
    /// Every replica passed (the same fact as `status`).
    pub passed: bool,
    pub status: Verdict,
    /// Each replica's detail, joined with ` | `.
    pub detail: String,
    /// Requests sent, over every replica.
    pub attempts: u32,
    /// Requests that failed the check, over every replica.
    pub failures: u32,
    pub simulated: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn old_way(
        check_type: CheckType,
        passed: bool,
        detail: &str,
        attempts: &[u32],
        failures: &[u32],
    ) -> Value {
        json!({
            "type": check_type.as_str(),
            "passed": passed,
            "status": if passed { "passed" } else { "rejected" },
            "detail": detail,
            "attempts": attempts.iter().sum::<u32>(),
            "failures": failures.iter().sum::<u32>(),
            "simulated": true,
        })
    }

    fn new_way(
        check_type: CheckType,
        passed: bool,
        detail: &str,
        attempts: &[u32],
        failures: &[u32],
    ) -> Value {
        super::super::to_value(&CheckResult {
            check_type,
            passed,
            status: Verdict::from_passed(passed),
            detail: detail.into(),
            attempts: attempts.iter().sum(),
            failures: failures.iter().sum(),
            simulated: true,
        })
    }

    #[test]
    fn same_json_as_before() {
        for word in CheckType::WORDS {
            let check_type = CheckType::from_word(word).unwrap();
            for passed in [true, false] {
                let detail = if passed { "3/3 ok | 3/3 ok" } else { "1/3 ok | 3/3 ok" };
                let old = old_way(check_type, passed, detail, &[3, 3], &[u32::from(!passed) * 2, 0]);
                let new = new_way(check_type, passed, detail, &[3, 3], &[u32::from(!passed) * 2, 0]);
                assert_eq!(old, new);
                assert_eq!(old.to_string(), new.to_string());
                let back: CheckResult = super::super::from_value(old.clone()).unwrap();
                assert_eq!(back.check_type, check_type);
                assert_eq!(super::super::to_value(&back), old);
            }
        }
    }

    #[test]
    fn unknown_check_type_is_an_error() {
        let stored = json!({"type": "smokes", "passed": true, "status": "passed", "detail": "",
                            "attempts": 1, "failures": 0, "simulated": false});
        let err = super::super::from_value::<CheckResult>(stored).unwrap_err().to_string();
        assert!(err.contains("unknown variant `smokes`, expected one of `smoke`"), "{err}");
    }
}
