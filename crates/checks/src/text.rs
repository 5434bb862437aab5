//! Cutting long text for evidence: keep the start (where markers and
//! leading garbage show) and the end (where a second JSON value or a
//! stray `</think>` shows), and say how much was left out.

/// Characters kept from the start of a long text.
const HEAD_CHARS: usize = 3000;
/// Characters kept from its end.
const TAIL_CHARS: usize = 1000;

/// `text` whole if short, else its head and tail around a note of what was cut.
pub fn excerpt(text: &str) -> String {
    excerpt_with(text, HEAD_CHARS, TAIL_CHARS)
}

pub fn excerpt_with(text: &str, head: usize, tail: usize) -> String {
    let total = text.chars().count();
    if total <= head + tail {
        return text.to_owned();
    }
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text.char_indices().nth(total - tail).map_or(text.len(), |(i, _)| i);
    format!("{}…[{} chars cut]…{}", &text[..head_end], total - head - tail, &text[tail_start..])
}

/// A short one-line quote for a verdict: first `max` chars, newlines shown as `\n`.
pub fn quote(text: &str, max: usize) -> String {
    let mut out: String = text.chars().take(max).collect::<String>().replace('\n', "\\n");
    if text.chars().count() > max {
        out.push('…');
    }
    format!("`{out}`")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_whole() {
        assert_eq!(excerpt("hello"), "hello");
    }

    #[test]
    fn long_text_keeps_head_and_tail_on_char_boundaries() {
        let text = "é".repeat(10) + &"x".repeat(10);
        let cut = excerpt_with(&text, 3, 2);
        assert_eq!(cut, "ééé…[15 chars cut]…xx");
    }

    #[test]
    fn quote_escapes_newlines_and_marks_cuts() {
        assert_eq!(quote("a\nb", 10), "`a\\nb`");
        assert_eq!(quote("abcdef", 3), "`abc…`");
    }
}
