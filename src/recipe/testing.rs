//! For unit tests of the layers: a recipe loaded from text.

use super::{Recipe, RecipeError, load};

/// Load `text` as `recipe.kdl` in a temporary folder (gone when loaded:
/// recipes that read files must not use this).
pub fn load_text(text: &str) -> Result<Recipe, RecipeError> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("recipe.kdl");
    std::fs::write(&path, text).expect("write recipe");
    load(&path, &[])
}
