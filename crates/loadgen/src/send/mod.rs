//! How it is sent: endpoints and request bodies, the load generator's own
//! HTTP/1.1 client, and sending each request on time.

pub(crate) mod agents;
pub(crate) mod client;
pub(crate) mod conversation;
pub(crate) mod http;
pub(crate) mod liveness;
pub(crate) mod pacer;
pub(crate) mod prepare;
pub(crate) mod sender;
