//! Incremental decoder for HTTP/1.1 `Transfer-Encoding: chunked` bodies
//! (RFC 9112 §7.1). It keeps its place between reads, so the caller never
//! buffers: every read is decoded as it arrives, however the chunk framing
//! falls across reads.

/// Where the decoder is inside the chunked framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading the hex size; `digits` seen so far.
    Size {
        size: u64,
        digits: u8,
    },
    /// After the size: a chunk extension (ignored) up to the line end.
    Extension {
        size: u64,
    },
    /// Saw `\r` after the size line; expecting `\n`.
    SizeLf {
        size: u64,
    },
    Data {
        remaining: u64,
    },
    /// After the data: expecting `\r\n`.
    DataCr,
    DataLf,
    /// After the last (zero) chunk: trailer lines until an empty one.
    TrailerLineStart,
    TrailerLine,
    TrailerLf {
        empty_line: bool,
    },
    Done,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkedError(pub String);

impl std::fmt::Display for ChunkedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed chunked body: {}", self.0)
    }
}

#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        Self { state: State::Size { size: 0, digits: 0 } }
    }
}

impl ChunkedDecoder {
    /// The terminating zero chunk and its trailers have been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decodes `input`, handing each run of body bytes to `on_data`.
    /// Returns how many input bytes belonged to the body: all of them, unless
    /// the body ended inside `input`.
    pub fn decode(&mut self, input: &[u8], mut on_data: impl FnMut(&[u8])) -> Result<usize, ChunkedError> {
        let mut i = 0;
        while i < input.len() {
            let byte = input[i];
            self.state = match self.state {
                State::Size { size, digits } => match hex_value(byte) {
                    Some(v) => {
                        if digits >= 15 {
                            return Err(ChunkedError("chunk size has too many digits".into()));
                        }
                        State::Size { size: size * 16 + u64::from(v), digits: digits + 1 }
                    }
                    None if digits == 0 => {
                        return Err(ChunkedError(format!(
                            "expected a hex chunk size, got {:?}",
                            byte as char
                        )));
                    }
                    None => match byte {
                        b'\r' => State::SizeLf { size },
                        b'\n' => Self::after_size_line(size),
                        b';' | b' ' | b'\t' => State::Extension { size },
                        _ => {
                            return Err(ChunkedError(format!(
                                "unexpected {:?} after the chunk size",
                                byte as char
                            )));
                        }
                    },
                },
                State::Extension { size } => match byte {
                    b'\r' => State::SizeLf { size },
                    b'\n' => Self::after_size_line(size),
                    _ => State::Extension { size },
                },
                State::SizeLf { size } => {
                    if byte != b'\n' {
                        return Err(ChunkedError("chunk size line not ended by CRLF".into()));
                    }
                    Self::after_size_line(size)
                }
                State::Data { remaining } => {
                    let available = (input.len() - i) as u64;
                    let take = remaining.min(available) as usize;
                    on_data(&input[i..i + take]);
                    i += take;
                    let left = remaining - take as u64;
                    self.state = if left == 0 { State::DataCr } else { State::Data { remaining: left } };
                    continue;
                }
                State::DataCr => match byte {
                    b'\r' => State::DataLf,
                    b'\n' => State::Size { size: 0, digits: 0 },
                    _ => return Err(ChunkedError("chunk data longer than its size".into())),
                },
                State::DataLf => {
                    if byte != b'\n' {
                        return Err(ChunkedError("chunk data not ended by CRLF".into()));
                    }
                    State::Size { size: 0, digits: 0 }
                }
                State::TrailerLineStart => match byte {
                    b'\r' => State::TrailerLf { empty_line: true },
                    b'\n' => State::Done,
                    _ => State::TrailerLine,
                },
                State::TrailerLine => match byte {
                    b'\r' => State::TrailerLf { empty_line: false },
                    b'\n' => State::TrailerLineStart,
                    _ => State::TrailerLine,
                },
                State::TrailerLf { empty_line } => {
                    if byte != b'\n' {
                        return Err(ChunkedError("trailer line not ended by CRLF".into()));
                    }
                    if empty_line { State::Done } else { State::TrailerLineStart }
                }
                State::Done => return Ok(i),
            };
            i += 1;
        }
        Ok(i)
    }

    fn after_size_line(size: u64) -> State {
        if size == 0 { State::TrailerLineStart } else { State::Data { remaining: size } }
    }
}

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `wire` fed in pieces of `step` bytes.
    fn decode_in_steps(wire: &[u8], step: usize) -> (Result<Vec<u8>, ChunkedError>, bool, usize) {
        let mut decoder = ChunkedDecoder::default();
        let mut out = Vec::new();
        let mut consumed = 0;
        for piece in wire.chunks(step) {
            match decoder.decode(piece, |d| out.extend_from_slice(d)) {
                Ok(n) => consumed += n,
                Err(e) => return (Err(e), decoder.is_done(), consumed),
            }
            if decoder.is_done() {
                break;
            }
        }
        (Ok(out), decoder.is_done(), consumed)
    }

    #[test]
    fn decodes_across_every_split() {
        let wire =
            b"7\r\ndata: a\r\n1A;name=value\r\n0123456789abcdefghijklmnop\r\n0\r\nX-Trailer: 1\r\n\r\n";
        for step in 1..=wire.len() {
            let (out, done, consumed) = decode_in_steps(wire, step);
            assert_eq!(out.unwrap(), b"data: a0123456789abcdefghijklmnop", "step {step}");
            assert!(done, "step {step}");
            assert_eq!(consumed, wire.len(), "step {step}");
        }
    }

    #[test]
    fn stops_at_the_end_of_the_body() {
        let mut decoder = ChunkedDecoder::default();
        let mut out = Vec::new();
        let n = decoder.decode(b"2\r\nhi\r\n0\r\n\r\nHTTP/1.1 200", |d| out.extend_from_slice(d)).unwrap();
        assert_eq!(n, 12);
        assert!(decoder.is_done());
        assert_eq!(out, b"hi");
    }

    #[test]
    fn bare_lf_line_ends_are_tolerated() {
        let (out, done, _) = decode_in_steps(b"3\nabc\n0\n\n", 2);
        assert_eq!(out.unwrap(), b"abc");
        assert!(done);
    }

    #[test]
    fn an_unfinished_body_is_not_done() {
        let (out, done, _) = decode_in_steps(b"5\r\nabc", 1);
        assert_eq!(out.unwrap(), b"abc");
        assert!(!done);
    }

    #[test]
    fn malformed_framing_is_an_error() {
        for wire in [&b"zz\r\n"[..], b"3\r\nabcd\r\n", b"3\r\nabc\rx", b"1234567890abcdef0\r\n", b"3\rx"] {
            let (out, _, _) = decode_in_steps(wire, 1);
            assert!(out.is_err(), "{:?} should fail", String::from_utf8_lossy(wire));
        }
    }
}
