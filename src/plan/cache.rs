//! Where the plan's recipes are cached.

use anvil_store::Store;

use crate::recipe::ParseCache;

/// Where recipes loaded against `store` are cached (`recipe::ParseCache`).
pub fn recipe_cache(store: &Store) -> Option<ParseCache> {
    ParseCache::in_dir(store.cache_dir("recipes"))
}
