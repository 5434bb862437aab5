//! One request's bytes before framing: its body and its id.

/// What one request sends: its JSON body and the id its `X-Request-Id`
/// header gives it (so the server's log and the record can be joined).
#[derive(Debug, Clone, Copy)]
pub struct Payload<'a> {
    pub body: &'a [u8],
    pub request_id: Option<&'a str>,
}

impl<'a> Payload<'a> {
    pub fn body(body: &'a [u8]) -> Self {
        Self { body, request_id: None }
    }
}
