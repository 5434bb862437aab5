//! Where a piece of an expression is in its source: the spans every token,
//! node and error carries.

/// `(offset, len)` in bytes into the expression source.
pub type Span = (usize, usize);

/// Span covering `first` through `last`.
pub(crate) fn join(first: Span, last: Span) -> Span {
    let end = (last.0 + last.1).max(first.0 + first.1);
    (first.0, end - first.0)
}
