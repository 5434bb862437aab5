//! Picking a loopback port for a server.

use std::net::{Ipv4Addr, TcpListener};

/// A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it).
/// Another process could take it before the server binds; launches that
/// then fail show it in their log tail.
pub fn free_port() -> std::io::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}
