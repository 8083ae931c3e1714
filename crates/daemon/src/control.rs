//! The control socket (`/run/flowsec/flowsec.sock`, mode 0600). It
//! speaks vici, as `flowsec ctl` does (the connection goes to the vici
//! server: every vici command, and flowsec's own as `flowsec-*`), and
//! JSON for scripts: one request line in, one document out, then close.
//! Both carry the same types (`crate::answers`). The control plane, which
//! owns the socket, answers; this module is the socket and the answers'
//! making from the model.
//!
//! JSON requests: `{"cmd":"status"}`, `{"cmd":"sas"}`,
//! `{"cmd":"policies"}`, `{"cmd":"stats"}`, `{"cmd":"reload"}`,
//! `{"cmd":"setkey","name":N,"text":T}`, and with IKE
//! `{"cmd":"initiate"|"terminate"|"rekey","ike":NAME,"child":NAME}`.

use core::fmt;
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use flowsec_ipsec::spd::Action;
use flowsec_ipsec::{SaConfig, SaState};
use serde_json::{json, Value};
use zeroize::{Zeroize, Zeroizing};

use crate::answers::{self, Counters};
use crate::stats::{SaReport, Stats};
use crate::sys::privs::{self, PeerCred};

/// Where `flowsec up` listens unless told otherwise.
pub const DEFAULT_SOCKET: &str = "/run/flowsec/flowsec.sock";
/// The longest request accepted (a setkey file travels in one).
const MAX_REQUEST: usize = 1 << 20;
/// How long a client may take to send its request, or to take the answer.
const REQUEST_WAIT: Duration = Duration::from_millis(200);

/// Why the control socket could not be set up. Displays as `PATH: WHY`.
#[derive(Debug)]
#[non_exhaustive]
pub enum ControlError {
    /// The socket or its directory could not be made, given to the
    /// group, or set non-blocking.
    Io {
        /// The socket or its directory.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A daemon answers on the socket already.
    InUse {
        /// The socket.
        path: PathBuf,
    },
    /// The path exists and is no socket (not removed).
    NotASocket {
        /// The path.
        path: PathBuf,
    },
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControlError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            ControlError::InUse { path } => write!(
                f,
                "{}: another flowsec daemon is listening there (use --socket)",
                path.display()
            ),
            ControlError::NotASocket { path } => {
                write!(f, "{}: exists and is not a socket", path.display())
            }
        }
    }
}

impl std::error::Error for ControlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ControlError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Why `--ctl-group` names no group.
#[derive(Debug)]
#[non_exhaustive]
pub enum GroupError {
    /// /etc/group could not be read.
    Read(std::io::Error),
    /// No such name in /etc/group.
    Unknown {
        /// The name given.
        name: String,
    },
}

impl fmt::Display for GroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupError::Read(e) => write!(f, "/etc/group: {e}"),
            GroupError::Unknown { name } => write!(f, "no group {name:?} in /etc/group"),
        }
    }
}

impl std::error::Error for GroupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GroupError::Read(e) => Some(e),
            GroupError::Unknown { .. } => None,
        }
    }
}

/// Why a client's request was refused; the client reads it as
/// `{"error": TEXT}`.
#[derive(Debug)]
pub(crate) enum RequestError {
    /// The peer's credentials could not be had.
    PeerCred(std::io::Error),
    /// The peer is not root, the daemon's user or in `--ctl-group`.
    PermissionDenied { uid: u32, group: Option<u32> },
    /// The request did not arrive within [`REQUEST_WAIT`].
    TooSlow,
    /// Reading it failed.
    Read(std::io::Error),
    /// Longer than [`MAX_REQUEST`].
    TooLong,
    /// Not UTF-8.
    NotUtf8,
    /// Not JSON.
    BadJson(serde_json::Error),
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::PeerCred(e) => write!(f, "SO_PEERCRED: {e}"),
            RequestError::PermissionDenied { uid, group } => {
                write!(f, "permission denied: uid {uid} is not root")?;
                match group {
                    Some(g) => write!(f, " and not in group {g}"),
                    None => Ok(()),
                }
            }
            RequestError::TooSlow => f.write_str("request too slow"),
            RequestError::Read(e) => write!(f, "reading the request: {e}"),
            RequestError::TooLong => write!(f, "request longer than {MAX_REQUEST} bytes"),
            RequestError::NotUtf8 => f.write_str("request is not UTF-8"),
            RequestError::BadJson(e) => write!(f, "bad request: {e}"),
        }
    }
}

/// The listening socket; the file is removed when this is dropped.
pub struct Control {
    listener: UnixListener,
    path: PathBuf,
    /// Besides root (and the daemon's own user), members of this group
    /// may use the socket (`--ctl-group`).
    group: Option<u32>,
    /// Connections refused for their credentials.
    pub refused: u64,
    /// The socket file's inode: only that file is removed at the end (a
    /// daemon that took the path over since keeps its socket).
    inode: Option<(u64, u64)>,
}

impl Control {
    /// Listen on `path` (its directory is created; a stale socket file
    /// from a dead daemon is replaced, a live one is refused). The socket
    /// is created under umask 0177 (mode 0600, never wider, not even for an
    /// instant); with `group`, then given to that group, mode 0660.
    pub fn bind(path: &Path, group: Option<u32>) -> Result<Control, ControlError> {
        let at = |path: &Path| {
            let path = path.to_path_buf();
            move |error| ControlError::Io {
                path: path.clone(),
                error,
            }
        };
        let err = at(path);
        if let Some(dir) = path.parent() {
            if !dir.exists() {
                privs::with_umask(0o077, || std::fs::create_dir_all(dir)).map_err(at(dir))?;
                if let Some(gid) = group {
                    privs::chown(dir, u32::MAX, gid)
                        .and_then(|()| {
                            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o750))
                        })
                        .map_err(at(dir))?;
                }
            }
        }
        match UnixStream::connect(path) {
            Ok(_) => {
                return Err(ControlError::InUse {
                    path: path.to_path_buf(),
                })
            }
            // A socket file nobody listens on: left by a daemon that died.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                let is_socket = std::fs::symlink_metadata(path)
                    .map(|m| m.file_type().is_socket())
                    .unwrap_or(false);
                if !is_socket {
                    return Err(ControlError::NotASocket {
                        path: path.to_path_buf(),
                    });
                }
                std::fs::remove_file(path).map_err(err.clone())?;
            }
            Err(_) => {}
        }
        let listener =
            privs::with_umask(0o177, || UnixListener::bind(path)).map_err(err.clone())?;
        let control = Control {
            listener,
            path: path.to_path_buf(),
            group,
            refused: 0,
            inode: inode_of(path),
        };
        if let Some(gid) = group {
            privs::chown(path, u32::MAX, gid)
                .and_then(|()| {
                    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))
                })
                .map_err(err.clone())?;
        }
        control.listener.set_nonblocking(true).map_err(err)?;
        Ok(control)
    }

    /// Whether the peer of `stream` may talk to the daemon: root, the
    /// daemon's own user, or (with `--ctl-group`) a member of that group
    /// (its primary group or one of its supplementary groups, from
    /// /proc). The socket's mode says the same; this holds even where the
    /// file's permissions do not (a process with CAP_DAC_OVERRIDE, a
    /// socket directory made too wide by hand).
    pub(crate) fn allowed(&self, stream: &UnixStream) -> Result<(), RequestError> {
        use std::os::fd::AsRawFd;
        let cred = privs::peer_cred(stream.as_raw_fd()).map_err(RequestError::PeerCred)?;
        let own = std::fs::metadata("/proc/self").map(|m| {
            use std::os::unix::fs::MetadataExt;
            m.uid()
        });
        let groups = || supplementary_groups(cred.pid);
        if peer_allowed(cred, own.unwrap_or(0), self.group, groups) {
            Ok(())
        } else {
            Err(RequestError::PermissionDenied {
                uid: cred.uid,
                group: self.group,
            })
        }
    }

    /// The listening descriptor, for the control plane's poll.
    pub fn listener(&self) -> &UnixListener {
        &self.listener
    }

    /// Answer every waiting client. A client that speaks JSON (its
    /// first byte `{`: one request line of at most [`MAX_REQUEST`] bytes,
    /// in within [`REQUEST_WAIT`], so that no client holds the daemon
    /// longer) is answered with `answer`; one that speaks vici (a frame's
    /// length first: a zero byte for any frame under 16 MiB, which is
    /// every frame vici allows) is returned, its credentials checked, for
    /// the vici server to adopt (`flowsec ctl`).
    pub fn serve(&mut self, answer: &mut dyn FnMut(&Value) -> Value) -> Vec<UnixStream> {
        let mut vici = Vec::new();
        while let Ok((stream, _)) = self.listener.accept() {
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_read_timeout(Some(REQUEST_WAIT));
            let _ = stream.set_write_timeout(Some(REQUEST_WAIT));
            if speaks_vici(&stream) {
                match self.allowed(&stream) {
                    Ok(()) => vici.push(stream),
                    Err(e) => {
                        // Told why, as charon's failure, then closed.
                        self.refused += 1;
                        let why = flowsec_wire::vici::Packet {
                            ty: flowsec_wire::vici::PacketType::CmdResponse,
                            name: None,
                            message: Some(crate::vici::messages::failure(e)),
                        };
                        if let Ok(bytes) = why.emit() {
                            let _ = (&stream).write_all(&bytes);
                        }
                    }
                }
                continue;
            }
            // The request is read (bounded) before the refusal, so that the
            // client reads the reason instead of a broken pipe.
            let request = read_request(&stream);
            let reply = match self.allowed(&stream).and(request) {
                Ok(mut request) => {
                    let reply = answer(&request);
                    // A setkey request carries keys.
                    wipe_json(&mut request);
                    reply
                }
                Err(e) => {
                    if matches!(e, RequestError::PermissionDenied { .. }) {
                        self.refused += 1;
                    }
                    json!({ "error": e.to_string() })
                }
            };
            let _ = (&stream).write_all(format!("{reply}\n").as_bytes());
        }
        vici
    }
}

/// Whether the client on `stream` speaks vici: its first byte is the top
/// of a frame's 32-bit length, zero below 16 MiB (JSON starts with `{`).
fn speaks_vici(stream: &UnixStream) -> bool {
    use std::os::fd::AsFd;
    matches!(crate::sys::peek_byte(stream.as_fd()), Ok(Some(0)))
}

/// The access rule of [`Control::allowed`], apart from the system calls:
/// `groups` is asked only when the group decides.
fn peer_allowed(
    peer: PeerCred,
    own_uid: u32,
    group: Option<u32>,
    groups: impl FnOnce() -> Vec<u32>,
) -> bool {
    if peer.uid == 0 || peer.uid == own_uid {
        return true;
    }
    match group {
        Some(g) => peer.gid == g || groups().contains(&g),
        None => false,
    }
}

/// The supplementary groups of process `pid` (the `Groups:` line of its
/// /proc status); none if it cannot be read (it exited: refused).
fn supplementary_groups(pid: i32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("Groups:")).map(|g| {
                g.split_whitespace()
                    .filter_map(|n| n.parse().ok())
                    .collect()
            })
        })
        .unwrap_or_default()
}

/// A group given by name (looked up in /etc/group) or number.
pub fn group_id(name: &str) -> Result<u32, GroupError> {
    if let Ok(gid) = name.parse() {
        return Ok(gid);
    }
    let groups = std::fs::read_to_string("/etc/group").map_err(GroupError::Read)?;
    groups
        .lines()
        .filter_map(|l| {
            let mut f = l.split(':');
            Some((f.next()?, f.nth(1)?))
        })
        .find(|(n, _)| *n == name)
        .and_then(|(_, gid)| gid.parse().ok())
        .ok_or_else(|| GroupError::Unknown { name: name.into() })
}

/// Overwrite every string in `v` (setkey text with keys in it) before it
/// is dropped.
pub fn wipe_json(v: &mut Value) {
    match v {
        Value::String(s) => s.zeroize(),
        Value::Array(items) => items.iter_mut().for_each(wipe_json),
        Value::Object(map) => map.values_mut().for_each(wipe_json),
        _ => {}
    }
}

/// One request line from `stream`, parsed (the raw bytes are wiped).
fn read_request(stream: &UnixStream) -> Result<Value, RequestError> {
    let started = Instant::now();
    let mut line = Zeroizing::new(Vec::new());
    let mut chunk = [0u8; 16 * 1024];
    while !line.contains(&b'\n') {
        if started.elapsed() > REQUEST_WAIT {
            return Err(RequestError::TooSlow);
        }
        match (&*stream).read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => line.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(RequestError::Read(e)),
        }
        if line.len() > MAX_REQUEST {
            return Err(RequestError::TooLong);
        }
    }
    let text = std::str::from_utf8(&line).map_err(|_| RequestError::NotUtf8)?;
    serde_json::from_str(text.trim()).map_err(RequestError::BadJson)
}

/// The device and inode of the file at `path`.
fn inode_of(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

impl Drop for Control {
    fn drop(&mut self) {
        if self.inode.is_some() && inode_of(&self.path) == self.inode {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// `flowsec ctl sas`: each SA of the model with the live state of the
/// worker copy that carries its traffic.
pub fn sa_answer(config: &SaConfig, seen: &SaReport) -> answers::Sa {
    let live = &seen.live;
    let state = match live.state {
        SaState::Mature => "installed",
        SaState::Dying => "dying",
        SaState::Expired => "expired",
    };
    answers::Sa {
        protocol: config.protocol.to_string(),
        spi: format!("{:08x}", config.spi),
        mode: config.mode.to_string(),
        src: config.src.to_string(),
        dst: config.dst.to_string(),
        encap: config.encap.map(|e| answers::Encap {
            sport: e.src_port,
            dport: e.dst_port,
        }),
        encr: config.encr.to_string(),
        integ: config.integ.to_string(),
        esn: config.esn,
        reqid: config.reqid,
        cpu: config.cpu,
        worker: seen.worker,
        state: state.into(),
        bytes: live.bytes,
        packets: live.packets,
        seq: live.seq,
        replay_window: seen.replay_window,
        replay_drops: seen.stats.replay_drops,
        auth_failures: seen.stats.auth_failures,
        other_drops: seen.stats.other_drops,
        age_s: live.age.as_secs(),
        last_use_s: live.since_first_use.map(|t| t.as_secs()),
    }
}

/// `flowsec ctl policies`: one policy.
pub fn policy_answer(p: &flowsec_ipsec::Policy) -> answers::Policy {
    let action = match &p.action {
        Action::Bypass => answers::PolicyAction::Word("none".into()),
        Action::Discard => answers::PolicyAction::Word("discard".into()),
        Action::Protect(t) => {
            answers::PolicyAction::Rules(t.iter().map(flowsec_setkey::format_rule).collect())
        }
    };
    answers::Policy {
        direction: p.direction.to_string(),
        src: p.selector.src.to_string(),
        dst: p.selector.dst.to_string(),
        protocol: p.selector.protocol,
        priority: i64::from(p.priority),
        action,
        setkey: flowsec_setkey::format_policy(p).trim_end().to_string(),
    }
}

/// `flowsec ctl stats`: per worker, and the total.
pub fn stats_answer(workers: &[Stats]) -> answers::StatsAnswer {
    let one = |stats: &Stats| answers::WorkerCounters {
        counters: Counters::of(stats.named()),
        drops: Counters::of(stats.drops.nonzero().map(|(r, n)| (r.name(), n))),
    };
    let mut total = Stats::default();
    for w in workers {
        total.add(w);
    }
    answers::StatsAnswer {
        total: one(&total),
        workers: workers.iter().map(one).collect(),
        ..Default::default()
    }
}

/// `flowsec ctl sas`: one IKE SA with its Child SAs, as `swanctl
/// --list-sas` names things, with the counters of each Child SA's inbound
/// and outbound SA (`live` gives them by SA id).
pub fn ike_sa_answer(
    sa: &flowsec_ike::IkeSaInfo,
    live: impl Fn(flowsec_ipsec::SaId) -> flowsec_setkey::SaLive,
) -> answers::IkeSa {
    let texts = |v: &[std::net::IpAddr]| v.iter().map(ToString::to_string).collect();
    answers::IkeSa {
        name: sa.name.clone(),
        uniqueid: sa.uid,
        state: sa.state.into(),
        initiator: sa.initiator,
        initiator_spi: format!("{:016x}", sa.spi_i),
        responder_spi: format!("{:016x}", sa.spi_r),
        local_host: sa.local.ip().to_string(),
        local_port: sa.local.port(),
        local_id: sa.local_id.clone(),
        remote_host: sa.remote.ip().to_string(),
        remote_port: sa.remote.port(),
        remote_id: sa.remote_id.clone(),
        local_vips: texts(&sa.local_vips),
        remote_vips: texts(&sa.remote_vips),
        dns: texts(&sa.dns),
        nat: sa.nat,
        transport: sa.transport.name().into(),
        proposal: sa.proposal.clone(),
        established_s: sa.established_s,
        rekey_in_s: sa.rekey_in_s,
        child_sas: sa
            .children
            .iter()
            .map(|c| child_sa_answer(c, &live))
            .collect(),
    }
}

fn child_sa_answer(
    c: &flowsec_ike::ChildSaInfo,
    live: impl Fn(flowsec_ipsec::SaId) -> flowsec_setkey::SaLive,
) -> answers::ChildSa {
    let (i, o) = (live(c.sa_in), live(c.sa_out));
    answers::ChildSa {
        name: c.name.clone(),
        reqid: c.reqid,
        state: c.state.into(),
        mode: c.mode.into(),
        protocol: c.sa_in.protocol.to_string().to_uppercase(),
        encap: c.encap,
        per_cpu: c.per_cpu,
        cpu: c.cpu,
        spi_in: format!("{:08x}", c.sa_in.spi),
        spi_out: format!("{:08x}", c.sa_out.spi),
        proposal: c.proposal.clone(),
        dh_group: c.dh_group.clone(),
        cpi_in: c.cpis.map(|(i, _)| format!("{i:04x}")),
        cpi_out: c.cpis.map(|(_, o)| format!("{o:04x}")),
        bytes_in: i.bytes,
        packets_in: i.packets,
        bytes_out: o.bytes,
        packets_out: o.packets,
        install_time_s: c.installed_s,
        rekey_in_s: c.rekey_in_s,
        life_in_s: c.expire_in_s,
        local_ts: c.local_ts.clone(),
        remote_ts: c.remote_ts.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flowsec_crypto::EncrId;
    use flowsec_ipsec::{Mode, SaId, SaStats};
    use flowsec_setkey::SaLive;

    #[test]
    fn requests_with_keys_are_wiped() {
        let mut v = json!({"cmd": "setkey", "name": "f", "text": "add ... -E aes-gcm-16 0x0102;", "n": [1, "0x03"]});
        wipe_json(&mut v);
        assert_eq!(v, json!({"cmd": "", "name": "", "text": "", "n": [1, ""]}));
    }

    #[test]
    fn only_root_the_daemon_and_the_group_may_connect() {
        let peer = |uid, gid| PeerCred { pid: 1, uid, gid };
        let none = || -> Vec<u32> { panic!("groups asked without a group") };
        assert!(peer_allowed(peer(0, 0), 0, None, none));
        assert!(!peer_allowed(peer(1000, 1000), 0, None, none));
        // The daemon's own user (run without root, file capabilities).
        assert!(peer_allowed(peer(998, 998), 998, None, none));
        assert!(peer_allowed(peer(1000, 44), 0, Some(44), Vec::new));
        assert!(peer_allowed(peer(1000, 1000), 0, Some(44), || vec![27, 44]));
        assert!(!peer_allowed(peer(1000, 1000), 0, Some(44), || vec![27]));
        assert_eq!(group_id("44").unwrap(), 44);
        assert_eq!(group_id("root").unwrap(), 0);
        let e = group_id("no-such-group-flowsec").unwrap_err();
        assert!(
            matches!(&e, GroupError::Unknown { name } if name == "no-such-group-flowsec"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "no group \"no-such-group-flowsec\" in /etc/group"
        );
        // What a refused client reads (tests/e2e/hardening.sh greps it).
        let denied = RequestError::PermissionDenied {
            uid: 65534,
            group: None,
        };
        assert_eq!(
            denied.to_string(),
            "permission denied: uid 65534 is not root"
        );
        let denied = RequestError::PermissionDenied {
            uid: 1000,
            group: Some(44),
        };
        assert_eq!(
            denied.to_string(),
            "permission denied: uid 1000 is not root and not in group 44"
        );
    }

    #[test]
    fn answers_have_counters_and_no_keys() {
        let c = SaConfig::esp(
            0x1001,
            Mode::Tunnel,
            "192.0.2.1".parse().unwrap(),
            "192.0.2.2".parse().unwrap(),
        )
        .with_encr(EncrId::AES_GCM_16, &[7; 20]);
        let seen = SaReport {
            id: SaId {
                protocol: c.protocol,
                spi: c.spi,
                dst: c.dst,
            },
            live: SaLive {
                packets: 3,
                age: Duration::from_secs(5),
                ..SaLive::FRESH
            },
            stats: SaStats {
                auth_failures: 2,
                ..SaStats::default()
            },
            replay_window: 64,
            worker: Some(1),
            src: None,
        };
        let sa = serde_json::to_value(sa_answer(&c, &seen)).unwrap();
        assert_eq!((&sa["cpu"], &sa["worker"]), (&json!(null), &json!(1)));
        assert_eq!(sa["spi"], "00001001");
        assert_eq!(sa["mode"], "tunnel");
        assert_eq!(sa["age_s"], 5);
        assert_eq!(sa["packets"], 3);
        assert_eq!(sa["auth_failures"], 2);
        let text = sa.to_string();
        assert!(!text.contains("key") && !text.contains("0707"), "{text}");
        let w = Stats {
            sent: 4,
            ..Stats::default()
        };
        let stats = serde_json::to_value(stats_answer(&[w.clone(), w])).unwrap();
        assert_eq!(stats["total"]["sent"], 8);
        assert_eq!(stats["workers"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn requests_are_read_whole_and_refused_when_bad() {
        let ask = |bytes: &[u8]| {
            let (a, b) = UnixStream::pair().unwrap();
            let bytes = bytes.to_vec();
            // A writer of its own: the request is larger than the socket buffer.
            let writer = std::thread::spawn(move || {
                let _ = (&a).write_all(&bytes);
            });
            let request = read_request(&b);
            drop(b);
            writer.join().unwrap();
            request
        };
        assert_eq!(ask(b"{\"cmd\":\"status\"}\n").unwrap()["cmd"], "status");
        // Without the newline, the end of the stream ends the request.
        let big = format!(
            "{{\"cmd\":\"setkey\",\"text\":\"{}\"}}",
            "#".repeat(100_000)
        );
        assert_eq!(ask(big.as_bytes()).unwrap()["cmd"], "setkey");
        let e = ask(b"{").unwrap_err();
        assert!(matches!(e, RequestError::BadJson(_)), "{e:?}");
        assert!(e.to_string().starts_with("bad request: "), "{e}");
        let e = ask(&[0xff, b'\n']).unwrap_err();
        assert!(matches!(e, RequestError::NotUtf8), "{e:?}");
        assert_eq!(e.to_string(), "request is not UTF-8");
        let huge = vec![b' '; MAX_REQUEST + 20_000];
        let e = ask(&huge).unwrap_err();
        assert!(matches!(e, RequestError::TooLong), "{e:?}");
        assert_eq!(e.to_string(), "request longer than 1048576 bytes");
    }

    #[test]
    fn a_vici_client_is_handed_over_and_a_json_one_answered() {
        let dir = std::env::temp_dir().join(format!("flowsec-ctl-v-{}", std::process::id()));
        let path = dir.join("ctl.sock");
        let mut control = Control::bind(&path, None).unwrap();
        // A vici request: its length first (zero high byte).
        let frame = flowsec_wire::vici::Packet {
            ty: flowsec_wire::vici::PacketType::CmdRequest,
            name: Some("flowsec-status".into()),
            message: None,
        }
        .emit()
        .unwrap();
        let vici = UnixStream::connect(&path).unwrap();
        (&vici).write_all(&frame).unwrap();
        let mut asked = 0;
        let handed = control.serve(&mut |_| {
            asked += 1;
            json!({})
        });
        assert_eq!((handed.len(), asked), (1, 0));
        // The frame is still there for the vici server to read.
        let mut first = [0u8; 4];
        (&handed[0]).read_exact(&mut first).unwrap();
        assert_eq!(first, frame[..4]);
        let js = UnixStream::connect(&path).unwrap();
        (&js).write_all(b"{\"cmd\":\"status\"}\n").unwrap();
        let handed = control.serve(&mut |r| json!({"seen": r["cmd"]}));
        assert!(handed.is_empty());
        let mut answer = String::new();
        (&js).read_to_string(&mut answer).unwrap();
        assert_eq!(answer, "{\"seen\":\"status\"}\n");
        drop(control);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_live_socket_is_not_taken_over_and_the_file_goes_away() {
        let dir = std::env::temp_dir().join(format!("flowsec-ctl-{}", std::process::id()));
        let path = dir.join("sub").join("ctl.sock");
        let first = Control::bind(&path, None).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let e = Control::bind(&path, None).err().unwrap();
        assert!(
            matches!(&e, ControlError::InUse { path: p } if *p == path),
            "{e:?}"
        );
        assert!(e.to_string().contains("another flowsec daemon"), "{e}");
        drop(first);
        assert!(!path.exists());
        // A plain file where the socket should be is not deleted.
        std::fs::write(&path, b"not a socket").unwrap();
        let e = Control::bind(&path, None).err().unwrap();
        assert!(matches!(e, ControlError::NotASocket { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!("{}: exists and is not a socket", path.display())
        );
        assert!(path.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
