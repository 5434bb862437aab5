//! Member paths are names, never file-system paths taken on trust: a
//! bundle from elsewhere must not write outside where it is unpacked.

use std::path::{Component, Path, PathBuf};

/// `a/b/c.json` → a relative path with only normal components, or None
/// for anything absolute, with `..`, `.`, empty parts or backslashes.
pub fn safe_relative(name: &str) -> Option<PathBuf> {
    if name.is_empty() || name.contains('\\') || name.contains('\0') {
        return None;
    }
    let path = Path::new(name);
    let normal = path.components().all(|c| matches!(c, Component::Normal(_)));
    (normal && !name.split('/').any(|part| part.is_empty() || part == "." || part == ".."))
        .then(|| path.to_path_buf())
}

/// `dir/file` relative to `base` with `/` separators, or None when outside it.
pub fn relative_to(path: &Path, base: &Path) -> Option<String> {
    let rel = path.strip_prefix(base).ok()?;
    let parts: Option<Vec<&str>> = rel
        .components()
        .map(|c| match c {
            Component::Normal(part) => part.to_str(),
            _ => None,
        })
        .collect();
    parts.map(|p| p.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_names_are_safe() {
        assert!(safe_relative("recipe/engines/sglang.kdl").is_some());
        for bad in ["", "/etc/passwd", "../x", "a/../../x", "a//b", "./a", "a\\b", "a/"] {
            assert!(safe_relative(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn relative_names_use_slashes() {
        assert_eq!(relative_to(Path::new("/w/r/e/a.kdl"), Path::new("/w/r")).as_deref(), Some("e/a.kdl"));
        assert_eq!(relative_to(Path::new("/w/x.kdl"), Path::new("/w/r")), None);
    }
}
