//! Turns the source into tokens. Dotted paths are lexed as one token because
//! whether `-` and `*` belong to a name depends on what touches them:
//! `cell.tp2-json.passed` is one path, `cell.a.x - 1` is a subtraction.

use crate::error::ParseError;
use crate::span::Span;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TokenKind {
    Number(f64),
    String(String),
    /// A bare word without dots or brackets: a keyword, a function name, or a
    /// mistake the parser explains.
    Word(String),
    /// A dotted path with at least one `.` or `[n]`.
    Path(Vec<PathPart>),
    LParen,
    RParen,
    Comma,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Bang,
    AndAnd,
    OrOr,
    EqEq,
    NotEq,
    Lt,
    Le,
    Gt,
    Ge,
    Eof,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PathPart {
    Segment(String, Span),
    Index(usize, Span),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub kind: TokenKind,
    pub span: Span,
}

/// Characters that may start or continue a path segment (`-` is handled apart).
fn is_segment_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn is_word_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

pub(crate) fn tokenize(src: &str) -> Result<Vec<Token>, ParseError> {
    let mut lexer = Lexer { src, bytes: src.as_bytes(), pos: 0 };
    let mut tokens = Vec::new();
    loop {
        let token = lexer.next_token()?;
        let done = token.kind == TokenKind::Eof;
        tokens.push(token);
        if done {
            return Ok(tokens);
        }
    }
}

struct Lexer<'s> {
    src: &'s str,
    bytes: &'s [u8],
    pos: usize,
}

impl Lexer<'_> {
    fn peek_at(&self, offset: usize) -> Option<u8> {
        self.bytes.get(self.pos + offset).copied()
    }

    fn next_token(&mut self) -> Result<Token, ParseError> {
        while self.peek_at(0).is_some_and(|c| c.is_ascii_whitespace()) {
            self.pos += 1;
        }
        let start = self.pos;
        let Some(c) = self.peek_at(0) else {
            return Ok(Token { kind: TokenKind::Eof, span: (start, 0) });
        };
        let two = |kind| (kind, 2);
        let one = |kind| (kind, 1);
        let (kind, len) = match (c, self.peek_at(1)) {
            (b'0'..=b'9', _) => return self.number(),
            (b'"' | b'\'', _) => return self.string(c),
            (c, _) if is_word_start(c) => return self.word_or_path(),
            (b'&', Some(b'&')) => two(TokenKind::AndAnd),
            (b'|', Some(b'|')) => two(TokenKind::OrOr),
            (b'=', Some(b'=')) => two(TokenKind::EqEq),
            (b'!', Some(b'=')) => two(TokenKind::NotEq),
            (b'<', Some(b'=')) => two(TokenKind::Le),
            (b'>', Some(b'=')) => two(TokenKind::Ge),
            (b'(', _) => one(TokenKind::LParen),
            (b')', _) => one(TokenKind::RParen),
            (b',', _) => one(TokenKind::Comma),
            (b'+', _) => one(TokenKind::Plus),
            (b'-', _) => one(TokenKind::Minus),
            (b'*', _) => one(TokenKind::Star),
            (b'/', _) => one(TokenKind::Slash),
            (b'%', _) => one(TokenKind::Percent),
            (b'!', _) => one(TokenKind::Bang),
            (b'<', _) => one(TokenKind::Lt),
            (b'>', _) => one(TokenKind::Gt),
            (b'&', _) => {
                return Err(ParseError::new("unexpected `&`", (start, 1))
                    .with_help("logical and is written `&&` or `and`"));
            }
            (b'|', _) => {
                return Err(ParseError::new("unexpected `|`", (start, 1))
                    .with_help("logical or is written `||` or `or`"));
            }
            (b'=', _) => {
                return Err(
                    ParseError::new("unexpected `=`", (start, 1)).with_help("equality is written `==`")
                );
            }
            _ => {
                let ch = self.src[start..].chars().next().unwrap_or('?');
                return Err(ParseError::new(format!("unexpected character `{ch}`"), (start, ch.len_utf8())));
            }
        };
        self.pos += len;
        Ok(Token { kind, span: (start, len) })
    }

    fn number(&mut self) -> Result<Token, ParseError> {
        let start = self.pos;
        self.skip_digits();
        if self.peek_at(0) == Some(b'.') && self.peek_at(1).is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
            self.skip_digits();
        }
        if matches!(self.peek_at(0), Some(b'e' | b'E')) {
            let sign = usize::from(matches!(self.peek_at(1), Some(b'+' | b'-')));
            if self.peek_at(1 + sign).is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1 + sign;
                self.skip_digits();
            }
        }
        let span = (start, self.pos - start);
        let text = &self.src[start..self.pos];
        match text.parse::<f64>() {
            Ok(value) if value.is_finite() => Ok(Token { kind: TokenKind::Number(value), span }),
            _ => Err(ParseError::new(format!("number `{text}` is out of range"), span)),
        }
    }

    fn skip_digits(&mut self) {
        while self.peek_at(0).is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
    }

    /// A string in `"..."` or `'...'` (single quotes spare escaping inside a
    /// KDL string). Escapes: `\\`, `\"`, `\'`, `\n`, `\t`.
    fn string(&mut self, quote: u8) -> Result<Token, ParseError> {
        let start = self.pos;
        self.pos += 1;
        let mut value = String::new();
        loop {
            let rest = &self.src[self.pos..];
            let Some(ch) = rest.chars().next() else {
                return Err(ParseError::new("unterminated string", (start, self.pos - start))
                    .with_help(format!("close it with {}", quote as char)));
            };
            if ch as u32 == u32::from(quote) {
                self.pos += 1;
                return Ok(Token { kind: TokenKind::String(value), span: (start, self.pos - start) });
            }
            if ch == '\\' {
                let escape_start = self.pos;
                let escaped = rest[1..].chars().next();
                let replacement = match escaped {
                    Some('\\') => '\\',
                    Some('"') => '"',
                    Some('\'') => '\'',
                    Some('n') => '\n',
                    Some('t') => '\t',
                    _ => {
                        let len = 1 + escaped.map_or(0, char::len_utf8);
                        return Err(ParseError::new("unknown escape in string", (escape_start, len))
                            .with_help(r#"supported escapes: \\ \" \' \n \t"#));
                    }
                };
                value.push(replacement);
                self.pos += 2;
            } else {
                value.push(ch);
                self.pos += ch.len_utf8();
            }
        }
    }

    /// A bare word (`and`, `pct_delta`) or a path (`cell.tp2-json.passed`,
    /// `cell.sglang-d*.tok_s`, `cell.x.runs[2].ttft`).
    fn word_or_path(&mut self) -> Result<Token, ParseError> {
        let start = self.pos;
        let mut parts = Vec::new();
        // The first segment is the kind; the second, the name, may hold `*`.
        let first = self.segment(false);
        parts.push(PathPart::Segment(first, (start, self.pos - start)));
        loop {
            match (self.peek_at(0), self.peek_at(1)) {
                (Some(b'.'), Some(next)) if is_segment_char(next) || (next == b'*' && parts.len() == 1) => {
                    self.pos += 1;
                    let segment_start = self.pos;
                    let in_name = parts.len() == 1;
                    let mut segment = self.segment(in_name);
                    // A wildcard needs a field after it; otherwise the
                    // `*` is multiplication: `param.depth*2`.
                    if let Some(star) = segment.find('*')
                        && self.peek_at(0) != Some(b'.')
                    {
                        if star == 0 || segment[..star].ends_with('-') {
                            return Err(ParseError::new(
                                "a wildcard name needs a field after it",
                                (segment_start, self.pos - segment_start),
                            )
                            .with_help("e.g. `cell.sglang-*.aggregate_tok_s`"));
                        }
                        segment.truncate(star);
                        self.pos = segment_start + star;
                    }
                    parts.push(PathPart::Segment(segment, (segment_start, self.pos - segment_start)));
                }
                (Some(b'.'), _) => {
                    return Err(ParseError::new("expected a name after `.`", (self.pos, 1))
                        .with_help("paths look like `cell.tp1.aggregate_tok_s`"));
                }
                (Some(b'['), _) => parts.push(self.index()?),
                _ => break,
            }
        }
        let span = (start, self.pos - start);
        let kind = match parts.as_slice() {
            [PathPart::Segment(word, _)] => TokenKind::Word(word.clone()),
            _ => TokenKind::Path(parts),
        };
        Ok(Token { kind, span })
    }

    /// Letters, digits, `_`, and `-` when followed by another name character
    /// (so `x - 1` and `x -1` subtract); `*` too when `allow_star`.
    fn segment(&mut self, allow_star: bool) -> String {
        let start = self.pos;
        let continues = |c: u8| is_segment_char(c) || (allow_star && c == b'*');
        while let Some(c) = self.peek_at(0) {
            if continues(c) || (c == b'-' && self.peek_at(1).is_some_and(continues)) {
                self.pos += 1;
            } else {
                break;
            }
        }
        self.src[start..self.pos].to_string()
    }

    fn index(&mut self) -> Result<PathPart, ParseError> {
        let start = self.pos;
        self.pos += 1;
        let digits_start = self.pos;
        self.skip_digits();
        let digits = &self.src[digits_start..self.pos];
        if digits.is_empty() || self.peek_at(0) != Some(b']') {
            // Underline through the offending character, if there is one.
            let end = self.src[self.pos..].chars().next().map_or(self.pos, |c| self.pos + c.len_utf8());
            return Err(ParseError::new("expected a list index like `[2]`", (start, end - start))
                .with_help("indexes are whole numbers counted from 0"));
        }
        self.pos += 1;
        let span = (start, self.pos - start);
        let index = digits.parse::<usize>().map_err(|_| ParseError::new("list index is too large", span))?;
        Ok(PathPart::Index(index, span))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<TokenKind> {
        tokenize(src).expect("lexes").into_iter().map(|t| t.kind).collect()
    }

    fn segment(text: &str, span: Span) -> PathPart {
        PathPart::Segment(text.to_string(), span)
    }

    #[test]
    fn hyphen_inside_a_name_is_part_of_it() {
        assert_eq!(
            kinds("check.tp2-json.passed"),
            vec![
                TokenKind::Path(vec![
                    segment("check", (0, 5)),
                    segment("tp2-json", (6, 8)),
                    segment("passed", (15, 6)),
                ]),
                TokenKind::Eof
            ]
        );
    }

    #[test]
    fn hyphen_with_space_is_subtraction() {
        let tokens = kinds("a.b.c - 1");
        assert_eq!(tokens[1], TokenKind::Minus);
        let tokens = kinds("a.b.c -1");
        assert_eq!(tokens[1], TokenKind::Minus);
    }

    #[test]
    fn star_after_name_without_field_is_multiplication() {
        let tokens = kinds("param.depth*2");
        assert_eq!(
            tokens,
            vec![
                TokenKind::Path(vec![segment("param", (0, 5)), segment("depth", (6, 5))]),
                TokenKind::Star,
                TokenKind::Number(2.0),
                TokenKind::Eof
            ]
        );
    }

    #[test]
    fn wildcard_name_and_index_are_lexed() {
        let tokens = kinds("cell.sglang-d*.runs[3]");
        assert_eq!(
            tokens[0],
            TokenKind::Path(vec![
                segment("cell", (0, 4)),
                segment("sglang-d*", (5, 9)),
                segment("runs", (15, 4)),
                PathPart::Index(3, (19, 3)),
            ])
        );
    }

    #[test]
    fn numbers_in_all_forms() {
        assert_eq!(kinds("1e3")[0], TokenKind::Number(1000.0));
        assert_eq!(kinds("2.5")[0], TokenKind::Number(2.5));
        assert_eq!(kinds("1.5e-3")[0], TokenKind::Number(0.0015));
        assert!(tokenize("1e999").is_err());
    }

    #[test]
    fn strings_with_both_quotes_and_escapes() {
        assert_eq!(kinds(r#""a\"b""#)[0], TokenKind::String("a\"b".into()));
        assert_eq!(kinds("'it'")[0], TokenKind::String("it".into()));
        let error = tokenize("'open").expect_err("unterminated");
        assert_eq!(error.span, (0, 5));
    }

    #[test]
    fn single_operators_get_helpful_errors() {
        let error = tokenize("a.b.c = 1").expect_err("single =");
        assert_eq!(error.span, (6, 1));
        assert_eq!(error.help.as_deref(), Some("equality is written `==`"));
    }
}
