//! systemd's readiness protocol (sd_notify(3)): `flowsec up` under a
//! `Type=notify` unit (contrib/flowsec.service) says READY=1 once it
//! serves, RELOADING=1 and READY=1 around a reload, STOPPING=1 when it
//! goes. Without `$NOTIFY_SOCKET` (not under systemd) nothing is sent.

use std::os::unix::net::UnixDatagram;

/// Send `state` (lines of `KEY=VALUE`) to `$NOTIFY_SOCKET`, a path or an
/// abstract name (`@…`); failures are ignored, as sd_notify's callers do:
/// a daemon does not stop because its supervisor did not hear.
pub fn sd_notify(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let Ok(sock) = UnixDatagram::unbound() else {
        return;
    };
    let bytes = path.as_encoded_bytes();
    let addr = match bytes.strip_prefix(b"@") {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            std::os::unix::net::SocketAddr::from_abstract_name(name)
        }
        None => std::os::unix::net::SocketAddr::from_pathname(&path),
    };
    if let Ok(addr) = addr {
        let _ = sock.send_to_addr(state.as_bytes(), &addr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What systemd would read: one datagram with the state.
    #[test]
    fn the_state_reaches_the_notify_socket() {
        let dir = std::env::temp_dir().join(format!("flowsec-notify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify");
        let listener = UnixDatagram::bind(&path).unwrap();
        // SAFETY (of the test): no other test of this binary reads
        // NOTIFY_SOCKET.
        std::env::set_var("NOTIFY_SOCKET", &path);
        sd_notify("READY=1\nSTATUS=up");
        std::env::remove_var("NOTIFY_SOCKET");
        let mut buf = [0u8; 64];
        let n = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1\nSTATUS=up");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
