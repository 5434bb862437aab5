//! Property tests (fuzz targets `chunked` and `http_head`) for the HTTP/1.1
//! framing: whatever bytes a server sends, the chunked decoder and the head
//! parser never panic and give the same answer however the bytes fall
//! across reads, and valid framings decode to exactly what was framed.
//! Driver and seed corpus: `fuzz/harness.rs`, `fuzz/corpus/`.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;

use super::chunked::{ChunkedDecoder, ChunkedError};
use super::response::{Body, HeadError, parse_head};
use crate::fuzz_harness as harness;
use crate::observe::proptests::{cut_points, feed_sse, hostile_bytes, pieces, sse_stream};
use crate::observe::sse::SseParser;

// ---------------------------------------------------------------- chunked

/// Everything a decode run tells the caller.
#[derive(Debug, PartialEq)]
struct Decoded {
    body: Vec<u8>,
    error: Option<ChunkedError>,
    /// Input bytes that belonged to the body.
    consumed: usize,
    done: bool,
}

/// Decodes `parts` in order as the client does: it stops feeding once the
/// body is done, and at the first error.
fn decode<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> Decoded {
    let mut decoder = ChunkedDecoder::default();
    let mut out = Decoded { body: Vec::new(), error: None, consumed: 0, done: false };
    for part in parts {
        match decoder.decode(part, |d| out.body.extend_from_slice(d)) {
            Ok(n) => {
                assert!(n <= part.len(), "consumed {n} of {} bytes", part.len());
                out.consumed += n;
                if n < part.len() {
                    assert!(decoder.is_done(), "stopped early without being done");
                }
            }
            Err(e) => {
                out.error = Some(e);
                break;
            }
        }
        if decoder.is_done() {
            break;
        }
    }
    out.done = decoder.is_done();
    // Bytes after the error are not counted either way, so compare the
    // prefix that was accepted: an error ends the decode.
    if out.error.is_some() {
        out.consumed = 0;
    }
    out
}

#[derive(Debug, Clone)]
struct SizeLine {
    upper: bool,
    leading_zeros: usize,
    /// `;`, ` ` or `\t`, then the rest of the extension (no CR or LF).
    extension: Option<(u8, Vec<u8>)>,
    bare_lf: bool,
}

impl SizeLine {
    fn write(&self, size: usize, out: &mut Vec<u8>) {
        out.extend(std::iter::repeat_n(b'0', self.leading_zeros));
        let hex = if self.upper { format!("{size:X}") } else { format!("{size:x}") };
        out.extend_from_slice(hex.as_bytes());
        if let Some((first, rest)) = &self.extension {
            out.push(*first);
            out.extend_from_slice(rest);
        }
        out.extend_from_slice(if self.bare_lf { b"\n" } else { b"\r\n" });
    }
}

/// A valid chunked encoding of `body`, and bytes after it (the next
/// response on the connection).
#[derive(Debug, Clone)]
struct Framed {
    chunks: Vec<(Vec<u8>, SizeLine, bool)>,
    last: SizeLine,
    trailers: Vec<(Vec<u8>, bool)>,
    final_bare_lf: bool,
    after: Vec<u8>,
}

impl Framed {
    fn body(&self) -> Vec<u8> {
        self.chunks.iter().flat_map(|(data, ..)| data.iter().copied()).collect()
    }

    /// The encoding; the body's own bytes end at the returned length.
    fn wire(&self) -> (Vec<u8>, usize) {
        let mut out = Vec::new();
        for (data, size_line, bare_lf) in &self.chunks {
            size_line.write(data.len(), &mut out);
            out.extend_from_slice(data);
            out.extend_from_slice(if *bare_lf { b"\n" } else { b"\r\n" });
        }
        self.last.write(0, &mut out);
        for (line, bare_lf) in &self.trailers {
            out.extend_from_slice(line);
            out.extend_from_slice(if *bare_lf { b"\n" } else { b"\r\n" });
        }
        out.extend_from_slice(if self.final_bare_lf { b"\n" } else { b"\r\n" });
        let len = out.len();
        out.extend_from_slice(&self.after);
        (out, len)
    }
}

fn no_line_ends(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        "[ -~]{0,12}".prop_map(String::into_bytes),
        vec(any::<u8>(), 0..max)
            .prop_map(|v| v.into_iter().filter(|b| !matches!(b, b'\r' | b'\n')).collect()),
    ]
}

fn size_line() -> impl Strategy<Value = SizeLine> {
    let extension = proptest::option::of((proptest::sample::select(&b"; \t"[..]), no_line_ends(16)));
    (any::<bool>(), 0usize..4, extension, any::<bool>()).prop_map(
        |(upper, leading_zeros, extension, bare_lf)| SizeLine { upper, leading_zeros, extension, bare_lf },
    )
}

fn chunk_data() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        vec(any::<u8>(), 1..64),
        vec(any::<u8>(), 64..1200),
        // Bytes that look like framing.
        vec(proptest::sample::select(&b"0\r\n;a"[..]), 1..16),
    ]
}

fn framed() -> impl Strategy<Value = Framed> {
    let trailer =
        (no_line_ends(24).prop_filter("a trailer line is not empty", |l| !l.is_empty()), any::<bool>());
    (
        vec((chunk_data(), size_line(), any::<bool>()), 0..8),
        size_line(),
        vec(trailer, 0..3),
        any::<bool>(),
        prop_oneof![Just(Vec::new()), Just(b"HTTP/1.1 200 OK\r\n".to_vec()), vec(any::<u8>(), 0..16)],
    )
        .prop_map(|(chunks, last, trailers, final_bare_lf, after)| Framed {
            chunks,
            last,
            trailers,
            final_bare_lf,
            after,
        })
}

#[test]
fn fuzz_chunked_arbitrary_bytes_decode_the_same_however_split() {
    let strategy = (hostile_bytes(b"0123456789abcdefABCDEF;\r\n \tx", 256), vec(any::<Index>(), 0..8));
    harness::check("chunked", "arbitrary_bytes_split_anywhere", 256, strategy, |(bytes, cuts)| {
        let whole = decode([&bytes[..]]);
        prop_assert!(whole.body.len() <= bytes.len());
        let cuts = cut_points(&cuts, bytes.len());
        prop_assert_eq!(decode(pieces(&bytes, &cuts)), whole, "split at {:?}", cuts);
        Ok(())
    });
}

#[test]
fn fuzz_chunked_valid_encodings_decode_to_their_body() {
    let strategy = (framed(), vec(any::<Index>(), 0..12));
    harness::check("chunked", "valid_encodings_split_anywhere", 256, strategy, |(framed, cuts)| {
        let (wire, len) = framed.wire();
        let expected = Decoded { body: framed.body(), error: None, consumed: len, done: true };
        prop_assert_eq!(decode([&wire[..]]), expected, "wire {:?}", String::from_utf8_lossy(&wire));
        let cuts = cut_points(&cuts, wire.len());
        let expected = Decoded { body: framed.body(), error: None, consumed: len, done: true };
        prop_assert_eq!(decode(pieces(&wire, &cuts)), expected, "split at {:?}", cuts);
        Ok(())
    });
}

#[test]
fn fuzz_chunked_mutated_encodings_decode_the_same_however_split() {
    let strategy = (framed(), vec(harness::mutation(no_line_ends(4)), 1..4), vec(any::<Index>(), 0..8));
    harness::check("chunked", "mutated_encodings", 256, strategy, |(framed, mutations, cuts)| {
        let (mut wire, _) = framed.wire();
        for m in &mutations {
            m.apply(&mut wire);
        }
        let whole = decode([&wire[..]]);
        let cuts = cut_points(&cuts, wire.len());
        prop_assert_eq!(decode(pieces(&wire, &cuts)), whole);
        Ok(())
    });
}

#[test]
fn corpus_chunked_replays() {
    for (name, bytes) in harness::corpus("chunked") {
        let whole = decode([&bytes[..]]);
        for cut in 0..=bytes.len() {
            assert_eq!(decode([&bytes[..cut], &bytes[cut..]]), whole, "{name} split at {cut}");
        }
        assert_eq!(decode(bytes.chunks(1)), whole, "{name} byte by byte");
    }
    // What the seeds are there for.
    let seed = |name: &str| harness::corpus("chunked").into_iter().find(|(n, _)| n == name).unwrap().1;
    let d = decode([&seed("extension-and-trailer.bin")[..]]);
    assert_eq!((d.body, d.done), (b"data: a0123456789abcdefghijklmnop".to_vec(), true));
    let d = decode([&seed("pipelined-next-response.bin")[..]]);
    assert_eq!((d.body, d.consumed, d.done), (b"hi".to_vec(), 12, true));
    assert!(decode([&seed("too-many-digits.bin")[..]]).error.is_some());
    assert!(!decode([&seed("huge-size.bin")[..]]).done);
}

// ---------------------------------------------------------------- head

#[derive(Debug, Clone)]
enum Header {
    ContentLength(u64),
    /// Not a number: the head is malformed.
    BadContentLength(String),
    TransferEncoding(Vec<&'static str>),
    Connection(Vec<&'static str>),
    Other(String, String),
}

#[derive(Debug, Clone)]
struct GenHead {
    informational: Vec<u16>,
    http_11: bool,
    status: u16,
    reason: String,
    /// Headers with the case pattern of their names.
    headers: Vec<(Header, u64, bool)>,
}

fn cased(name: &str, pattern: u64) -> String {
    name.chars()
        .enumerate()
        .map(
            |(i, c)| {
                if pattern >> (i % 64) & 1 == 1 { c.to_ascii_uppercase() } else { c.to_ascii_lowercase() }
            },
        )
        .collect()
}

/// What the head must be read as.
#[derive(Debug, PartialEq)]
enum Framing {
    Chunked,
    Length(u64),
    UntilClose,
}

impl GenHead {
    fn wire(&self) -> Vec<u8> {
        let mut out = String::new();
        for status in &self.informational {
            out.push_str(&format!("HTTP/1.1 {status} Continue\r\n\r\n"));
        }
        let version = if self.http_11 { "1.1" } else { "1.0" };
        out.push_str(&format!("HTTP/{version} {} {}\r\n", self.status, self.reason));
        for (header, pattern, padded) in &self.headers {
            let (name, value) = match header {
                Header::ContentLength(n) => ("content-length", n.to_string()),
                Header::BadContentLength(v) => ("content-length", v.clone()),
                Header::TransferEncoding(tokens) => ("transfer-encoding", tokens.join(", ")),
                Header::Connection(tokens) => ("connection", tokens.join(",")),
                Header::Other(name, value) => (name.as_str(), value.clone()),
            };
            let pad = if *padded { " " } else { "" };
            out.push_str(&format!("{}:{pad}{value}{pad}\r\n", cased(name, *pattern)));
        }
        out.push_str("\r\n");
        out.into_bytes()
    }

    /// (status, framing, keep_alive), or None when the head is malformed.
    fn expected(&self) -> Option<(u16, Framing, bool)> {
        let mut chunked = false;
        let mut length = None;
        let mut keep_alive = self.http_11;
        for (header, ..) in &self.headers {
            match header {
                Header::ContentLength(n) => length = Some(*n),
                Header::BadContentLength(_) => return None,
                Header::TransferEncoding(tokens) => chunked = tokens.last() == Some(&"chunked"),
                Header::Connection(tokens) => {
                    for token in tokens {
                        match *token {
                            "close" => keep_alive = false,
                            "keep-alive" => keep_alive = true,
                            _ => {}
                        }
                    }
                }
                Header::Other(..) => {}
            }
        }
        let framing = if self.status == 204 || self.status == 304 {
            Framing::Length(0)
        } else if chunked {
            Framing::Chunked
        } else if let Some(n) = length {
            Framing::Length(n)
        } else {
            keep_alive = false;
            Framing::UntilClose
        };
        Some((self.status, framing, keep_alive))
    }
}

fn header() -> impl Strategy<Value = Header> {
    let te = proptest::sample::select(&["chunked", "gzip", "identity", "deflate"][..]);
    let conn = proptest::sample::select(&["close", "keep-alive", "upgrade", "te"][..]);
    prop_oneof![
        prop_oneof![0u64..100_000, any::<u64>()].prop_map(Header::ContentLength),
        prop_oneof![
            Just("many".to_string()),
            Just("-1".to_string()),
            Just("18446744073709551616".to_string()),
            Just("1, 2".to_string())
        ]
        .prop_map(Header::BadContentLength),
        vec(te, 1..3).prop_map(Header::TransferEncoding),
        vec(conn, 1..3).prop_map(Header::Connection),
        ("[A-Za-z][A-Za-z0-9-]{0,12}", "[!-~]([ -~]{0,20}[!-~])?")
            .prop_filter("not a framing header", |(name, _)| {
                !["content-length", "transfer-encoding", "connection"]
                    .contains(&name.to_ascii_lowercase().as_str())
            })
            .prop_map(|(name, value)| Header::Other(name, value)),
    ]
}

fn gen_head() -> impl Strategy<Value = GenHead> {
    let informational = vec(prop_oneof![Just(100u16), Just(102), Just(103), 104u16..200], 0..3);
    let status = prop_oneof![Just(200u16), Just(204), Just(304), Just(101), 200u16..600];
    (
        informational,
        any::<bool>(),
        status,
        "[A-Za-z ]{0,12}",
        vec((header(), any::<u64>(), any::<bool>()), 0..8),
    )
        .prop_map(|(informational, http_11, status, reason, headers)| GenHead {
            informational,
            http_11,
            status,
            reason,
            headers,
        })
}

fn framing_of(body: &Body) -> Framing {
    match body {
        Body::Chunked(_) => Framing::Chunked,
        Body::Length { remaining } => Framing::Length(*remaining),
        Body::UntilClose => Framing::UntilClose,
    }
}

/// What `parse_head` says, comparable.
fn head_summary(bytes: &[u8]) -> Result<Option<(u16, Framing, bool, usize)>, HeadError> {
    parse_head(bytes).map(|h| h.map(|(h, n)| (h.status, framing_of(&h.body), h.keep_alive, n)))
}

#[test]
fn fuzz_head_arbitrary_bytes_never_panic() {
    let seeds: Vec<Vec<u8>> = harness::corpus("http_head").into_iter().map(|(_, b)| b).collect();
    let insert = proptest::sample::select(vec![
        &b"\r\n"[..],
        b"\n",
        b": ",
        b"Content-Length: 5\r\n",
        b"Transfer-Encoding: chunked\r\n",
        b"HTTP/1.1 ",
        b"\0",
    ])
    .prop_map(<[u8]>::to_vec);
    let strategy = prop_oneof![hostile_bytes(b"HTTP/1.0 20:\r\n", 256), harness::mutated(seeds, insert, 6)];
    harness::check("http_head", "arbitrary_bytes", 256, strategy, |bytes| {
        if let Ok(Some((status, framing, keep_alive, len))) = head_summary(&bytes) {
            prop_assert!(len <= bytes.len());
            // The head alone reads the same.
            prop_assert_eq!(head_summary(&bytes[..len]), Ok(Some((status, framing, keep_alive, len))));
        }
        Ok(())
    });
}

#[test]
fn fuzz_head_generated_heads_are_read_as_written() {
    let strategy = (gen_head(), vec(any::<u8>(), 0..32));
    harness::check("http_head", "generated_heads", 256, strategy, |(head, body)| {
        let wire = head.wire();
        let mut with_body = wire.clone();
        with_body.extend_from_slice(&body);
        let got = head_summary(&with_body);
        match head.expected() {
            Some((status, framing, keep_alive)) => {
                prop_assert_eq!(
                    got,
                    Ok(Some((status, framing, keep_alive, wire.len()))),
                    "{:?}",
                    String::from_utf8_lossy(&wire)
                );
            }
            None => prop_assert!(got.is_err(), "{:?} accepted", String::from_utf8_lossy(&wire)),
        }
        // Until the head is complete, the parser asks for more.
        for cut in 0..wire.len() {
            prop_assert_eq!(head_summary(&wire[..cut]), Ok(None), "cut at {}", cut);
        }
        Ok(())
    });
}

#[test]
fn corpus_http_head_replays() {
    for (name, bytes) in harness::corpus("http_head") {
        let whole = head_summary(&bytes);
        if let Ok(Some((.., len))) = whole {
            for cut in 0..len {
                assert_eq!(head_summary(&bytes[..cut]), Ok(None), "{name} cut at {cut}");
            }
        }
    }
}

// ---------------------------------------------------------------- end to end

/// A response as the client reads it: head, then body framing, then SSE,
/// with reads falling anywhere.
#[test]
fn fuzz_chunked_sse_through_the_framing_gives_the_events() {
    #[derive(Debug, Clone, Copy)]
    enum Frame {
        Chunked,
        Length,
        UntilClose,
    }
    let frame = prop_oneof![Just(Frame::Chunked), Just(Frame::Length), Just(Frame::UntilClose)];
    let strategy = (sse_stream(), frame, vec(1usize..40, 1..12), vec(any::<Index>(), 0..10));
    harness::check("chunked", "sse_through_framing", 256, strategy, |(stream, frame, sizes, cuts)| {
        let sse = stream.wire();
        let mut wire = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n".to_vec();
        match frame {
            Frame::Chunked => {
                wire.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                let mut rest = &sse[..];
                for size in sizes.iter().cycle() {
                    if rest.is_empty() {
                        break;
                    }
                    let (chunk, tail) = rest.split_at((*size).min(rest.len()));
                    wire.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                    wire.extend_from_slice(chunk);
                    wire.extend_from_slice(b"\r\n");
                    rest = tail;
                }
                wire.extend_from_slice(b"0\r\n\r\n");
            }
            Frame::Length => {
                wire.extend_from_slice(format!("Content-Length: {}\r\n\r\n", sse.len()).as_bytes());
                wire.extend_from_slice(&sse);
            }
            Frame::UntilClose => {
                wire.extend_from_slice(b"Connection: close\r\n\r\n");
                wire.extend_from_slice(&sse);
            }
        }
        let cuts = cut_points(&cuts, wire.len());
        let mut buffer = Vec::new();
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        let mut body: Option<Body> = None;
        for piece in pieces(&wire, &cuts) {
            let input: Vec<u8> = match &mut body {
                Some(_) => piece.to_vec(),
                None => {
                    buffer.extend_from_slice(piece);
                    let Some((head, len)) =
                        parse_head(&buffer).map_err(|e| TestCaseError::fail(e.to_string()))?
                    else {
                        continue;
                    };
                    body = Some(head.body);
                    buffer[len..].to_vec()
                }
            };
            let Some(body) = &mut body else { continue };
            let used = body
                .decode(&input, |d| parser.feed(d, |e| events.push((e.event.to_vec(), e.data.to_vec()))))
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(used, input.len());
        }
        let body = body.ok_or_else(|| TestCaseError::fail("the head never completed"))?;
        prop_assert_eq!(body.is_complete(), !matches!(frame, Frame::UntilClose));
        prop_assert_eq!(&events, &stream.expected());
        prop_assert_eq!(&events, &feed_sse([&sse[..]]).0);
        Ok(())
    });
}
