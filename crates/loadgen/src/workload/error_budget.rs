//! `abort-on-errors "20%" after=50`: a cell whose requests fail in a storm
//! stops sending, since figures measured over a server that refuses or
//! breaks a fifth of its load mean nothing about the load offered. The
//! share is judged only once `after` measured requests have ended, so a
//! few early failures do not end a cell by chance.

use serde::{Deserialize, Serialize};

/// `after` when unset: one failure in the first few requests is not a storm.
pub const DEFAULT_AFTER: u32 = 50;

/// A cell's error budget, as the recipe set it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ErrorBudget {
    /// The share of ended requests that may fail (0.2 for "20%").
    pub share: f64,
    /// Ended requests before the share is judged.
    pub after: u32,
}

impl ErrorBudget {
    /// Whether `failed` of `ended` requests spend the budget.
    pub fn spent(&self, failed: u64, ended: u64) -> bool {
        ended >= u64::from(self.after.max(1)) && failed as f64 >= self.share * ended as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_is_judged_only_after_enough_requests() {
        let budget = ErrorBudget { share: 0.2, after: 50 };
        assert!(!budget.spent(49, 49), "every one failed, but only 49 ended");
        assert!(!budget.spent(9, 50), "18% is under 20%");
        assert!(budget.spent(10, 50), "20% spends it");
        assert!(budget.spent(30, 60));
    }
}
