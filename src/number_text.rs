//! A number as anvil writes it in names and messages: `4`, `2.5`.

/// At most six decimals, trailing zeros dropped: a search's probe names
/// (`{search}@rate=2.5`) and the words about them.
pub fn format_value(value: f64) -> String {
    let text = format!("{value:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}
