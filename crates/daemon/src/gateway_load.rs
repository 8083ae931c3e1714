//! How many IKE SAs each gateway a connection redirects to holds
//! (`redirect_to` with `redirect_load`, RFC 5685): a thread asks each
//! gateway's vici socket for `stats` once a second, as `swanctl --stats`
//! would, and hands the `ikesas.total` it reads to the control loop,
//! which tells the IKE core (`Ike::set_gateway_load`): a new client goes
//! to the least loaded. A gateway that does not answer keeps its last
//! count. strongSwan and flowsec back gateways answer alike.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use flowsec_ike::config::Connection;
use flowsec_ike::GatewayId;
use flowsec_wire::vici::{frame_len_up_to, Packet, PacketType, Section, LENGTH_LEN};

/// How often each gateway is asked.
const EVERY: Duration = Duration::from_secs(1);
/// How long one answer may take.
const WAIT: Duration = Duration::from_millis(500);
/// The largest `stats` answer read (strongSwan's is a few hundred bytes).
const MAX_STATS: usize = 64 * 1024;

/// The gateways to watch: each `redirect_to` gateway with its vici
/// socket path, across `conns`, once each.
pub fn watched<'a>(conns: impl Iterator<Item = &'a Connection>) -> Vec<(GatewayId, String)> {
    let mut out: Vec<(GatewayId, String)> = Vec::new();
    for c in conns {
        for (gw, uri) in c.redirect_to.iter().zip(&c.redirect_load) {
            let path = uri.strip_prefix("unix://").unwrap_or(uri).to_string();
            if !out.iter().any(|(g, p)| g == gw && *p == path) {
                out.push((gw.clone(), path));
            }
        }
    }
    out
}

/// The thread that asks, and what it read; the thread ends when this is
/// dropped (it checks once a round).
pub struct LoadWatch {
    /// What it watches.
    pub gateways: Vec<(GatewayId, String)>,
    rx: mpsc::Receiver<(GatewayId, u64)>,
    stop: Arc<AtomicBool>,
}

impl Drop for LoadWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl LoadWatch {
    /// Start asking `gateways`.
    pub fn start(gateways: Vec<(GatewayId, String)>) -> LoadWatch {
        let (tx, rx) = mpsc::channel();
        let watched = gateways.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let spawned = std::thread::Builder::new()
            .name("flowsec-load".into())
            .spawn(move || loop {
                if stopped.load(Ordering::Relaxed) {
                    return;
                }
                for (gw, path) in &watched {
                    if let Some(n) = ike_sas(path) {
                        if tx.send((gw.clone(), n)).is_err() {
                            return;
                        }
                    }
                }
                std::thread::sleep(EVERY);
            });
        if let Err(e) = spawned {
            tracing::warn!(target: "net", "redirect_load: no thread ({e}): new clients go round the gateways");
        }
        LoadWatch { gateways, rx, stop }
    }

    /// The counts read since the last call.
    pub fn take(&self) -> Vec<(GatewayId, u64)> {
        self.rx.try_iter().collect()
    }
}

/// `ikesas.total` of the vici `stats` answer at `path`.
fn ike_sas(path: &str) -> Option<u64> {
    let mut s = UnixStream::connect(path).ok()?;
    s.set_read_timeout(Some(WAIT)).ok()?;
    s.set_write_timeout(Some(WAIT)).ok()?;
    let request = Packet {
        ty: PacketType::CmdRequest,
        name: Some("stats".into()),
        message: Some(Section::default()),
    };
    s.write_all(&request.emit().ok()?).ok()?;
    let mut head = [0u8; LENGTH_LEN];
    s.read_exact(&mut head).ok()?;
    let n = frame_len_up_to(&head, MAX_STATS)?.ok()?;
    let mut body = vec![0u8; n];
    s.read_exact(&mut body).ok()?;
    let answer = Packet::parse_up_to(&body, MAX_STATS).ok()?;
    if answer.ty != PacketType::CmdResponse {
        return None;
    }
    match answer.message?.get("ikesas")? {
        flowsec_wire::vici::Value::Section(ikesas) => ikesas.str("total")?.parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vici `stats` server that answers with strongSwan's captured
    /// answer: the count is read from it.
    #[test]
    fn the_count_comes_from_a_stats_answer() {
        let dir = std::env::temp_dir().join(format!("flowsec-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("vici");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let (mut c, _) = listener.accept().unwrap();
            let mut head = [0u8; LENGTH_LEN];
            c.read_exact(&mut head).unwrap();
            let n = frame_len_up_to(&head, MAX_STATS).unwrap().unwrap();
            let mut body = vec![0u8; n];
            c.read_exact(&mut body).unwrap();
            let asked = Packet::parse(&body).unwrap();
            assert_eq!(asked.name.as_deref(), Some("stats"));
            let ikesas = Section::default().with("total", "7").with("half-open", "1");
            let answer = Packet {
                ty: PacketType::CmdResponse,
                name: None,
                message: Some(Section::default().with_section("ikesas", ikesas)),
            };
            c.write_all(&answer.emit().unwrap()).unwrap();
        });
        assert_eq!(ike_sas(path.to_str().unwrap()), Some(7));
        server.join().unwrap();
        assert_eq!(ike_sas(dir.join("none").to_str().unwrap()), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
