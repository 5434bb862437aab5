//! `keep-answers "4MB"`: how many bytes of answers a cell may keep, read
//! from what a person writes (a byte count, or a number and a unit).

/// The units a budget may carry: decimal (`KB`, `MB`, `GB`) and binary
/// (`KiB`, `MiB`, `GiB`), case as written here; `B` or none for bytes.
const UNITS: &[(&str, u64)] = &[
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
    ("GB", 1_000_000_000),
    ("MB", 1_000_000),
    ("KB", 1_000),
    ("B", 1),
];

/// The bytes `text` names ("4MB", "512KiB", "100000"), at least 1; a clear
/// reason when it names none.
pub fn parse(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (number, unit) = UNITS
        .iter()
        .find_map(|(unit, size)| text.strip_suffix(unit).map(|n| (n.trim(), *size)))
        .unwrap_or((text, 1));
    let bytes = match number.parse::<u64>() {
        Ok(whole) => whole.checked_mul(unit),
        Err(_) => number
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .map(|v| (v * unit as f64).round())
            .filter(|v| *v < u64::MAX as f64)
            .map(|v| v as u64),
    };
    match bytes {
        Some(bytes) if bytes > 0 => Ok(bytes),
        Some(_) => Err(format!("`{text}` keeps nothing: a budget is at least one byte")),
        None => Err(format!(
            "`{text}` is not a size: a byte count, or a number and a unit (B, KB, MB, GB, KiB, MiB, GiB), e.g. \"4MB\""
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn sizes() {
        assert_eq!(parse("4MB"), Ok(4_000_000));
        assert_eq!(parse("1.5 KiB"), Ok(1536));
        assert_eq!(parse("100000"), Ok(100_000));
        assert_eq!(parse("2GB"), Ok(2_000_000_000));
        assert_eq!(parse(" 7 B "), Ok(7));
        for bad in ["", "MB", "4 TB", "-1MB", "0", "lots", "1e400"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
