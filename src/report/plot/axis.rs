//! Axis ranges and tick labels, the same on every plot.

/// An axis label: no trailing zeros, thousands as k.
pub(super) fn tick(v: f64) -> String {
    let a = v.abs();
    if a >= 10_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A range over the values with some room; `from_zero` starts at 0 for positive data.
pub(super) fn span(values: impl Iterator<Item = f64>, pad: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if lo >= 0.0 && (!pad || lo < (hi - lo)) {
        lo = 0.0;
    }
    let room = if pad { (hi - lo).abs() * 0.15 } else { 0.0 };
    let (lo, hi) = (if lo == 0.0 { 0.0 } else { lo - room }, hi + room);
    if hi - lo < 1e-9 {
        (lo - 1.0_f64.max(lo.abs() * 0.1), hi + 1.0_f64.max(hi.abs() * 0.1))
    } else {
        (lo, hi)
    }
}
