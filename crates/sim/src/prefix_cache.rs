//! The engine's prefix cache: which prompt-prefix blocks have been
//! prefilled before. Oldest blocks are evicted first.

use std::collections::{HashSet, VecDeque};

#[derive(Debug)]
pub struct PrefixCache {
    enabled: bool,
    max_blocks: usize,
    blocks: HashSet<u64>,
    insertion_order: VecDeque<u64>,
}

impl PrefixCache {
    pub fn new(enabled: bool, max_blocks: u32) -> Self {
        Self {
            enabled,
            max_blocks: max_blocks as usize,
            blocks: HashSet::new(),
            insertion_order: VecDeque::new(),
        }
    }

    /// How many leading blocks of a prompt are cached.
    pub fn cached_blocks(&self, block_hashes: &[u64]) -> usize {
        if !self.enabled {
            return 0;
        }
        block_hashes.iter().take_while(|hash| self.blocks.contains(hash)).count()
    }

    /// Remember a prefilled prompt's blocks.
    pub fn insert(&mut self, block_hashes: &[u64]) {
        if !self.enabled {
            return;
        }
        for &hash in block_hashes {
            if self.blocks.insert(hash) {
                self.insertion_order.push_back(hash);
            }
        }
        while self.blocks.len() > self.max_blocks {
            match self.insertion_order.pop_front() {
                Some(oldest) => self.blocks.remove(&oldest),
                None => break,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_only_a_leading_run_and_evicts_oldest() {
        let mut cache = PrefixCache::new(true, 3);
        cache.insert(&[1, 2, 3]);
        assert_eq!(cache.cached_blocks(&[1, 2, 9]), 2);
        assert_eq!(cache.cached_blocks(&[9, 2, 3]), 0);
        cache.insert(&[4]);
        assert_eq!(cache.cached_blocks(&[1]), 0);
        assert!(PrefixCache::new(false, 3).cached_blocks(&[1]) == 0);
    }
}
