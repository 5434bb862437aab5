//! Steps by kind and name, so resolving a reference costs one lookup, and a
//! wildcard only the names that share its literal prefix: scanning every
//! step per reference made planning quadratic in the number of steps.

use std::collections::HashMap;

use anvil_expr::{Reference, glob_match};

use crate::recipe::{Kind, Recipe};

pub struct StepIndex<'a> {
    exact: HashMap<(Kind, &'a str), usize>,
    /// Per kind, (name, index) sorted by name: a prefix is one range.
    sorted: HashMap<Kind, Vec<(&'a str, usize)>>,
}

impl<'a> StepIndex<'a> {
    pub fn new(recipe: &'a Recipe) -> StepIndex<'a> {
        let mut exact = HashMap::with_capacity(recipe.steps.len());
        let mut sorted: HashMap<Kind, Vec<(&str, usize)>> = HashMap::new();
        for (i, step) in recipe.steps.iter().enumerate() {
            exact.insert((step.kind, step.name.as_str()), i);
            sorted.entry(step.kind).or_default().push((step.name.as_str(), i));
        }
        for names in sorted.values_mut() {
            names.sort_unstable();
        }
        StepIndex { exact, sorted }
    }

    /// The steps of `kind` a reference's name matches (exact or glob).
    pub fn matching(&self, kind: Kind, reference: &Reference) -> Vec<usize> {
        if !reference.is_wildcard() {
            return self.exact.get(&(kind, reference.name.as_str())).copied().into_iter().collect();
        }
        let Some(names) = self.sorted.get(&kind) else { return Vec::new() };
        let prefix = &reference.name[..reference.name.find('*').unwrap_or(reference.name.len())];
        let start = names.partition_point(|(name, _)| *name < prefix);
        names[start..]
            .iter()
            .take_while(|(name, _)| name.starts_with(prefix))
            .filter(|(name, _)| glob_match(&reference.name, name))
            .map(|&(_, i)| i)
            .collect()
    }
}
