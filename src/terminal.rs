//! The terminal, at the edge: whether output may carry colour. Set once
//! from `--color` by the command line, read by whatever prints.

use clap::ValueEnum;

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

static COLOR: std::sync::OnceLock<ColorChoice> = std::sync::OnceLock::new();

/// Record `--color` for the whole process (the first call wins).
pub fn set_color(choice: ColorChoice) {
    let _ = COLOR.set(choice);
}

/// Whether terminal output may carry colour: `--color always`, or `auto`
/// with stderr a terminal and `NO_COLOR` unset or empty (no-color.org).
pub fn color_enabled() -> bool {
    use std::io::IsTerminal;
    match COLOR.get().copied().unwrap_or(ColorChoice::Auto) {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
        }
    }
}
