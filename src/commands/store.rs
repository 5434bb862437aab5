//! `anvil store verify` and `anvil gc`.

use std::path::Path;

use super::common::{Exit, open_store};

pub fn verify(root: &Path, as_json: bool) -> Result<i32, Exit> {
    let store = open_store(root)?;
    let report = store.verify()?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        println!(
            "checked {} entries, {} files, {} bytes",
            report.entries_checked, report.files_checked, report.bytes_checked
        );
        for problem in &report.problems {
            println!("DAMAGED {problem}");
        }
        for leftover in &report.leftovers {
            println!("leftover (harmless; gc removes it): {}", leftover.display());
        }
        println!("{}", if report.is_clean() { "store is clean" } else { "store is DAMAGED" });
    }
    Ok(if report.is_clean() { 0 } else { 1 })
}

pub fn gc(root: &Path, dry_run: bool) -> Result<i32, Exit> {
    let store = open_store(root)?;
    let report = store.gc(dry_run)?;
    let verb = if dry_run { "would remove" } else { "removed" };
    println!(
        "{verb} {} entries, {} leftovers, {} unused locks, {} bytes of cache ({} bytes); kept {} entries referenced by {} recorded fingerprints",
        report.entries_removed.len(),
        report.leftovers_removed.len(),
        report.locks_removed,
        report.cache_bytes,
        report.bytes_freed,
        report.entries_kept,
        report.roots
    );
    Ok(0)
}
