//! The control socket (`/run/flowsec/flowsec.sock`, mode 0600): one JSON
//! request line in, one JSON document out, then close. The worker answers
//! between packet batches, so the databases need no lock.
//!
//! Requests: `{"cmd":"status"}`, `{"cmd":"sas"}`, `{"cmd":"policies"}`,
//! `{"cmd":"stats"}`.

use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use flowsec_ipsec::spd::Action;
use flowsec_ipsec::SaState;
use serde_json::{json, Value};

use crate::apply::Databases;
use crate::worker::Stats;

/// Where `flowsec up` listens unless told otherwise.
pub const DEFAULT_SOCKET: &str = "/run/flowsec/flowsec.sock";
/// The longest request accepted (a request is one small JSON object).
const MAX_REQUEST: usize = 4096;
/// How long a client may take to send its request, or to take the answer.
const REQUEST_WAIT: Duration = Duration::from_millis(200);

/// The listening socket; the file is removed when this is dropped.
pub struct Control {
    listener: UnixListener,
    path: PathBuf,
}

impl Control {
    /// Listen on `path` (its directory is created; a stale socket file
    /// from a dead daemon is replaced, a live one is refused).
    pub fn bind(path: &Path) -> Result<Control, String> {
        let err = |e: std::io::Error| format!("{}: {e}", path.display());
        if let Some(dir) = path.parent() {
            if !dir.exists() {
                std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                // Only root may reach the socket, also in the instant
                // between bind and chmod.
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                    .map_err(|e| format!("{}: {e}", dir.display()))?;
            }
        }
        match UnixStream::connect(path) {
            Ok(_) => {
                return Err(format!(
                    "{}: another flowsec daemon is listening there (use --socket)",
                    path.display()
                ))
            }
            // A socket file nobody listens on: left by a daemon that died.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                let is_socket = std::fs::symlink_metadata(path)
                    .map(|m| m.file_type().is_socket())
                    .unwrap_or(false);
                if !is_socket {
                    return Err(format!("{}: exists and is not a socket", path.display()));
                }
                std::fs::remove_file(path).map_err(err)?;
            }
            Err(_) => {}
        }
        let listener = UnixListener::bind(path).map_err(err)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(err)?;
        listener.set_nonblocking(true).map_err(err)?;
        Ok(Control {
            listener,
            path: path.to_path_buf(),
        })
    }

    /// The listening descriptor, for the worker's poll.
    pub fn listener(&self) -> &UnixListener {
        &self.listener
    }

    /// Answer every waiting client. A request is one small line sent at
    /// once: it gets [`REQUEST_WAIT`] to arrive, so that no client can hold
    /// the worker longer than that.
    pub fn serve(&self, status: &Status<'_>) {
        while let Ok((mut stream, _)) = self.listener.accept() {
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_read_timeout(Some(REQUEST_WAIT));
            let _ = stream.set_write_timeout(Some(REQUEST_WAIT));
            let mut request = [0u8; MAX_REQUEST];
            let reply = match stream.read(&mut request) {
                Ok(n) => match std::str::from_utf8(&request[..n]) {
                    Ok(line) => answer(line, status),
                    Err(_) => json!({"error": "request is not UTF-8"}),
                },
                Err(e) => json!({"error": format!("reading the request: {e}")}),
            };
            let _ = stream.write_all(format!("{reply}\n").as_bytes());
        }
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What a request can look at.
pub struct Status<'a> {
    /// TUN device name.
    pub tun: &'a str,
    /// Seconds since start.
    pub now: Duration,
    /// The databases.
    pub db: &'a Databases,
    /// The counters.
    pub stats: &'a Stats,
}

fn answer(line: &str, s: &Status<'_>) -> Value {
    let request: Value = match serde_json::from_str(line.trim()) {
        Ok(v) => v,
        Err(e) => return json!({"error": format!("bad request: {e}")}),
    };
    match request.get("cmd").and_then(Value::as_str) {
        Some("status") => json!({
            "tun": s.tun,
            "uptime_s": s.now.as_secs_f64(),
            "workers": 1,
            "sas": s.db.sad.len(),
            "policies": s.db.spd.len(),
        }),
        Some("sas") => Value::Array(s.db.sad.iter().map(|sa| sa_json(sa, s.now)).collect()),
        Some("policies") => Value::Array(s.db.spd.iter().map(policy_json).collect()),
        Some("stats") => stats_json(s.stats),
        Some(other) => {
            json!({"error": format!("unknown command '{other}' (status, sas, policies, stats)")})
        }
        None => json!({"error": "missing \"cmd\""}),
    }
}

fn sa_json(sa: &flowsec_ipsec::SecurityAssociation, now: Duration) -> Value {
    let usage = sa.usage();
    let stats = sa.stats();
    let state = match sa.state(now) {
        SaState::Mature => "installed",
        SaState::Dying => "dying",
        SaState::Expired => "expired",
    };
    json!({
        "protocol": sa.id().protocol.to_string(),
        "spi": format!("{:08x}", sa.id().spi),
        "mode": sa.mode().to_string(),
        "src": sa.src().to_string(),
        "dst": sa.dst().to_string(),
        "encap": sa.encap().map(|e| json!({"sport": e.src_port, "dport": e.dst_port})),
        "encr": sa.encr().to_string(),
        "integ": sa.integ().to_string(),
        "esn": sa.esn(),
        "reqid": sa.reqid(),
        "state": state,
        "bytes": usage.bytes,
        "packets": usage.packets,
        "seq": sa.seq(),
        "replay_window": sa.replay_window().size(),
        "replay_drops": stats.replay_drops,
        "auth_failures": stats.auth_failures,
        "other_drops": stats.other_drops,
        "age_s": now.saturating_sub(usage.added).as_secs(),
        "last_use_s": usage.first_use.map(|t| now.saturating_sub(t).as_secs()),
    })
}

fn policy_json(p: &flowsec_ipsec::Policy) -> Value {
    let action = match &p.action {
        Action::Bypass => json!("none"),
        Action::Discard => json!("discard"),
        Action::Protect(t) => json!(t
            .iter()
            .map(flowsec_setkey::format_rule)
            .collect::<Vec<_>>()),
    };
    json!({
        "direction": p.direction.to_string(),
        "src": p.selector.src.to_string(),
        "dst": p.selector.dst.to_string(),
        "protocol": p.selector.protocol,
        "priority": p.priority,
        "action": action,
        "setkey": flowsec_setkey::format_policy(p).trim_end(),
    })
}

fn stats_json(stats: &Stats) -> Value {
    let drops: serde_json::Map<String, Value> = stats
        .drops
        .nonzero()
        .map(|(reason, n)| (reason.name().to_string(), json!(n)))
        .collect();
    json!({
        "workers": [{
            "sent": stats.sent,
            "delivered": stats.delivered,
            "no_policy": stats.no_policy,
            "bypass_on_tun": stats.bypass_on_tun,
            "unsupported_outer": stats.unsupported_outer,
            "io_errors": stats.io_errors,
            "drops": drops,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use flowsec_crypto::{EncrId, Provider};
    use flowsec_ipsec::{Mode, SaConfig, SecurityAssociation};

    fn add_one_sa(db: &mut Databases) {
        let c = SaConfig::esp(
            0x1001,
            Mode::Tunnel,
            "192.0.2.1".parse().unwrap(),
            "192.0.2.2".parse().unwrap(),
        )
        .with_encr(EncrId::AES_GCM_16, &[7; 20]);
        db.sad
            .add(SecurityAssociation::new(&c, &Provider::rustcrypto(), Duration::ZERO).unwrap())
            .unwrap();
    }

    #[test]
    fn requests_and_refusals() {
        let mut db = Databases::default();
        add_one_sa(&mut db);
        let stats = Stats::default();
        let s = Status {
            tun: "fs0",
            now: Duration::from_secs(5),
            db: &db,
            stats: &stats,
        };
        let status = answer(r#"{"cmd":"status"}"#, &s);
        assert_eq!(status["tun"], "fs0");
        assert_eq!(status["sas"], 1);
        let sas = answer("{\"cmd\":\"sas\"}\n", &s);
        assert_eq!(sas[0]["spi"], "00001001");
        assert_eq!(sas[0]["mode"], "tunnel");
        assert_eq!(sas[0]["age_s"], 5);
        assert!(
            sas[0].get("encr_key").is_none(),
            "no key material in answers"
        );
        assert!(answer("{", &s)["error"]
            .as_str()
            .unwrap()
            .starts_with("bad request"));
        assert!(answer(r#"{"cmd":"reboot"}"#, &s)["error"]
            .as_str()
            .unwrap()
            .contains("unknown command"));
        assert!(answer(r#"{}"#, &s)["error"].is_string());
        assert!(answer(r#"{"cmd":"stats"}"#, &s)["workers"].is_array());
    }

    #[test]
    fn a_live_socket_is_not_taken_over_and_the_file_goes_away() {
        let dir = std::env::temp_dir().join(format!("flowsec-ctl-{}", std::process::id()));
        let path = dir.join("sub").join("ctl.sock");
        let first = Control::bind(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(Control::bind(&path)
            .err()
            .unwrap()
            .contains("another flowsec daemon"));
        drop(first);
        assert!(!path.exists());
        // A plain file where the socket should be is not deleted.
        std::fs::write(&path, b"not a socket").unwrap();
        assert!(Control::bind(&path).err().unwrap().contains("not a socket"));
        assert!(path.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
