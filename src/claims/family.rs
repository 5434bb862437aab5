//! A decision's claims as a family: its promotion and each labelled rule,
//! each bounded by `error_bound`, and the chance that any of them is wrong
//! bounded by their sum (Bonferroni).

use anvil_expr::Expr;

use super::error_bound::{ClaimBound, ErrorBound, VerdictErrors, claim_bound};

/// One claim a decision makes: `promotion`, or a rule's label.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// `promotion`, or the label.
    pub name: String,
    pub bound: ClaimBound,
}

/// The decision's claims: its promotion (when it has `promote-when`) and
/// each rule with a label (a rule of statements only claims nothing).
pub fn claims<'a>(
    promote_when: Option<&Expr>,
    rules: impl IntoIterator<Item = (&'a str, &'a Expr)>,
    verdicts: &VerdictErrors<'_>,
) -> Vec<Claim> {
    let promotion = promote_when
        .map(|when| Claim { name: "promotion".to_string(), bound: claim_bound(&when.logic(), verdicts) });
    let labels = rules
        .into_iter()
        .filter(|(label, _)| !label.is_empty())
        .map(|(label, when)| Claim { name: label.to_string(), bound: claim_bound(&when.logic(), verdicts) });
    promotion.into_iter().chain(labels).collect()
}

/// The chance that any of the claims is wrong: at most the sum of their
/// bounds, which also bounds the expected number of wrong ones.
pub fn family_bound(claims: &[Claim]) -> ErrorBound {
    let mut sum = 0.0;
    for claim in claims {
        match &claim.bound.bound {
            ErrorBound::Uncontrolled(why) => {
                return ErrorBound::Uncontrolled(format!("{}: {why}", claim_words(&claim.name)));
            }
            bound => sum += bound.error().unwrap_or(0.0),
        }
    }
    ErrorBound::from_error(sum)
}

/// `promotion`, or `label "fast"`.
pub fn claim_words(name: &str) -> String {
    if name == "promotion" { name.to_string() } else { format!("label \"{name}\"") }
}
