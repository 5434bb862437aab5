//! Incremental Server-Sent Events parser.
//!
//! Bytes are fed as they arrive from the socket; an event may be split across
//! reads and one read may hold several events. Line endings may be `\n`,
//! `\r\n` or `\r` (also split across reads). Buffers are reused, so steady
//! state parsing does not allocate.

/// One dispatched event. `data` is the `data:` lines joined with `\n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` field, empty when absent.
    pub event: &'a [u8],
    pub data: &'a [u8],
}

#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of a line that started in an earlier read.
    partial_line: Vec<u8>,
    data: Vec<u8>,
    event: Vec<u8>,
    /// A `data:` field was seen in the current event (data may be empty).
    has_data: bool,
    /// The previous read ended with `\r`; a leading `\n` belongs to it.
    skip_lf: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next bytes of the stream and calls `on_event` for every
    /// event completed by them.
    pub fn feed(&mut self, mut bytes: &[u8], mut on_event: impl FnMut(SseEvent<'_>)) {
        if bytes.is_empty() {
            return;
        }
        if self.skip_lf {
            self.skip_lf = false;
            if let Some((b'\n', rest)) = bytes.split_first() {
                bytes = rest;
            }
        }
        while !bytes.is_empty() {
            let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) else {
                self.partial_line.extend_from_slice(bytes);
                return;
            };
            let line_part = &bytes[..end];
            let after = if bytes[end] == b'\r' {
                match bytes.get(end + 1) {
                    Some(b'\n') => end + 2,
                    Some(_) => end + 1,
                    None => {
                        self.skip_lf = true;
                        end + 1
                    }
                }
            } else {
                end + 1
            };
            if self.partial_line.is_empty() {
                self.line(line_part, &mut on_event);
            } else {
                let mut line = std::mem::take(&mut self.partial_line);
                line.extend_from_slice(line_part);
                self.line(&line, &mut on_event);
                line.clear();
                self.partial_line = line;
            }
            bytes = &bytes[after..];
        }
    }

    /// Bytes buffered for an unfinished line or event (non-zero at end of
    /// stream means the last event was cut off).
    pub fn pending_bytes(&self) -> usize {
        self.partial_line.len() + self.data.len() + usize::from(self.has_data)
    }

    fn line(&mut self, line: &[u8], on_event: &mut impl FnMut(SseEvent<'_>)) {
        if line.is_empty() {
            if self.has_data {
                on_event(SseEvent { event: &self.event, data: &self.data });
            }
            self.data.clear();
            self.event.clear();
            self.has_data = false;
            return;
        }
        if line[0] == b':' {
            return; // comment / keep-alive
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
            }
            _ => {} // id, retry and unknown fields do not matter here
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(parser: &mut SseParser, parts: &[&[u8]]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for part in parts {
            parser.feed(part, |e| {
                out.push((
                    String::from_utf8_lossy(e.event).into_owned(),
                    String::from_utf8_lossy(e.data).into_owned(),
                ))
            });
        }
        out
    }

    const STREAM: &[u8] = b": keep-alive\r\n\r\ndata: {\"a\":1}\n\nevent: response.output_text.delta\r\ndata: {\"delta\":\"x\"}\r\n\r\ndata: line1\ndata: line2\n\nid: 7\nretry: 10\ndata:nospace\r\rdata: [DONE]\n\n";

    fn expected() -> Vec<(String, String)> {
        vec![
            ("".into(), "{\"a\":1}".into()),
            ("response.output_text.delta".into(), "{\"delta\":\"x\"}".into()),
            ("".into(), "line1\nline2".into()),
            ("".into(), "nospace".into()),
            ("".into(), "[DONE]".into()),
        ]
    }

    #[test]
    fn whole_stream_in_one_read() {
        let mut p = SseParser::new();
        assert_eq!(collect(&mut p, &[STREAM]), expected());
        assert_eq!(p.pending_bytes(), 0);
    }

    #[test]
    fn split_at_every_byte_offset() {
        for cut in 0..=STREAM.len() {
            let mut p = SseParser::new();
            let got = collect(&mut p, &[&STREAM[..cut], &STREAM[cut..]]);
            assert_eq!(got, expected(), "split at {cut}");
        }
    }

    #[test]
    fn split_at_every_pair_of_offsets() {
        for a in 0..=STREAM.len() {
            for b in a..=STREAM.len() {
                let mut p = SseParser::new();
                let got = collect(&mut p, &[&STREAM[..a], &STREAM[a..b], &STREAM[b..]]);
                assert_eq!(got, expected(), "split at {a},{b}");
            }
        }
    }

    #[test]
    fn one_byte_per_read() {
        let parts: Vec<&[u8]> = STREAM.chunks(1).collect();
        let mut p = SseParser::new();
        assert_eq!(collect(&mut p, &parts), expected());
    }

    #[test]
    fn cut_off_event_is_reported_as_pending() {
        let mut p = SseParser::new();
        let got = collect(&mut p, &[b"data: {\"a\":1}\n\ndata: {\"b\""]);
        assert_eq!(got.len(), 1);
        assert!(p.pending_bytes() > 0);
        let mut q = SseParser::new();
        collect(&mut q, &[b"data: x\n"]);
        assert!(q.pending_bytes() > 0, "data line without blank line is unfinished");
    }

    #[test]
    fn event_name_resets_between_events() {
        let mut p = SseParser::new();
        let got = collect(&mut p, &[b"event: a\ndata: 1\n\ndata: 2\n\n"]);
        assert_eq!(got, vec![("a".into(), "1".into()), ("".into(), "2".into())]);
    }
}
