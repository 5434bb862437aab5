//! Parses a recipe file's KDL. A short file parses in one piece; a long one
//! (a generated campaign of 100,000 steps is 3 MB) is cut where its
//! top-level nodes begin and the pieces parse on every core, each handed on
//! and dropped before the next group: the KDL tree costs about 7 KB a node,
//! so holding the whole document would cost more memory than the plan.
//!
//! The cut is only a speed-up, never a change of meaning: if any piece does
//! not parse, the whole text is parsed again in one piece, and its nodes
//! or its errors are what the caller gets.

use std::ops::Range;

use kdl::{KdlDocument, KdlError, KdlNode};

/// Below this many bytes a file parses in one piece.
const PIECE_BYTES: usize = 128 * 1024;

/// What [`for_each_node`] hands its visitor.
pub enum Visit<'a> {
    /// The next top-level node, spans relative to the whole text.
    Node(&'a KdlNode),
    /// Forget every node handed so far: they come again, from one parse of the whole text.
    Restart,
}

/// Hands every top-level node of `text` to `visit`, in order; or the errors
/// of parsing `text` in one piece.
pub fn for_each_node(text: &str, mut visit: impl FnMut(Visit<'_>)) -> Result<(), KdlError> {
    for_each_node_in_pieces(text, PIECE_BYTES, &mut visit)
}

fn for_each_node_in_pieces(
    text: &str,
    piece_bytes: usize,
    visit: &mut dyn FnMut(Visit<'_>),
) -> Result<(), KdlError> {
    let pieces = pieces(text, piece_bytes);
    if pieces.len() > 1 {
        if parse_in_parallel(text, &pieces, visit) {
            return Ok(());
        }
        visit(Visit::Restart);
    }
    let document = text.parse::<KdlDocument>()?;
    document.nodes().iter().for_each(|node| visit(Visit::Node(node)));
    Ok(())
}

/// Parses the pieces on every core, handing each piece's nodes on in order
/// as soon as it and those before it are parsed. Each worker parses every
/// `threads`-th piece and waits while its last one is unclaimed, so at most
/// two documents per core are held at once. False at the first piece that
/// does not parse.
fn parse_in_parallel(text: &str, pieces: &[Range<usize>], visit: &mut dyn FnMut(Visit<'_>)) -> bool {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8).min(pieces.len());
    let parse = |range: &Range<usize>| {
        let mut document = text[range.clone()].parse::<KdlDocument>().ok()?;
        document.nodes_mut().iter_mut().for_each(|node| shift_node(node, range.start));
        Some(document)
    };
    std::thread::scope(|scope| {
        // Worker w (from 1) parses pieces w, w + threads, …; this thread parses piece 0, threads, ….
        let workers: Vec<std::sync::mpsc::Receiver<Option<KdlDocument>>> = (1..threads)
            .map(|w| {
                let (send, receive) = std::sync::mpsc::sync_channel(1);
                scope.spawn(move || {
                    for range in pieces.iter().skip(w).step_by(threads) {
                        let failed = send.send(parse(range)).is_err();
                        if failed {
                            break; // the reader stopped: a piece failed
                        }
                    }
                });
                receive
            })
            .collect();
        for (i, range) in pieces.iter().enumerate() {
            let document = match i % threads {
                0 => parse(range),
                w => workers[w - 1].recv().ok().flatten(),
            };
            let Some(document) = document else { return false };
            document.nodes().iter().for_each(|node| visit(Visit::Node(node)));
        }
        true
    })
}

fn shift(span: miette::SourceSpan, by: usize) -> miette::SourceSpan {
    (span.offset() + by, span.len()).into()
}

fn shift_node(node: &mut KdlNode, by: usize) {
    node.set_span(shift(node.span(), by));
    let name = node.name_mut();
    name.set_span(shift(name.span(), by));
    if let Some(ty) = node.ty_mut() {
        ty.set_span(shift(ty.span(), by));
    }
    for entry in node.entries_mut() {
        entry.set_span(shift(entry.span(), by));
        if let Some(name) = entry.name_mut() {
            name.set_span(shift(name.span(), by));
        }
        if let Some(ty) = entry.ty_mut() {
            ty.set_span(shift(ty.span(), by));
        }
    }
    if let Some(children) = node.children_mut() {
        children.set_span(shift(children.span(), by));
        children.nodes_mut().iter_mut().for_each(|child| shift_node(child, by));
    }
}

/// Byte ranges covering `text`, each at least `piece_bytes` long (but the
/// last), cut only just before a line that starts a top-level node.
fn pieces(text: &str, piece_bytes: usize) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut start = 0;
    for cut in node_starts(text) {
        if cut - start >= piece_bytes {
            ranges.push(start..cut);
            start = cut;
        }
    }
    ranges.push(start..text.len());
    ranges
}

/// Where lexical state stands while scanning for node starts.
#[derive(Clone, Copy, PartialEq)]
enum Lex {
    Code,
    /// A quoted string; `multiline` for `"""`.
    Quoted {
        multiline: bool,
    },
    /// A raw string of `hashes` `#`s; `multiline` for `#"""`.
    Raw {
        hashes: usize,
        multiline: bool,
    },
    LineComment,
    /// Nested `/* */` comments, this deep.
    BlockComment(usize),
}

/// Offsets of lines that begin a top-level node: a letter in column 0, at
/// brace depth 0, outside strings and comments, after a line that did not
/// end in a line continuation (`\`) or a slashdash (`/-`).
fn node_starts(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut starts = Vec::new();
    let mut lex = Lex::Code;
    let mut depth = 0usize;
    // The last two significant bytes of code on this line (not whitespace, not comments).
    let mut last = [0u8; 2];
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let rest = &bytes[i..];
        match lex {
            Lex::Code => match b {
                b'\n' => {
                    let continued = last[1] == b'\\' || last == *b"/-";
                    let next = bytes.get(i + 1).copied().unwrap_or(0);
                    if depth == 0 && !continued && next.is_ascii_alphabetic() {
                        starts.push(i + 1);
                    }
                    last = [0, 0];
                }
                b'{' => depth += 1,
                b'}' => depth = depth.saturating_sub(1),
                b'"' if rest.starts_with(b"\"\"\"") => {
                    lex = Lex::Quoted { multiline: true };
                    i += 3;
                    continue;
                }
                b'"' => lex = Lex::Quoted { multiline: false },
                b'#' => {
                    let hashes = rest.iter().take_while(|&&c| c == b'#').count();
                    if rest[hashes..].starts_with(b"\"") {
                        let multiline = rest[hashes..].starts_with(b"\"\"\"");
                        lex = Lex::Raw { hashes, multiline };
                        i += hashes + if multiline { 3 } else { 1 };
                        continue;
                    }
                }
                b'/' if rest.starts_with(b"//") => lex = Lex::LineComment,
                b'/' if rest.starts_with(b"/*") => {
                    lex = Lex::BlockComment(1);
                    i += 2;
                    continue;
                }
                _ => {}
            },
            Lex::Quoted { multiline } => match b {
                b'\\' => {
                    i += 2; // an escape: the next byte is never the end of the string
                    continue;
                }
                b'"' if !multiline => lex = Lex::Code,
                b'"' if rest.starts_with(b"\"\"\"") => {
                    lex = Lex::Code;
                    i += 3;
                    continue;
                }
                _ => {}
            },
            Lex::Raw { hashes, multiline } => {
                let quotes = if multiline { 3 } else { 1 };
                let closes = rest.len() >= quotes + hashes
                    && rest[..quotes].iter().all(|&c| c == b'"')
                    && rest[quotes..quotes + hashes].iter().all(|&c| c == b'#');
                if closes {
                    lex = Lex::Code;
                    i += quotes + hashes;
                    continue;
                }
            }
            Lex::LineComment => {
                if b == b'\n' {
                    lex = Lex::Code;
                    continue; // the newline ends the line in code
                }
            }
            Lex::BlockComment(nesting) => {
                if rest.starts_with(b"/*") {
                    lex = Lex::BlockComment(nesting + 1);
                    i += 2;
                    continue;
                }
                if rest.starts_with(b"*/") {
                    lex = if nesting == 1 { Lex::Code } else { Lex::BlockComment(nesting - 1) };
                    i += 2;
                    continue;
                }
            }
        }
        if lex == Lex::Code && !b.is_ascii_whitespace() && b != b'{' && b != b'}' {
            last = [last[1], b];
        } else if !matches!(lex, Lex::Code | Lex::LineComment | Lex::BlockComment(_)) {
            last = [0, b'"'];
        }
        i += 1;
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the loader reads of a node: names, values and spans, children included.
    fn outline(node: &KdlNode, out: &mut String) {
        use std::fmt::Write;
        let _ = write!(out, "({} {:?} {:?}", node.name().value(), node.name().span(), node.span());
        for entry in node.entries() {
            let name = entry.name().map(|n| (n.value().to_string(), n.span()));
            let _ = write!(out, " [{name:?} {:?} {:?}]", entry.value(), entry.span());
        }
        for child in node.iter_children() {
            outline(child, out);
        }
        out.push(')');
    }

    fn outline_of(text: &str, piece_bytes: usize) -> Result<(String, usize), String> {
        let (mut out, mut restarts) = (String::new(), 0);
        for_each_node_in_pieces(text, piece_bytes, &mut |visit| match visit {
            Visit::Node(node) => outline(node, &mut out),
            Visit::Restart => {
                out.clear();
                restarts += 1;
            }
        })
        .map_err(|e| format!("{e:?}"))?;
        Ok((out, restarts))
    }

    const TRICKY: &str = r####"campaign "c" {
    seed 1
}
task "a" {
    run "sh" "-c" "echo } \
task \"fake\" {"
}
task "b" \
    after="a"
/-
task "commented-out"
task "c" {
    run #"""
raw "} text
task x
"""#
    run ##"x"# still raw"##
}
/* a block comment
task "in-comment" { /* nested */ }
*/
task "d" {
    run """
    multi
task "z" {
"""
}
// task "line comment" {
task "e"; task "f"
"####;

    #[test]
    fn cuts_only_where_a_top_level_node_starts() {
        let starts: Vec<&str> =
            node_starts(TRICKY).iter().map(|&i| TRICKY[i..].lines().next().unwrap_or("")).collect();
        assert_eq!(
            starts,
            vec!["task \"a\" {", "task \"b\" \\", "task \"c\" {", "task \"d\" {", "task \"e\"; task \"f\""]
        );
    }

    #[test]
    fn pieces_give_the_nodes_and_spans_of_one_parse() {
        let (whole, _) = outline_of(TRICKY, usize::MAX).expect("the text parses");
        for piece_bytes in [1, 10, 40, 100] {
            let (cut, restarts) = outline_of(TRICKY, piece_bytes).expect("the text parses in pieces");
            assert_eq!(restarts, 0, "no piece failed at {piece_bytes} bytes");
            assert_eq!(cut, whole, "pieces of {piece_bytes} bytes");
        }
        assert!(pieces(TRICKY, 1).len() > 3, "the test text is cut at all");
    }

    #[test]
    fn a_piece_that_does_not_parse_falls_back_to_the_whole_text() {
        // The string's escaped newline fools no one, but an error in the last
        // piece must come back as one parse's errors, after a restart.
        let text = format!("{TRICKY}task \"broken\" {{\n");
        let err = outline_of(&text, 1).expect_err("an unclosed block");
        let whole = text.parse::<KdlDocument>().expect_err("an unclosed block");
        assert_eq!(err, format!("{whole:?}"));
    }

    #[test]
    fn long_generated_text_parses_the_same_in_pieces() {
        let mut text = String::new();
        for i in 0..3000 {
            text.push_str(&format!(
                "task \"t{i}\" after=\"t{}\" {{\n    run \"sh\" \"-c\" \"echo {i}\"\n}}\n",
                i.max(1) - 1
            ));
        }
        let (whole, _) = outline_of(&text, usize::MAX).expect("parses");
        let (cut, restarts) = outline_of(&text, 4096).expect("parses in pieces");
        assert!(pieces(&text, 4096).len() > 10);
        assert_eq!((cut, restarts), (whole, 0));
    }
}
