//! The response side of HTTP/1.1: the head (parsed with `httparse`) and how
//! its body is framed.

use super::chunked::{ChunkedDecoder, ChunkedError};

/// Most header lines a response may carry.
const MAX_HEADERS: usize = 64;

#[derive(Debug)]
pub struct Head {
    pub status: u16,
    pub body: Body,
    /// The connection may carry another request after this response.
    pub keep_alive: bool,
}

/// Why a response head cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    #[error("malformed HTTP response head: {0}")]
    Malformed(httparse::Error),
    #[error("malformed Content-Length {0:?}")]
    ContentLength(String),
}

/// How the body's end is found.
#[derive(Debug)]
pub enum Body {
    Chunked(ChunkedDecoder),
    Length {
        remaining: u64,
    },
    /// No framing: the body ends when the server closes the connection.
    UntilClose,
}

/// Parses a response head from the start of `bytes`: `Ok(None)` until the
/// head is complete, then the head and its length in bytes. Informational
/// (1xx) responses before the real one are skipped.
pub fn parse_head(bytes: &[u8]) -> Result<Option<(Head, usize)>, HeadError> {
    let mut offset = 0;
    loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        let length = match response.parse(&bytes[offset..]) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(HeadError::Malformed(e)),
        };
        let status = response.code.unwrap_or(0);
        if (100..200).contains(&status) && status != 101 {
            offset += length;
            continue;
        }
        let http_11 = response.version == Some(1);
        let mut chunked = false;
        let mut content_length = None;
        let mut keep_alive = http_11;
        for header in response.headers.iter() {
            let value = String::from_utf8_lossy(header.value);
            let value = value.trim();
            if header.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked =
                    value.rsplit(',').next().is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
            } else if header.name.eq_ignore_ascii_case("content-length") {
                let n = value.parse::<u64>().map_err(|_| HeadError::ContentLength(value.to_owned()))?;
                content_length = Some(n);
            } else if header.name.eq_ignore_ascii_case("connection") {
                for token in value.split(',').map(str::trim) {
                    if token.eq_ignore_ascii_case("close") {
                        keep_alive = false;
                    } else if token.eq_ignore_ascii_case("keep-alive") {
                        keep_alive = true;
                    }
                }
            }
        }
        // RFC 9112 §6.3: chunked wins over Content-Length; 204 and 304 have no body.
        let body = if status == 204 || status == 304 {
            Body::Length { remaining: 0 }
        } else if chunked {
            Body::Chunked(ChunkedDecoder::default())
        } else if let Some(n) = content_length {
            Body::Length { remaining: n }
        } else {
            keep_alive = false;
            Body::UntilClose
        };
        return Ok(Some((Head { status, body, keep_alive }, offset + length)));
    }
}

impl Body {
    /// Decodes the body bytes at the start of `input`, handing them to
    /// `on_data`; returns how many bytes of `input` were body.
    pub fn decode(&mut self, input: &[u8], mut on_data: impl FnMut(&[u8])) -> Result<usize, ChunkedError> {
        match self {
            Body::Chunked(decoder) => decoder.decode(input, on_data),
            Body::Length { remaining } => {
                let take = (*remaining).min(input.len() as u64) as usize;
                if take > 0 {
                    on_data(&input[..take]);
                }
                *remaining -= take as u64;
                Ok(take)
            }
            Body::UntilClose => {
                if !input.is_empty() {
                    on_data(input);
                }
                Ok(input.len())
            }
        }
    }

    /// The body has ended by its own framing.
    pub fn is_complete(&self) -> bool {
        match self {
            Body::Chunked(decoder) => decoder.is_done(),
            Body::Length { remaining } => *remaining == 0,
            Body::UntilClose => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(wire: &str) -> (Head, usize) {
        parse_head(wire.as_bytes()).unwrap().expect("complete head")
    }

    #[test]
    fn partial_heads_wait_for_more() {
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Ty").unwrap().is_none());
    }

    #[test]
    fn framing_and_keep_alive() {
        let (h, n) = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n");
        assert_eq!((h.status, h.keep_alive, n), (200, true, 47));
        assert!(matches!(h.body, Body::Chunked(_)));

        let (h, _) = head("HTTP/1.1 500 Oops\r\nContent-Length: 12\r\nConnection: close\r\n\r\n");
        assert!(matches!(h.body, Body::Length { remaining: 12 }));
        assert!(!h.keep_alive);

        let (h, _) = head("HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n");
        assert!(matches!(h.body, Body::UntilClose));
        assert!(!h.keep_alive);

        let (h, _) = head("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
        assert!(matches!(h.body, Body::Chunked(_)), "chunked wins over a length");
    }

    #[test]
    fn informational_responses_are_skipped() {
        let wire = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        let (h, n) = head(wire);
        assert_eq!((h.status, n), (200, wire.len()));
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(parse_head(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: many\r\n\r\n").is_err());
    }

    #[test]
    fn a_length_body_stops_at_its_length() {
        let mut body = Body::Length { remaining: 4 };
        let mut seen = Vec::new();
        assert_eq!(body.decode(b"abcdef", |d| seen.extend_from_slice(d)).unwrap(), 4);
        assert_eq!(seen, b"abcd");
        assert!(body.is_complete());
    }
}
