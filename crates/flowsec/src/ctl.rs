//! `flowsec ctl`: ask a running `flowsec up` about its SAs, policies and
//! counters, and tell it to initiate, terminate, rekey or reload. It
//! speaks vici (flowsec's own questions as `flowsec-*` commands, IKE's
//! actions as charon's `initiate`, `terminate`, `rekey`), over the
//! control socket or any vici URI; it prints text like `swanctl
//! --list-sas`, or with `--json` the same typed answer in JSON.

use core::fmt;
use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use flowsec_daemon::answers::{
    Answer, ChildSa, Counters, IkeSa, Policies, Queued, Reloaded, Sa, Sas, StatsAnswer, Status,
    WorkerCounters,
};
use flowsec_wire::vici::Section;
use serde::de::DeserializeOwned;

use crate::vici_client::{Connection, Target};
use crate::{CliError, UsageError};

/// How long a question may take (initiate and terminate wait for IKE).
const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// Why the daemon could not be asked, or what it refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum CtlError {
    /// Nothing listens on the control socket.
    Connect {
        /// The socket or URI.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// Sending the request or reading the answer failed.
    Io {
        /// The socket or URI.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The answer is not what was asked for.
    BadAnswer {
        /// The socket or URI.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// The daemon refused the request; its own words (a setkey error
    /// names the file, line and column).
    Daemon {
        /// What the daemon said.
        message: String,
    },
}

impl fmt::Display for CtlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CtlError::Connect { path, error } => write!(
                f,
                "{}: {error} (is `flowsec up` running? --socket)",
                path.display()
            ),
            CtlError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            CtlError::BadAnswer { path, why } => {
                write!(f, "{}: bad answer: {why}", path.display())
            }
            CtlError::Daemon { message } => f.write_str(message),
        }
    }
}

impl std::error::Error for CtlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CtlError::Connect { error, .. } | CtlError::Io { error, .. } => Some(error),
            CtlError::BadAnswer { .. } | CtlError::Daemon { .. } => None,
        }
    }
}

/// Arguments of `flowsec ctl`.
#[derive(Args, Debug)]
pub struct CtlArgs {
    /// What to show.
    pub what: What,
    /// The daemon's control socket (it speaks vici).
    #[arg(long, env = "FLOWSEC_SOCKET", default_value = flowsec_daemon::DEFAULT_SOCKET)]
    pub socket: PathBuf,
    /// Ask at a vici URI instead (`unix:///var/run/charon.vici`,
    /// `tcp://127.0.0.1:4502`), as `swanctl --uri`.
    #[arg(long, value_name = "URI")]
    pub uri: Option<String>,
    /// Print the daemon's answer as JSON (the control socket's document).
    #[arg(long)]
    pub json: bool,
    /// initiate/terminate/rekey: the connection (IKE SA), or an IKE SA's
    /// unique id (`#3`).
    #[arg(long, value_name = "NAME")]
    pub ike: Option<String>,
    /// initiate/terminate/rekey: the child (CHILD_SA) by its config name.
    #[arg(long, value_name = "NAME")]
    pub child: Option<String>,
    /// redirect: the clients' address (an address, a CIDR prefix or
    /// `FROM-TO`).
    #[arg(long, value_name = "IP")]
    pub peer_ip: Option<String>,
    /// redirect: the clients' identity (`*` prefix: any ending).
    #[arg(long, value_name = "ID")]
    pub peer_id: Option<String>,
    /// redirect: the gateway to send them to (an address or a host name).
    #[arg(long, value_name = "GW")]
    pub gateway: Option<String>,
    /// initiate/terminate: give up waiting after SECS (0: as long as IKE
    /// takes; the daemon stops at 300 s).
    #[arg(long, value_name = "SECS", default_value_t = 0)]
    pub timeout: u64,
}

impl CtlArgs {
    /// Where to ask.
    pub fn target(&self) -> Target {
        target(self.uri.as_deref(), &self.socket)
    }
}

/// `--uri` if given, else the control socket.
pub fn target(uri: Option<&str>, socket: &std::path::Path) -> Target {
    Target(uri.map_or_else(|| socket.display().to_string(), str::to_string))
}

/// The questions `flowsec ctl` can ask.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum What {
    /// Daemon overview.
    Status,
    /// Security associations with their counters.
    Sas,
    /// Security policies.
    Policies,
    /// Counters per worker and per drop reason.
    Stats,
    /// Bring up an IKE SA and/or CHILD_SA (`--ike`, `--child`) and wait
    /// for it, like `swanctl --initiate`.
    Initiate,
    /// Delete an IKE SA (`--ike`) or CHILD_SAs (`--child`) and wait for
    /// it.
    Terminate,
    /// Rekey an IKE SA (`--ike`) or CHILD_SAs (`--child`) (queued).
    Rekey,
    /// Send clients to another gateway (RFC 5685), like `swanctl
    /// --redirect`: `--gateway` and at least one of `--ike`, `--peer-ip`,
    /// `--peer-id` (all given must match).
    Redirect,
    /// Read the `-c` and `--setkey` files again and apply what changed
    /// (as SIGHUP; like `swanctl --load-all`): new connections start,
    /// removed ones are deleted, changed ones replaced, the rest keep
    /// their SAs. A file with an error changes nothing.
    Reload,
}

pub fn run(args: &CtlArgs) -> Result<(), CliError> {
    // Written whole at the end: a reader that goes away (`| head`) ends
    // the output, not the program with a panic.
    let mut o = String::new();
    match args.what {
        What::Initiate | What::Terminate | What::Rekey => act(args, &mut o)?,
        What::Redirect => redirect(args, &mut o)?,
        What::Status => show::<Status>(args, "flowsec-status", &mut o, print_status)?,
        What::Sas => show::<Sas>(args, "flowsec-sas", &mut o, print_sas)?,
        What::Policies => show::<Policies>(args, "flowsec-policies", &mut o, print_policies)?,
        What::Stats => show::<StatsAnswer>(args, "flowsec-stats", &mut o, print_stats)?,
        What::Reload => show::<Reloaded>(args, "flowsec-reload", &mut o, print_reload)?,
    }
    let _ = std::io::stdout().lock().write_all(o.as_bytes());
    Ok(())
}

/// Ask `command` and read its answer as `T`: printed by `print`, or as
/// JSON.
fn show<T: DeserializeOwned + Into<Answer>>(
    args: &CtlArgs,
    command: &str,
    o: &mut String,
    print: fn(&mut String, &T),
) -> Result<(), CtlError> {
    let answer: T = ask(&args.target(), command, Section::default())?;
    if args.json {
        let json = answer.into().to_json();
        let _ = writeln!(
            o,
            "{}",
            serde_json::to_string_pretty(&json).unwrap_or_default()
        );
    } else {
        print(o, &answer);
    }
    Ok(())
}

/// One question of flowsec's to the daemon at `target`, its answer read
/// as `T`.
pub fn ask<T: DeserializeOwned>(
    target: &Target,
    command: &str,
    message: Section,
) -> Result<T, CtlError> {
    let mut c = Connection::open(target, Some(ANSWER_WAIT))?;
    let answer = c.call(command, message, &mut |_, _| {})?;
    flowsec_daemon::from_vici(&answer).map_err(|e| CtlError::BadAnswer {
        path: target.0.clone().into(),
        why: e.to_string(),
    })
}

/// `initiate`, `terminate`, `rekey`: charon's commands, IKE's log lines
/// streamed as they come (`control-log`), as swanctl prints them.
fn act(args: &CtlArgs, o: &mut String) -> Result<(), CliError> {
    let cmd = match args.what {
        What::Initiate => "initiate",
        What::Terminate => "terminate",
        _ => "rekey",
    };
    if args.ike.is_none() && args.child.is_none() {
        return Err(UsageError::CtlNeedsName { cmd }.into());
    }
    let mut m = Section::default();
    if let Some(child) = &args.child {
        m = m.with("child", child.as_str());
    }
    match args.ike.as_deref().map(|i| (i, i.strip_prefix('#'))) {
        Some((_, Some(id))) if id.parse::<u32>().is_ok() => m = m.with("ike-id", id),
        Some((name, _)) => m = m.with("ike", name),
        None => {}
    }
    let waits = cmd != "rekey";
    if waits {
        m = m.with("timeout", (args.timeout * 1000).to_string());
    }
    // Waiting for IKE without --timeout: as long as the daemon takes.
    let wait = if waits && args.timeout == 0 {
        None
    } else {
        Some(ANSWER_WAIT + Duration::from_secs(args.timeout))
    };
    let mut c = Connection::open(&args.target(), wait)?;
    if waits {
        c.register("control-log")?;
    }
    // As swanctl: `[IKE] message`, as it happens (on stderr under
    // --json, which keeps stdout one document).
    let mut out: Box<dyn Write> = match args.json {
        true => Box::new(std::io::stderr().lock()),
        false => Box::new(std::io::stdout().lock()),
    };
    let answer = c.call(cmd, m, &mut |_, log| {
        let group = log.str("group").unwrap_or("---");
        let _ = writeln!(out, "[{group}] {}", log.str("msg").unwrap_or_default());
    })?;
    drop(out);
    let matched = answer.str("matches").and_then(|n| n.parse().ok());
    if args.json {
        let queued = Answer::Queued(Queued {
            ok: matched.unwrap_or(1),
        });
        let _ = writeln!(o, "{}", queued.to_json());
    } else if cmd == "rekey" {
        let _ = writeln!(o, "rekey: {} SA(s) queued", matched.unwrap_or(0));
    } else {
        let _ = writeln!(o, "{cmd} completed successfully");
    }
    Ok(())
}

/// `redirect`: charon's command, as `swanctl --redirect` sends it.
fn redirect(args: &CtlArgs, o: &mut String) -> Result<(), CliError> {
    let Some(gateway) = &args.gateway else {
        return Err(UsageError::CtlRedirect.into());
    };
    let mut m = Section::default().with("gateway", gateway.as_str());
    match args.ike.as_deref().map(|i| (i, i.strip_prefix('#'))) {
        Some((_, Some(id))) if id.parse::<u32>().is_ok() => m = m.with("ike-id", id),
        Some((name, _)) => m = m.with("ike", name),
        None => {}
    }
    for (key, value) in [("peer-ip", &args.peer_ip), ("peer-id", &args.peer_id)] {
        if let Some(v) = value {
            m = m.with(key, v.as_str());
        }
    }
    let mut c = Connection::open(&args.target(), Some(ANSWER_WAIT))?;
    let answer = c.call("redirect", m, &mut |_, _| {})?;
    let matched = answer
        .str("matches")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    if args.json {
        let _ = writeln!(o, "{}", Answer::Queued(Queued { ok: matched }).to_json());
    } else {
        let _ = writeln!(o, "redirect completed successfully ({matched} IKE_SA(s))");
    }
    Ok(())
}

/// `ctl status`.
fn print_status(o: &mut String, s: &Status) {
    let _ = writeln!(o, "tun: {}", s.tun);
    let _ = writeln!(o, "uptime_s: {:.1}", s.uptime_s);
    let _ = writeln!(o, "workers: {}", s.workers);
    for h in &s.worker_health {
        let _ = writeln!(
            o,
            "worker {}: {}, {} deadlines missed, {} changes pending",
            h.worker,
            if h.late { "LATE" } else { "answering" },
            h.missed_deadlines,
            h.pending_changes
        );
    }
    let _ = writeln!(o, "sas: {}", s.sas);
    let _ = writeln!(o, "policies: {}", s.policies);
    let f = &s.plaintext_filter;
    let _ = writeln!(
        o,
        "plaintext_filter: {}{}",
        f.table.as_deref().unwrap_or("none"),
        f.stale
            .as_deref()
            .map(|w| format!(" (stale: {w})"))
            .unwrap_or_default()
    );
    let _ = writeln!(o, "capabilities: {}", s.capabilities.join(", "));
    let _ = writeln!(o, "no_new_privs: {}", s.no_new_privs);
    let _ = writeln!(o, "ctl_refused: {}", s.ctl_refused);
}

/// `ctl policies`: setkey's statements.
fn print_policies(o: &mut String, p: &Policies) {
    for p in &p.policies {
        let _ = writeln!(o, "{}", p.setkey);
    }
}

/// `ctl reload`: what became of each connection, and of the setkey file.
fn print_reload(o: &mut String, r: &Reloaded) {
    if let Some(ike) = &r.ike {
        for (what, list) in [
            ("added", &ike.added),
            ("replaced", &ike.replaced),
            ("removed", &ike.removed),
            ("unchanged", &ike.unchanged),
        ] {
            let shown = if list.is_empty() {
                "-".to_string()
            } else {
                list.join(", ")
            };
            let _ = writeln!(o, "connections {what}: {shown}");
        }
    }
    if let Some(s) = &r.setkey {
        let _ = writeln!(
            o,
            "setkey: {} SAs kept, {} added, {} removed; policies {}",
            s.kept,
            s.added,
            s.removed,
            if s.policies_changed {
                "changed"
            } else {
                "as they were"
            }
        );
    }
    for w in r.warnings.iter().flatten() {
        let _ = writeln!(o, "warning: {w}");
    }
}

/// One line per worker and one for the total: counters that are not zero,
/// then drops by reason.
fn print_stats(o: &mut String, v: &StatsAnswer) {
    let mut line = |label: &str, c: &Counters, drops: Option<&Counters>| {
        let mut parts: Vec<String> =
            c.0.iter()
                .filter(|(k, n)| *n != 0 || k == "sent" || k == "delivered")
                .map(|(k, n)| format!("{k}={n}"))
                .collect();
        for (reason, n) in drops.map(|d| d.0.as_slice()).unwrap_or_default() {
            parts.push(format!("{reason}={n}"));
        }
        let _ = writeln!(o, "{label}: {}", parts.join(" "));
    };
    let worker = |w: &WorkerCounters| (w.counters.clone(), w.drops.clone());
    for (k, w) in v.workers.iter().enumerate() {
        let (c, d) = worker(w);
        line(&format!("worker {k}"), &c, Some(&d));
    }
    let (c, d) = worker(&v.total);
    line("total", &c, Some(&d));
    // IKE's, its queues' drops, the RFC 9329 stream thread's, and the
    // metrics thread's.
    for (k, c) in [
        ("ike", &v.ike),
        ("ike_queue", &v.ike_queue),
        ("tcp", &v.tcp),
        ("metrics", &v.metrics),
    ] {
        if let Some(c) = c {
            line(k, c, None);
        }
    }
}

/// Like `swanctl --list-sas`: the IKE SAs with their CHILD_SAs, then the
/// SAs that were keyed by hand.
fn print_sas(o: &mut String, v: &Sas) {
    for ike in &v.ike_sas {
        print_ike_sa(o, ike);
    }
    for sa in v.sas.iter().filter(|sa| !ike_owned(v, sa)) {
        let encap = if sa.encap.is_some() {
            ", UDP-encapsulated"
        } else {
            ""
        };
        let algs = if sa.integ == "NONE" {
            sa.encr.clone()
        } else {
            format!("{}/{}", sa.encr, sa.integ)
        };
        let _ = writeln!(
            o,
            "{} SPI {} {} {} -> {} {}, {}{}, reqid {}{}",
            sa.protocol,
            sa.spi,
            sa.mode,
            sa.src,
            sa.dst,
            sa.state.to_uppercase(),
            algs,
            encap,
            sa.reqid,
            placement(sa)
        );
        let _ = writeln!(o,
            "  {} bytes, {} packets, seq {}, {}s ago added; replay window {}: {} replay drops, {} auth failures, {} other drops",
            sa.bytes, sa.packets, sa.seq, sa.age_s, sa.replay_window,
            sa.replay_drops, sa.auth_failures, sa.other_drops
        );
    }
}

/// Where an SA runs: `, cpu 1` for a per-resource SA (RFC 9611), and
/// `, on worker 1` once a worker's copy has carried packets.
fn placement(sa: &Sa) -> String {
    let mut out = String::new();
    if let Some(cpu) = sa.cpu {
        let _ = write!(out, ", cpu {cpu}");
    }
    if let Some(w) = sa.worker {
        let _ = write!(out, ", on worker {w}");
    }
    out
}

/// Whether SA `sa` belongs to a CHILD_SA listed above it.
fn ike_owned(v: &Sas, sa: &Sa) -> bool {
    let spi = sa.spi.trim_start_matches("0x");
    v.ike_sas
        .iter()
        .flat_map(|i| &i.child_sas)
        .any(|c| c.spi_in == spi || c.spi_out == spi)
}

/// A value that may be missing, as `-`.
fn or_dash<T: fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// One IKE SA as `swanctl --list-sas` shows it, then its CHILD_SAs.
fn print_ike_sa(o: &mut String, sa: &IkeSa) {
    let star = |yes: bool| if yes { "*" } else { "" };
    let _ = writeln!(
        o,
        "{}: #{}, {}, IKEv2, {}_i{} {}_r{}",
        sa.name,
        sa.uniqueid,
        sa.state,
        sa.initiator_spi,
        star(sa.initiator),
        sa.responder_spi,
        star(!sa.initiator),
    );
    // Virtual IPs as swanctl shows them: ` [10.3.0.1]` after the address.
    let vips = |a: &[String]| match a.is_empty() {
        true => String::new(),
        false => format!(" [{}]", a.join(" ")),
    };
    let dash = |s: &str| {
        if s.is_empty() {
            "-".to_string()
        } else {
            s.to_string()
        }
    };
    let _ = writeln!(
        o,
        "  local  '{}' @ {}[{}]{}",
        dash(&sa.local_id),
        sa.local_host,
        sa.local_port,
        vips(&sa.local_vips)
    );
    let stream = matches!(sa.transport.as_str(), "TCP" | "TLS");
    let _ = writeln!(
        o,
        "  remote '{}' @ {}[{}]{}{}",
        dash(&sa.remote_id),
        sa.remote_host,
        sa.remote_port,
        vips(&sa.remote_vips),
        // RFC 9329: the IKE SA and its ESP in one TCP stream.
        match (stream, sa.nat) {
            (true, _) => format!(" over {}", sa.transport),
            (false, true) => " (NAT-T)".to_string(),
            (false, false) => String::new(),
        }
    );
    if !sa.dns.is_empty() {
        let _ = writeln!(o, "  DNS {}", sa.dns.join(" "));
    }
    let _ = writeln!(o, "  {}", dash(&sa.proposal));
    let _ = writeln!(
        o,
        "  established {}s ago, rekeying in {}s",
        or_dash(sa.established_s),
        or_dash(sa.rekey_in_s)
    );
    for c in &sa.child_sas {
        print_child_sa(o, c, stream);
    }
}

/// One CHILD_SA under its IKE SA: proposal, times, both SPIs' counters
/// and the traffic selectors.
fn print_child_sa(o: &mut String, c: &ChildSa, stream: bool) {
    // A per-resource Child SA (RFC 9611): its worker, as swanctl shows
    // a per-CPU SA's CPU.
    let resource = match (c.per_cpu, c.cpu) {
        (true, Some(cpu)) => format!(", cpu {cpu}"),
        (true, None) => ", per-cpu fallback".to_string(),
        _ => String::new(),
    };
    let _ = writeln!(
        o,
        "  {}: reqid {}, {}, {}, {}{}{}:",
        c.name,
        c.reqid,
        c.state,
        c.mode,
        c.protocol,
        match (c.encap, stream) {
            (true, true) => " in TCP",
            (true, false) => " in UDP",
            (false, _) => "",
        },
        resource
    );
    match (&c.cpi_in, &c.cpi_out) {
        (Some(i), Some(out)) => {
            let _ = writeln!(o, "    {}, IPCOMP CPIs {i}_i {out}_o", c.proposal);
        }
        _ => {
            let _ = writeln!(o, "    {}", c.proposal);
        }
    }
    let _ = writeln!(
        o,
        "    installed {}s ago, rekeying in {}s, expires in {}s",
        c.install_time_s,
        or_dash(c.rekey_in_s),
        or_dash(c.life_in_s)
    );
    let _ = writeln!(
        o,
        "    in  {}, {:>8} bytes, {:>6} packets",
        c.spi_in, c.bytes_in, c.packets_in
    );
    let _ = writeln!(
        o,
        "    out {}, {:>8} bytes, {:>6} packets",
        c.spi_out, c.bytes_out, c.packets_out
    );
    let _ = writeln!(o, "    local  {}", c.local_ts.join(" "));
    let _ = writeln!(o, "    remote {}", c.remote_ts.join(" "));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ctl sas` text for one IKE SA with two CHILD_SAs (one with IPComp,
    /// one in UDP) and an SA keyed by hand.
    #[test]
    fn sas_are_listed_as_swanctl_does() {
        let v: Sas = serde_json::from_str(
            r#"{
            "ike_sas": [{
                "name": "gw", "uniqueid": 3, "state": "ESTABLISHED",
                "initiator_spi": "0a0b0c0d0e0f1011", "responder_spi": "1213141516171819",
                "initiator": true, "local_id": "gwa", "local_host": "192.0.2.1",
                "local_port": 500, "remote_id": "gwb", "remote_host": "192.0.2.2",
                "remote_port": 4500, "nat": true, "transport": "UDP",
                "local_vips": [], "remote_vips": [], "dns": [],
                "proposal": "AES_GCM_16_128/PRF_HMAC_SHA2_256/ECP_256",
                "established_s": 12, "rekey_in_s": null,
                "child_sas": [
                    {
                        "name": "net", "reqid": 1, "state": "INSTALLED", "mode": "TUNNEL",
                        "protocol": "ESP", "encap": true, "proposal": "AES_GCM_16_128",
                        "per_cpu": false, "cpu": null, "dh_group": null,
                        "install_time_s": 12, "rekey_in_s": 3000, "life_in_s": 3400,
                        "spi_in": "c0000001", "spi_out": "c0000002",
                        "bytes_in": 1234, "packets_in": 5, "bytes_out": 0, "packets_out": 0,
                        "local_ts": ["10.1.0.0/16"], "remote_ts": ["10.2.0.0/16", "10.3.0.0/16"]
                    },
                    {
                        "name": "comp", "reqid": 2, "state": "INSTALLED", "mode": "TRANSPORT",
                        "protocol": "ESP", "encap": false, "proposal": "AES_CBC_128/HMAC_SHA1_96",
                        "per_cpu": false, "cpu": null, "dh_group": null,
                        "cpi_in": "4001", "cpi_out": "4002",
                        "install_time_s": 1, "rekey_in_s": 10, "life_in_s": 20,
                        "spi_in": "c0000003", "spi_out": "c0000004",
                        "bytes_in": 0, "packets_in": 0, "bytes_out": 99, "packets_out": 1,
                        "local_ts": [], "remote_ts": ["0.0.0.0/0"]
                    }
                ]
            }, {
                "name": "other", "uniqueid": 4, "state": "CONNECTING",
                "initiator_spi": "2021222324252627", "responder_spi": "0000000000000000",
                "initiator": false, "local_id": "", "local_host": "192.0.2.1",
                "local_port": 4500, "remote_id": "", "remote_host": "192.0.2.3",
                "remote_port": 40001, "nat": true, "transport": "TLS", "proposal": "",
                "local_vips": [], "remote_vips": [], "dns": [],
                "established_s": null, "rekey_in_s": null, "child_sas": []
            }],
            "sas": [
                {
                    "protocol": "ESP", "spi": "0xc0000001", "mode": "tunnel",
                    "src": "192.0.2.2", "dst": "192.0.2.1", "state": "mature",
                    "encr": "AES-GCM-16", "integ": "NONE", "encap": null, "esn": false,
                    "reqid": 1, "cpu": null, "worker": null, "bytes": 0, "packets": 0,
                    "seq": 0, "age_s": 5, "replay_window": 32, "replay_drops": 0,
                    "auth_failures": 0, "other_drops": 0, "last_use_s": null
                },
                {
                    "protocol": "AH", "spi": "0x00001001", "mode": "transport",
                    "src": "192.0.2.1", "dst": "192.0.2.2", "state": "mature",
                    "encr": "NULL", "integ": "NONE", "encap": {"sport": 4500, "dport": 4500},
                    "reqid": 7, "bytes": 10, "packets": 1, "seq": 1, "age_s": 5,
                    "replay_window": 32, "replay_drops": 0, "auth_failures": 2,
                    "other_drops": 3, "esn": false, "cpu": null, "worker": null,
                    "last_use_s": null
                }
            ]
        }"#,
        )
        .unwrap();
        let mut o = String::new();
        print_sas(&mut o, &v);
        // Through vici and back: the same text.
        let vici = flowsec_daemon::to_vici(&v).unwrap();
        let back: Sas = flowsec_daemon::from_vici(&vici).unwrap();
        assert_eq!(back, v);
        let want: String = [
            "gw: #3, ESTABLISHED, IKEv2, 0a0b0c0d0e0f1011_i* 1213141516171819_r",
            "  local  'gwa' @ 192.0.2.1[500]",
            "  remote 'gwb' @ 192.0.2.2[4500] (NAT-T)",
            "  AES_GCM_16_128/PRF_HMAC_SHA2_256/ECP_256",
            "  established 12s ago, rekeying in -s",
            "  net: reqid 1, INSTALLED, TUNNEL, ESP in UDP:",
            "    AES_GCM_16_128",
            "    installed 12s ago, rekeying in 3000s, expires in 3400s",
            "    in  c0000001,     1234 bytes,      5 packets",
            "    out c0000002,        0 bytes,      0 packets",
            "    local  10.1.0.0/16",
            "    remote 10.2.0.0/16 10.3.0.0/16",
            "  comp: reqid 2, INSTALLED, TRANSPORT, ESP:",
            "    AES_CBC_128/HMAC_SHA1_96, IPCOMP CPIs 4001_i 4002_o",
            "    installed 1s ago, rekeying in 10s, expires in 20s",
            "    in  c0000003,        0 bytes,      0 packets",
            "    out c0000004,       99 bytes,      1 packets",
            "    local  ",
            "    remote 0.0.0.0/0",
            "other: #4, CONNECTING, IKEv2, 2021222324252627_i 0000000000000000_r*",
            "  local  '-' @ 192.0.2.1[4500]",
            "  remote '-' @ 192.0.2.3[40001] over TLS",
            "  -",
            "  established -s ago, rekeying in -s",
            "AH SPI 0x00001001 transport 192.0.2.1 -> 192.0.2.2 MATURE, NULL, UDP-encapsulated, reqid 7",
            "  10 bytes, 1 packets, seq 1, 5s ago added; replay window 32: 0 replay drops, 2 auth failures, 3 other drops",
        ]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
        assert_eq!(o, want);
    }
}
