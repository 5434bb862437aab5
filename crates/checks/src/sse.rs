//! A small Server-Sent Events reader. Written here on purpose: the checks
//! must not share framing code with the sim or the load generator, so a
//! framing mistake in one cannot hide behind the same mistake in another.

/// One dispatched event: its `event:` name (if any) and its `data:` lines
/// joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

/// Incremental parser: feed bytes as they arrive, get whole events back.
#[derive(Debug, Default)]
pub struct SseParser {
    pending: Vec<u8>,
    /// Start of the first line in `pending` not yet seen to be complete.
    line_start: usize,
}

impl SseParser {
    /// Append `bytes` and return every event they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(offset) = self.pending[self.line_start..].iter().position(|&b| b == b'\n') {
            let line_end = self.line_start + offset;
            let line = &self.pending[self.line_start..line_end];
            if line.is_empty() || line == b"\r" {
                // A blank line ends the event.
                let block: Vec<u8> = self.pending.drain(..=line_end).collect();
                self.line_start = 0;
                if let Some(event) = parse_block(&block) {
                    events.push(event);
                }
            } else {
                self.line_start = line_end + 1;
            }
        }
        events
    }

    /// Bytes after the last complete event that are not just whitespace
    /// (a stream cut in the middle of an event).
    pub fn partial(&self) -> Option<String> {
        let rest = String::from_utf8_lossy(&self.pending);
        (!rest.trim().is_empty()).then(|| rest.into_owned())
    }
}

/// Parse the lines of one event block; `None` when it carries no data
/// (comments only, or stray blank lines), which SSE does not dispatch.
fn parse_block(block: &[u8]) -> Option<SseEvent> {
    let text = String::from_utf8_lossy(block);
    let mut event = None;
    let mut data: Option<String> = None;
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event = Some(value.to_owned()),
            "data" => match &mut data {
                Some(joined) => {
                    joined.push('\n');
                    joined.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            _ => {} // id, retry and unknown fields do not matter here
        }
    }
    data.map(|data| SseEvent { event, data })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(text: &str) -> SseEvent {
        SseEvent { event: None, data: text.into() }
    }

    #[test]
    fn events_split_across_pushes() {
        let mut parser = SseParser::default();
        assert!(parser.push(b"data: {\"a\"").is_empty());
        assert_eq!(parser.partial().as_deref(), Some("data: {\"a\""));
        assert_eq!(parser.push(b":1}\n\ndata: [DO"), vec![data("{\"a\":1}")]);
        assert_eq!(parser.push(b"NE]\n"), vec![]);
        assert_eq!(parser.push(b"\n"), vec![data("[DONE]")]);
        assert_eq!(parser.partial(), None);
    }

    #[test]
    fn named_events_crlf_comments_and_multiline_data() {
        let mut parser = SseParser::default();
        let events =
            parser.push(b": keep-alive\r\n\r\nevent: response.completed\r\ndata: one\r\ndata:two\r\n\r\n");
        assert_eq!(
            events,
            vec![SseEvent { event: Some("response.completed".into()), data: "one\ntwo".into() }]
        );
    }

    #[test]
    fn one_byte_at_a_time() {
        let body = b"data: x\n\nevent: e\ndata: y\n\n";
        let mut parser = SseParser::default();
        let events: Vec<SseEvent> = body.iter().flat_map(|b| parser.push(&[*b])).collect();
        assert_eq!(events, vec![data("x"), SseEvent { event: Some("e".into()), data: "y".into() }]);
    }
}
