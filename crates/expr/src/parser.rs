//! Recursive-descent parser with precedence climbing. Precedence, loosest
//! first: `||`/`or`, `&&`/`and`, comparisons (not chainable), `+ -`,
//! `* / %`, prefix `! not -`.

use crate::ast::{Literal, Node, NodeKind};
use crate::error::ParseError;
use crate::functions::Function;
use crate::lexer::{PathPart, Token, TokenKind};
use crate::op::{BinaryOp, Precedence, UnaryOp};
use crate::reference::{PathSegment, Reference};
use crate::span::{Span, join};

/// Deepest tree (and deepest nesting) accepted. Far beyond any real gate;
/// it keeps recursion in the parser, evaluator and `Drop` bounded.
pub(crate) const MAX_DEPTH: usize = 200;

/// Parses a token stream (ending in `Eof`); returns the root and the node count.
pub(crate) fn parse_tokens(src: &str, tokens: Vec<Token>) -> Result<(Node, usize), ParseError> {
    let mut parser = Parser { src, tokens, pos: 0, next_id: 0, nesting: 0 };
    if parser.peek().kind == TokenKind::Eof {
        return Err(ParseError::new("empty expression", (0, src.len()))
            .with_help("write a condition such as `check.smoke.passed`"));
    }
    let root = parser.expression(Precedence::Or)?;
    let next = parser.peek();
    if next.kind != TokenKind::Eof {
        return Err(ParseError::new(
            format!("unexpected {} after a complete expression", parser.describe(next)),
            next.span,
        )
        .with_help("join conditions with `&&` or `||`; put spaces around `-` and `*` next to a path"));
    }
    Ok((root, parser.next_id))
}

struct Parser<'s> {
    src: &'s str,
    tokens: Vec<Token>,
    pos: usize,
    next_id: usize,
    /// Current recursion depth of `prefix`, to refuse `((((...` early.
    nesting: usize,
}

fn binary_op(kind: &TokenKind) -> Option<BinaryOp> {
    Some(match kind {
        TokenKind::OrOr => BinaryOp::Or,
        TokenKind::AndAnd => BinaryOp::And,
        TokenKind::Word(word) if word == "or" => BinaryOp::Or,
        TokenKind::Word(word) if word == "and" => BinaryOp::And,
        TokenKind::EqEq => BinaryOp::Eq,
        TokenKind::NotEq => BinaryOp::NotEq,
        TokenKind::Lt => BinaryOp::Lt,
        TokenKind::Le => BinaryOp::Le,
        TokenKind::Gt => BinaryOp::Gt,
        TokenKind::Ge => BinaryOp::Ge,
        TokenKind::Plus => BinaryOp::Add,
        TokenKind::Minus => BinaryOp::Sub,
        TokenKind::Star => BinaryOp::Mul,
        TokenKind::Slash => BinaryOp::Div,
        TokenKind::Percent => BinaryOp::Rem,
        _ => return None,
    })
}

/// The precedence one step tighter, for the right operand of a left-associative operator.
fn tighter(precedence: Precedence) -> Precedence {
    match precedence {
        Precedence::Or => Precedence::And,
        Precedence::And => Precedence::Comparison,
        Precedence::Comparison => Precedence::Sum,
        Precedence::Sum => Precedence::Product,
        Precedence::Product | Precedence::Prefix => Precedence::Prefix,
    }
}

impl Parser<'_> {
    fn peek(&self) -> &Token {
        // The stream always ends with Eof and we never advance past it.
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    fn advance(&mut self) -> Token {
        let token = self.peek().clone();
        if token.kind != TokenKind::Eof {
            self.pos += 1;
        }
        token
    }

    /// "`)`", "end of expression": how a token reads in an error message.
    fn describe(&self, token: &Token) -> String {
        match token.kind {
            TokenKind::Eof => "end of expression".to_string(),
            _ => {
                let (offset, len) = token.span;
                format!("`{}`", &self.src[offset..offset + len])
            }
        }
    }

    fn node(&mut self, span: Span, kind: NodeKind) -> Result<Node, ParseError> {
        let depth = 1 + match &kind {
            NodeKind::Literal(_) | NodeKind::Reference(_) => 0,
            NodeKind::Unary { operand, .. } => operand.depth,
            NodeKind::Binary { lhs, rhs, .. } => lhs.depth.max(rhs.depth),
            NodeKind::Call { args, .. } => args.iter().map(|a| a.depth).max().unwrap_or(0),
        };
        if depth > MAX_DEPTH {
            return Err(too_deep(span));
        }
        let id = self.next_id;
        self.next_id += 1;
        Ok(Node { id, span, depth, kind })
    }

    fn expression(&mut self, min: Precedence) -> Result<Node, ParseError> {
        let mut lhs = self.prefix()?;
        // Set when `lhs` is a comparison built in this loop, to refuse `a < b < c`.
        let mut lhs_is_comparison = false;
        while let Some(op) = binary_op(&self.peek().kind) {
            let precedence = op.precedence();
            if precedence < min {
                break;
            }
            let op_token = self.advance();
            if precedence == Precedence::Comparison && lhs_is_comparison {
                return Err(ParseError::new("comparisons cannot be chained", op_token.span)
                    .with_help("write `a < b && b < c`, or add parentheses"));
            }
            let rhs = self.expression(tighter(precedence))?;
            let span = join(lhs.span, rhs.span);
            lhs = self.node(span, NodeKind::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs) })?;
            lhs_is_comparison = precedence == Precedence::Comparison;
        }
        Ok(lhs)
    }

    fn prefix(&mut self) -> Result<Node, ParseError> {
        self.nesting += 1;
        let result =
            if self.nesting > MAX_DEPTH { Err(too_deep(self.peek().span)) } else { self.prefix_inner() };
        self.nesting -= 1;
        result
    }

    fn prefix_inner(&mut self) -> Result<Node, ParseError> {
        let token = self.advance();
        let literal = |value| NodeKind::Literal(value);
        match token.kind {
            TokenKind::Number(n) => self.node(token.span, literal(Literal::Number(n))),
            TokenKind::String(ref s) => self.node(token.span, literal(Literal::String(s.clone()))),
            TokenKind::Bang => self.unary(UnaryOp::Not, token.span),
            TokenKind::Minus => self.unary(UnaryOp::Negate, token.span),
            TokenKind::LParen => {
                let inner = self.expression(Precedence::Or)?;
                let close = self.peek().clone();
                if close.kind != TokenKind::RParen {
                    return Err(ParseError::new(
                        format!("expected `)`, found {}", self.describe(&close)),
                        close.span,
                    )
                    .with_help(format!("the `(` at offset {} is not closed", token.span.0)));
                }
                self.advance();
                // The group's span includes its parentheses.
                Ok(Node { span: join(token.span, close.span), ..inner })
            }
            TokenKind::Path(ref parts) => {
                let reference = path_to_reference(parts, token.span)?;
                self.node(token.span, NodeKind::Reference(reference))
            }
            TokenKind::Word(ref word) => self.word(word, token.span),
            _ => Err(ParseError::new(format!("expected a value, found {}", self.describe(&token)), token.span)
                .with_help("a value is a number, a \"string\", true, false, null, a path like cell.tp1.passed, or a function call")),
        }
    }

    fn unary(&mut self, op: UnaryOp, op_span: Span) -> Result<Node, ParseError> {
        let operand = self.prefix()?;
        let span = join(op_span, operand.span);
        self.node(span, NodeKind::Unary { op, operand: Box::new(operand) })
    }

    fn word(&mut self, word: &str, span: Span) -> Result<Node, ParseError> {
        match word {
            "true" => return self.node(span, NodeKind::Literal(Literal::Bool(true))),
            "false" => return self.node(span, NodeKind::Literal(Literal::Bool(false))),
            "null" => return self.node(span, NodeKind::Literal(Literal::Null)),
            "not" => return self.unary(UnaryOp::Not, span),
            "and" | "or" => {
                return Err(ParseError::new(format!("expected a value before `{word}`"), span));
            }
            _ => {}
        }
        if self.peek().kind == TokenKind::LParen {
            return self.call(word, span);
        }
        let error = ParseError::new(format!("`{word}` is not a value"), span);
        Err(match Function::from_word(word) {
            Some(function) => error.with_help(format!("`{word}` is a function: {}", function.usage())),
            None => error.with_help(
                "paths have at least a kind and a name (cell.tp1.aggregate_tok_s); text goes in quotes",
            ),
        })
    }

    fn call(&mut self, name: &str, name_span: Span) -> Result<Node, ParseError> {
        let Some(function) = Function::from_word(name) else {
            return Err(unknown_function(name, name_span));
        };
        self.advance(); // `(`
        let mut args = Vec::new();
        let close = loop {
            if self.peek().kind == TokenKind::RParen && args.is_empty() {
                break self.advance();
            }
            args.push(self.expression(Precedence::Or)?);
            let next = self.advance();
            match next.kind {
                TokenKind::Comma => {}
                TokenKind::RParen => break next,
                _ => {
                    return Err(ParseError::new(
                        format!("expected `,` or `)` in the call of {name}, found {}", self.describe(&next)),
                        next.span,
                    ));
                }
            }
        };
        let span = join(name_span, close.span);
        let (min, max) = function.arity();
        if args.len() < min || max.is_some_and(|max| args.len() > max) {
            return Err(ParseError::new(
                format!("{name} takes {}, got {}", arity_text(min, max), args.len()),
                span,
            )
            .with_help(function.usage()));
        }
        if function == Function::Exists
            && let Some(arg) = args.first().filter(|a| !matches!(a.kind, NodeKind::Reference(_)))
        {
            return Err(ParseError::new("exists() takes a path, not an expression", arg.span)
                .with_help(function.usage()));
        }
        self.node(span, NodeKind::Call { function, args })
    }
}

fn too_deep(span: Span) -> ParseError {
    ParseError::new(format!("expression nests more than {MAX_DEPTH} levels deep"), span)
        .with_help("split it into several gates")
}

fn arity_text(min: usize, max: Option<usize>) -> String {
    let plural = |n: usize| if n == 1 { "argument" } else { "arguments" };
    match max {
        Some(max) if max == min => format!("{min} {}", plural(min)),
        Some(max) => format!("{min} to {max} arguments"),
        None => format!("at least {min} {}", plural(min)),
    }
}

fn unknown_function(name: &str, span: Span) -> ParseError {
    let error = ParseError::new(format!("unknown function `{name}`"), span);
    let closest = Function::WORDS
        .iter()
        .map(|&word| (strsim::levenshtein(name, word), word))
        .min()
        .filter(|(distance, _)| *distance <= 2);
    match closest {
        Some((_, suggestion)) => error.with_help(format!("did you mean `{suggestion}`?")),
        None => error.with_help(format!("functions: {}", Function::WORDS.join(", "))),
    }
}

fn path_to_reference(parts: &[PathPart], span: Span) -> Result<Reference, ParseError> {
    let (kind, name, rest) = match parts {
        [PathPart::Segment(kind, _), PathPart::Segment(name, _), rest @ ..] => (kind, name, rest),
        [PathPart::Segment(kind, _), PathPart::Index(_, index_span), ..] => {
            return Err(ParseError::new(format!("`{kind}` needs a node name before an index"), *index_span)
                .with_help(format!("e.g. `{kind}.tp1.runs[0]`")));
        }
        _ => {
            return Err(ParseError::new("a path needs a kind and a name", span)
                .with_help("e.g. `cell.tp1.aggregate_tok_s`"));
        }
    };
    let field = rest
        .iter()
        .map(|part| match part {
            PathPart::Segment(key, _) => PathSegment::Key(key.clone()),
            PathPart::Index(index, _) => PathSegment::Index(*index),
        })
        .collect();
    Ok(Reference { kind: kind.clone(), name: name.clone(), field, span })
}
