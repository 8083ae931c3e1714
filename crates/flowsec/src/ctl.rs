//! `flowsec ctl`: ask a running `flowsec up` about its SAs, policies and
//! counters over its control socket; text like `swanctl --list-sas`, or
//! `--json`.

use core::fmt;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};
use serde_json::Value;

use crate::{CliError, UsageError};

/// Why the daemon could not be asked, or what it refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum CtlError {
    /// Nothing listens on the control socket.
    Connect {
        /// The socket.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// Sending the request or reading the answer failed.
    Io {
        /// The socket.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The answer is not JSON.
    BadAnswer {
        /// The socket.
        path: PathBuf,
        /// Why.
        error: serde_json::Error,
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
            CtlError::BadAnswer { path, error } => {
                write!(f, "{}: bad answer: {error}", path.display())
            }
            CtlError::Daemon { message } => f.write_str(message),
        }
    }
}

impl std::error::Error for CtlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CtlError::Connect { error, .. } | CtlError::Io { error, .. } => Some(error),
            CtlError::BadAnswer { error, .. } => Some(error),
            CtlError::Daemon { .. } => None,
        }
    }
}

/// Arguments of `flowsec ctl`.
#[derive(Args, Debug)]
pub struct CtlArgs {
    /// What to show.
    pub what: What,
    /// The daemon's control socket.
    #[arg(long, env = "FLOWSEC_SOCKET", default_value = flowsec_daemon::DEFAULT_SOCKET)]
    pub socket: PathBuf,
    /// Print the daemon's JSON answer as it is.
    #[arg(long)]
    pub json: bool,
    /// initiate/terminate/rekey: the connection (IKE SA), or an IKE SA's
    /// unique id.
    #[arg(long, value_name = "NAME")]
    pub ike: Option<String>,
    /// initiate/terminate/rekey: the child (CHILD_SA) by its config name.
    #[arg(long, value_name = "NAME")]
    pub child: Option<String>,
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
    /// Bring up an IKE SA and/or CHILD_SA (`--ike`, `--child`), like
    /// `swanctl --initiate`.
    Initiate,
    /// Delete an IKE SA (`--ike`) or CHILD_SAs (`--child`).
    Terminate,
    /// Rekey an IKE SA (`--ike`) or CHILD_SAs (`--child`).
    Rekey,
    /// Read the `-c` and `--setkey` files again and apply what changed
    /// (as SIGHUP; like `swanctl --load-all`): new connections start,
    /// removed ones are deleted, changed ones replaced, the rest keep
    /// their SAs. A file with an error changes nothing.
    Reload,
}

pub fn run(args: &CtlArgs) -> Result<(), CliError> {
    let cmd = match args.what {
        What::Status => "status",
        What::Sas => "sas",
        What::Policies => "policies",
        What::Stats => "stats",
        What::Initiate => "initiate",
        What::Terminate => "terminate",
        What::Rekey => "rekey",
        What::Reload => "reload",
    };
    let acts = matches!(args.what, What::Initiate | What::Terminate | What::Rekey);
    if acts && args.ike.is_none() && args.child.is_none() {
        return Err(UsageError::CtlNeedsName { cmd }.into());
    }
    let mut req = serde_json::json!({ "cmd": cmd });
    if let Some(ike) = &args.ike {
        req["ike"] = ike.clone().into();
    }
    if let Some(child) = &args.child {
        req["child"] = child.clone().into();
    }
    let reply = request(&args.socket, &req)?;
    // Written whole at the end: a reader that goes away (`| head`) ends
    // the output, not the program with a panic.
    let mut o = String::new();
    if args.json {
        let _ = writeln!(
            o,
            "{}",
            serde_json::to_string_pretty(&reply).unwrap_or_default()
        );
    } else {
        match args.what {
            What::Status => print_object(&mut o, &reply),
            What::Sas => print_sas(&mut o, &reply),
            What::Policies => {
                for p in reply.as_array().into_iter().flatten() {
                    let _ = writeln!(o, "{}", p["setkey"].as_str().unwrap_or_default());
                }
            }
            What::Stats => print_stats(&mut o, &reply),
            What::Reload => print_reload(&mut o, &reply),
            What::Initiate | What::Terminate | What::Rekey => {
                let _ = writeln!(
                    o,
                    "{cmd}: {} SA(s) queued",
                    reply["ok"].as_u64().unwrap_or(0)
                );
            }
        }
    }
    let _ = std::io::stdout().lock().write_all(o.as_bytes());
    Ok(())
}

/// `ctl reload`: what became of each connection, and of the setkey file.
fn print_reload(o: &mut String, reply: &Value) {
    if let Some(ike) = reply.get("ike") {
        let names = |k: &str| -> Vec<String> {
            ike[k]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect()
        };
        for what in ["added", "replaced", "removed", "unchanged"] {
            let list = names(what);
            let shown = if list.is_empty() {
                "-".to_string()
            } else {
                list.join(", ")
            };
            let _ = writeln!(o, "connections {what}: {shown}");
        }
    }
    if let Some(s) = reply.get("setkey") {
        let n = |k: &str| s[k].as_u64().unwrap_or(0);
        let _ = writeln!(
            o,
            "setkey: {} SAs kept, {} added, {} removed; policies {}",
            n("kept"),
            n("added"),
            n("removed"),
            if s["policies_changed"].as_bool() == Some(true) {
                "changed"
            } else {
                "as they were"
            }
        );
    }
    for w in reply["warnings"].as_array().into_iter().flatten() {
        let _ = writeln!(o, "warning: {}", w.as_str().unwrap_or_default());
    }
}

/// Send one request to the daemon at `socket` and read its answer; an
/// answer with an "error" becomes the error.
pub fn request(socket: &Path, request: &Value) -> Result<Value, CtlError> {
    let path = || socket.to_path_buf();
    let stream = UnixStream::connect(socket).map_err(|error| CtlError::Connect {
        path: path(),
        error,
    })?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    // A setkey request holds keys: its text is wiped once sent.
    let line = zeroize::Zeroizing::new(format!("{request}\n"));
    (&stream)
        .write_all(line.as_bytes())
        .map_err(|error| CtlError::Io {
            path: path(),
            error,
        })?;
    let mut line = String::new();
    BufReader::new(&stream)
        .read_line(&mut line)
        .map_err(|error| CtlError::Io {
            path: path(),
            error,
        })?;
    let reply: Value = serde_json::from_str(&line).map_err(|error| CtlError::BadAnswer {
        path: path(),
        error,
    })?;
    match reply.get("error").and_then(Value::as_str) {
        Some(message) => Err(CtlError::Daemon {
            message: message.to_string(),
        }),
        None => Ok(reply),
    }
}

fn print_object(o: &mut String, v: &Value) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                match v {
                    Value::Array(items) if items.iter().all(|i| !i.is_object()) => {
                        let items: Vec<String> = items
                            .iter()
                            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string))
                            .collect();
                        let _ = writeln!(o, "{k}: {}", items.join(", "));
                    }
                    Value::Array(items) => {
                        for (i, item) in items.iter().enumerate() {
                            let _ = writeln!(o, "{k}[{i}]:");
                            if let Value::Object(m) = item {
                                for (k2, v2) in m {
                                    let _ = writeln!(o, "  {k2}: {v2}");
                                }
                            }
                        }
                    }
                    _ => {
                        let _ = writeln!(o, "{k}: {v}");
                    }
                }
            }
        }
        other => {
            let _ = writeln!(o, "{other}");
        }
    }
}

/// One line per worker and one for the total: counters that are not zero,
/// then drops by reason.
fn print_stats(o: &mut String, v: &Value) {
    let mut line = |label: String, c: &Value| {
        let mut parts = Vec::new();
        for (k, n) in c.as_object().into_iter().flatten() {
            match n {
                Value::Object(drops) => {
                    for (reason, n) in drops {
                        parts.push(format!("{reason}={n}"));
                    }
                }
                n if n.as_u64() != Some(0) || k == "sent" || k == "delivered" => {
                    parts.push(format!("{k}={n}"))
                }
                _ => {}
            }
        }
        let _ = writeln!(o, "{label}: {}", parts.join(" "));
    };
    for (k, w) in v["workers"].as_array().into_iter().flatten().enumerate() {
        line(format!("worker {k}"), w);
    }
    line("total".into(), &v["total"]);
    // IKE's, its queues' drops, and the RFC 9329 stream thread's.
    for k in ["ike", "ike_queue", "tcp"] {
        if v[k].is_object() {
            line(k.into(), &v[k]);
        }
    }
    if v["metrics"].is_object() {
        line("metrics".into(), &v["metrics"]);
    }
}

/// Like `swanctl --list-sas`: the IKE SAs with their CHILD_SAs, then the
/// SAs that were keyed by hand.
fn print_sas(o: &mut String, v: &Value) {
    for ike in v["ike_sas"].as_array().into_iter().flatten() {
        print_ike_sa(o, ike);
    }
    let manual: Vec<&Value> = v["sas"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|sa| !ike_owned(v, sa))
        .collect();
    for sa in manual {
        let s = |k: &str| sa[k].as_str().unwrap_or("?").to_string();
        let n = |k: &str| sa[k].as_u64().unwrap_or(0);
        let encap = if sa["encap"].is_null() {
            String::new()
        } else {
            ", UDP-encapsulated".to_string()
        };
        let algs = if s("integ") == "NONE" {
            s("encr")
        } else {
            format!("{}/{}", s("encr"), s("integ"))
        };
        let _ = writeln!(
            o,
            "{} SPI {} {} {} -> {} {}, {}{}, reqid {}{}",
            s("protocol"),
            s("spi"),
            s("mode"),
            s("src"),
            s("dst"),
            s("state").to_uppercase(),
            algs,
            encap,
            n("reqid"),
            placement(sa)
        );
        let _ = writeln!(o,
            "  {} bytes, {} packets, seq {}, {}s ago added; replay window {}: {} replay drops, {} auth failures, {} other drops",
            n("bytes"),
            n("packets"),
            n("seq"),
            n("age_s"),
            n("replay_window"),
            n("replay_drops"),
            n("auth_failures"),
            n("other_drops")
        );
    }
}

/// Where an SA runs: `, cpu 1` for a per-resource SA (RFC 9611), and
/// `, on worker 1` once a worker's copy has carried packets.
fn placement(sa: &Value) -> String {
    let mut out = String::new();
    if let Some(cpu) = sa["cpu"].as_u64() {
        let _ = write!(out, ", cpu {cpu}");
    }
    if let Some(w) = sa["worker"].as_u64() {
        let _ = write!(out, ", on worker {w}");
    }
    out
}

/// Whether SA `sa` belongs to a CHILD_SA listed above it.
fn ike_owned(v: &Value, sa: &Value) -> bool {
    let spi = sa["spi"]
        .as_str()
        .unwrap_or_default()
        .trim_start_matches("0x")
        .to_string();
    v["ike_sas"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|i| i["child_sas"].as_array().into_iter().flatten())
        .any(|c| {
            c["spi_in"].as_str() == Some(spi.as_str())
                || c["spi_out"].as_str() == Some(spi.as_str())
        })
}

/// One IKE SA as `swanctl --list-sas` shows it, then its CHILD_SAs.
fn print_ike_sa(o: &mut String, sa: &Value) {
    let s = |k: &str| field(sa, k);
    let _ = writeln!(
        o,
        "{}: #{}, {}, IKEv2, {}_i{} {}_r{}",
        s("name"),
        s("uniqueid"),
        s("state"),
        s("initiator_spi"),
        if sa["initiator"] == Value::Bool(true) {
            "*"
        } else {
            ""
        },
        s("responder_spi"),
        if sa["initiator"] == Value::Bool(false) {
            "*"
        } else {
            ""
        },
    );
    // Virtual IPs as swanctl shows them: ` [10.3.0.1]` after the address.
    let vips = |key: &str| match sa[key].as_array() {
        Some(a) if !a.is_empty() => {
            let list: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
            format!(" [{}]", list.join(" "))
        }
        _ => String::new(),
    };
    let _ = writeln!(
        o,
        "  local  '{}' @ {}[{}]{}",
        s("local_id"),
        s("local_host"),
        s("local_port"),
        vips("local_vips")
    );
    let _ = writeln!(
        o,
        "  remote '{}' @ {}[{}]{}{}",
        s("remote_id"),
        s("remote_host"),
        s("remote_port"),
        vips("remote_vips"),
        match sa["transport"].as_str() {
            // RFC 9329: the IKE SA and its ESP in one TCP stream.
            Some(t @ ("TCP" | "TLS")) => format!(" over {t}"),
            _ if sa["nat"] == Value::Bool(true) => " (NAT-T)".to_string(),
            _ => String::new(),
        }
    );
    if let Some(dns) = sa["dns"].as_array().filter(|d| !d.is_empty()) {
        let list: Vec<&str> = dns.iter().filter_map(Value::as_str).collect();
        let _ = writeln!(o, "  DNS {}", list.join(" "));
    }
    let _ = writeln!(o, "  {}", s("proposal"));
    let _ = writeln!(
        o,
        "  established {}s ago, rekeying in {}s",
        s("established_s"),
        s("rekey_in_s")
    );
    let stream = matches!(sa["transport"].as_str(), Some("TCP" | "TLS"));
    for c in sa["child_sas"].as_array().into_iter().flatten() {
        print_child_sa(o, c, stream);
    }
}

/// One CHILD_SA under its IKE SA: proposal, times, both SPIs' counters
/// and the traffic selectors.
fn print_child_sa(o: &mut String, c: &Value, stream: bool) {
    let s = |k: &str| field(c, k);
    // A per-resource Child SA (RFC 9611): its worker, as swanctl shows
    // a per-CPU SA's CPU.
    let resource = match (c["per_cpu"].as_bool(), c["cpu"].as_u64()) {
        (Some(true), Some(cpu)) => format!(", cpu {cpu}"),
        (Some(true), None) => ", per-cpu fallback".to_string(),
        _ => String::new(),
    };
    let _ = writeln!(
        o,
        "  {}: reqid {}, {}, {}, {}{}{}:",
        s("name"),
        s("reqid"),
        s("state"),
        s("mode"),
        s("protocol"),
        match (c["encap"] == Value::Bool(true), stream) {
            (true, true) => " in TCP",
            (true, false) => " in UDP",
            (false, _) => "",
        },
        resource
    );
    if c["cpi_in"].is_string() {
        let _ = writeln!(
            o,
            "    {}, IPCOMP CPIs {}_i {}_o",
            s("proposal"),
            s("cpi_in"),
            s("cpi_out")
        );
    } else {
        let _ = writeln!(o, "    {}", s("proposal"));
    }
    let _ = writeln!(
        o,
        "    installed {}s ago, rekeying in {}s, expires in {}s",
        s("install_time_s"),
        s("rekey_in_s"),
        s("life_in_s")
    );
    let _ = writeln!(
        o,
        "    in  {}, {:>8} bytes, {:>6} packets",
        s("spi_in"),
        s("bytes_in"),
        s("packets_in")
    );
    let _ = writeln!(
        o,
        "    out {}, {:>8} bytes, {:>6} packets",
        s("spi_out"),
        s("bytes_out"),
        s("packets_out")
    );
    let ts = |k: &str| {
        c[k].as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let _ = writeln!(o, "    local  {}", ts("local_ts"));
    let _ = writeln!(o, "    remote {}", ts("remote_ts"));
}

/// Field `k` of `v` as text: a string as it is, null as `-`, anything
/// else as JSON.
fn field(v: &Value, k: &str) -> String {
    match &v[k] {
        Value::String(x) => x.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ctl sas` text for one IKE SA with two CHILD_SAs (one with IPComp,
    /// one in UDP) and an SA keyed by hand.
    #[test]
    fn sas_are_listed_as_swanctl_does() {
        let v: Value = serde_json::from_str(
            r#"{
            "ike_sas": [{
                "name": "gw", "uniqueid": 3, "state": "ESTABLISHED",
                "initiator_spi": "0a0b0c0d0e0f1011", "responder_spi": "1213141516171819",
                "initiator": true, "local_id": "gwa", "local_host": "192.0.2.1",
                "local_port": 500, "remote_id": "gwb", "remote_host": "192.0.2.2",
                "remote_port": 4500, "nat": true,
                "proposal": "AES_GCM_16_128/PRF_HMAC_SHA2_256/ECP_256",
                "established_s": 12, "rekey_in_s": null,
                "child_sas": [
                    {
                        "name": "net", "reqid": 1, "state": "INSTALLED", "mode": "TUNNEL",
                        "protocol": "ESP", "encap": true, "proposal": "AES_GCM_16_128",
                        "install_time_s": 12, "rekey_in_s": 3000, "life_in_s": 3400,
                        "spi_in": "c0000001", "spi_out": "c0000002",
                        "bytes_in": 1234, "packets_in": 5, "bytes_out": 0, "packets_out": 0,
                        "local_ts": ["10.1.0.0/16"], "remote_ts": ["10.2.0.0/16", "10.3.0.0/16"]
                    },
                    {
                        "name": "comp", "reqid": 2, "state": "INSTALLED", "mode": "TRANSPORT",
                        "protocol": "ESP", "encap": false, "proposal": "AES_CBC_128/HMAC_SHA1_96",
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
                "initiator": false, "local_id": null, "local_host": "192.0.2.1",
                "local_port": 4500, "remote_id": null, "remote_host": "192.0.2.3",
                "remote_port": 40001, "nat": true, "transport": "TLS", "proposal": null,
                "established_s": null, "rekey_in_s": null
            }],
            "sas": [
                {"protocol": "ESP", "spi": "0xc0000001", "mode": "tunnel"},
                {
                    "protocol": "AH", "spi": "0x00001001", "mode": "transport",
                    "src": "192.0.2.1", "dst": "192.0.2.2", "state": "mature",
                    "encr": "NULL", "integ": "NONE", "encap": {"sport": 4500},
                    "reqid": 7, "bytes": 10, "packets": 1, "seq": 1, "age_s": 5,
                    "replay_window": 32, "replay_drops": 0, "auth_failures": 2,
                    "other_drops": 3
                }
            ]
        }"#,
        )
        .unwrap();
        let mut o = String::new();
        print_sas(&mut o, &v);
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
