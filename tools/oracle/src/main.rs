//! `flowsec-oracle`: a dev tool that runs single packets through flowsec's
//! sans-I/O IPsec core so that independent implementations (scapy, tshark;
//! tests/oracle) can check what it seals and seal what it opens.
//!
//! ```text
//! stdin:  one JSON request per line
//!         {"op": "seal" | "open", "backend"?: "auto" | "aws-lc" | "rustcrypto",
//!          "sa": {"protocol": "esp" | "ah", "spi": 1, "mode": "tunnel" | "transport",
//!                 "src": "ip", "dst": "ip", "encap": null | {"sport": 4500, "dport": 4500},
//!                 "encr": <IANA EncrId>, "encr_key": "hex", "integ": <IANA IntegId>,
//!                 "integ_key": "hex", "esn": false, "seq": 1, "replay_window": 64},
//!          "packet": "hex"}
//! stdout: one JSON response per line, in order
//!         {"ok": true, "packet": "hex"} | {"ok": false, "error": "..."}
//! ```
//!
//! `seal` takes the plaintext IP packet (the inner packet in tunnel mode,
//! the whole packet in transport mode) and returns the outer IP packet
//! carrying sequence number `seq`. `open` takes a packet as received and
//! returns the decapsulated packet, or the [`DropReason`] name; there `seq`
//! (when above 1) is the sequence number expected next, so that the replay
//! window's top is `seq - 1` and ESN high bits are reconstructed from it
//! (RFC 4303 Appendix A.2).
//!
//! Every request gets a fresh SA, so replay state never carries over. A
//! malformed request is answered with `"bad request: ..."`; nothing panics
//! the process (a panic inside the core is caught and reported as
//! `"panic: ..."`, which an oracle test treats as a finding).
#![forbid(unsafe_code)]

use std::io::{self, BufRead, BufWriter, Write};
use std::net::IpAddr;
use std::panic::{self, AssertUnwindSafe};
use std::time::Duration;

use flowsec_crypto::{EncrId, IntegId, Provider};
use flowsec_ipsec::process::{self, Inbound, SealError};
use flowsec_ipsec::spd::{Level, SaTemplate};
use flowsec_ipsec::{
    DropReason, Flow, Mode, PacketBuf, Protocol, SaConfig, Sad, SecurityAssociation, UdpEncap,
};
use serde::{Deserialize, Serialize};

/// The time every SA is created and used at: lifetimes never matter here.
const NOW: Duration = Duration::from_secs(1);

fn main() {
    let stdin = io::stdin();
    let mut out = BufWriter::new(io::stdout().lock());
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let response = match panic::catch_unwind(AssertUnwindSafe(|| handle(&line))) {
            Ok(Ok(packet)) => Response::packet(&packet),
            Ok(Err(failure)) => Response::error(failure.to_string()),
            Err(payload) => Response::error(format!("panic: {}", panic_message(&*payload))),
        };
        // A closed stdout ends the session; there is no one left to tell.
        let Ok(json) = serde_json::to_string(&response) else {
            break;
        };
        if writeln!(out, "{json}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    op: Op,
    sa: SaSpec,
    packet: String,
    #[serde(default)]
    backend: Option<String>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Op {
    Seal,
    Open,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SaSpec {
    protocol: ProtocolSpec,
    spi: u32,
    mode: ModeSpec,
    src: IpAddr,
    dst: IpAddr,
    #[serde(default)]
    encap: Option<EncapSpec>,
    #[serde(default = "encr_null")]
    encr: u16,
    #[serde(default)]
    encr_key: String,
    #[serde(default)]
    integ: u16,
    #[serde(default)]
    integ_key: String,
    #[serde(default)]
    esn: bool,
    #[serde(default = "seq_one")]
    seq: u64,
    #[serde(default = "window_default")]
    replay_window: u32,
}

fn encr_null() -> u16 {
    EncrId::NULL.0
}
fn seq_one() -> u64 {
    1
}
fn window_default() -> u32 {
    64
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum ProtocolSpec {
    Esp,
    Ah,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum ModeSpec {
    Tunnel,
    Transport,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct EncapSpec {
    sport: u16,
    dport: u16,
}

#[derive(Serialize)]
struct Response {
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    packet: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl Response {
    fn packet(bytes: &[u8]) -> Self {
        Response {
            ok: true,
            packet: Some(hex::encode(bytes)),
            error: None,
        }
    }

    fn error(error: String) -> Self {
        Response {
            ok: false,
            packet: None,
            error: Some(error),
        }
    }
}

/// Why a request produced no packet.
enum Failure {
    /// The request itself is malformed or names an SA flowsec refuses.
    BadRequest(String),
    /// The core dropped the packet.
    Drop(DropReason),
    /// `open` found something other than IPsec to decapsulate.
    NotDecapsulated(&'static str),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::BadRequest(why) => write!(f, "bad request: {why}"),
            Failure::Drop(reason) => f.write_str(reason.name()),
            Failure::NotDecapsulated(what) => f.write_str(what),
        }
    }
}

impl From<DropReason> for Failure {
    fn from(reason: DropReason) -> Self {
        Failure::Drop(reason)
    }
}

impl From<SealError> for Failure {
    fn from(e: SealError) -> Self {
        match e {
            SealError::Drop(reason) => Failure::Drop(reason),
            // A single SA on a whole packet: neither happens here.
            other => Failure::BadRequest(other.to_string()),
        }
    }
}

fn bad(why: impl std::fmt::Display) -> Failure {
    Failure::BadRequest(why.to_string())
}

fn handle(line: &str) -> Result<Vec<u8>, Failure> {
    let request: Request = serde_json::from_str(line).map_err(bad)?;
    let backend = request.backend.as_deref().unwrap_or("auto");
    let provider =
        Provider::by_name(backend).ok_or_else(|| bad(format!("unknown backend {backend:?}")))?;
    let packet = hex::decode(&request.packet).map_err(|e| bad(format!("packet: {e}")))?;
    let config = sa_config(&request.sa)?;
    let mut sa = SecurityAssociation::new(&config, &provider, NOW).map_err(bad)?;
    match request.op {
        Op::Seal => {
            let last = request
                .sa
                .seq
                .checked_sub(1)
                .ok_or_else(|| bad("seq must be at least 1"))?;
            sa.skip_seq_to(last).map_err(bad)?;
            seal(sa, &config, &packet)
        }
        Op::Open => {
            if request.sa.seq > 1 {
                sa.replay_window_mut()
                    .commit(request.sa.seq - 1)
                    .map_err(|e| bad(format!("seq: {e}")))?;
            }
            open(sa, &packet)
        }
    }
}

fn sa_config(spec: &SaSpec) -> Result<SaConfig, Failure> {
    let mode = match spec.mode {
        ModeSpec::Tunnel => Mode::Tunnel,
        ModeSpec::Transport => Mode::Transport,
    };
    if spec.src.is_ipv4() != spec.dst.is_ipv4() {
        return Err(bad("src and dst are of different address families"));
    }
    let encr_key = hex::decode(&spec.encr_key).map_err(|e| bad(format!("encr_key: {e}")))?;
    let integ_key = hex::decode(&spec.integ_key).map_err(|e| bad(format!("integ_key: {e}")))?;
    let mut config = SaConfig::esp(spec.spi, mode, spec.src, spec.dst)
        .with_encr(EncrId(spec.encr), &encr_key)
        .with_integ(IntegId(spec.integ), &integ_key);
    config.protocol = match spec.protocol {
        ProtocolSpec::Esp => Protocol::Esp,
        ProtocolSpec::Ah => Protocol::Ah,
    };
    config.encap = spec.encap.map(|e| UdpEncap::udp(e.sport, e.dport));
    config.esn = spec.esn;
    config.replay_window = spec.replay_window;
    Ok(config)
}

fn seal(sa: SecurityAssociation, config: &SaConfig, packet: &[u8]) -> Result<Vec<u8>, Failure> {
    let mut sad = Sad::new();
    sad.add(sa).map_err(bad)?;
    let template = SaTemplate {
        protocol: config.protocol,
        mode: config.mode,
        tunnel: (config.mode == Mode::Tunnel).then_some((config.src, config.dst)),
        level: Level::Require,
        reqid: 0,
    };
    // In transport mode the SA is found by the packet's addresses; the SA's
    // own are the ones the caller means, whatever the packet says.
    let flow = Flow {
        src: config.src,
        dst: config.dst,
        protocol: 0,
        src_port: 0,
        dst_port: 0,
        fragment: false,
    };
    let bundle = process::resolve(&sad, &[template], &flow, NOW)?;
    let mut buf = PacketBuf::from_packet(packet);
    let egress = process::outbound(&mut sad, &bundle, &mut buf, NOW)?;
    Ok(egress.to_packet(buf.as_slice())?)
}

fn open(sa: SecurityAssociation, packet: &[u8]) -> Result<Vec<u8>, Failure> {
    let mut sad = Sad::new();
    sad.add(sa).map_err(bad)?;
    let mut buf = PacketBuf::from_packet(packet);
    match process::inbound_packet(&mut sad, &mut buf, NOW)? {
        Inbound::Decapsulated(_) => Ok(buf.as_slice().to_vec()),
        Inbound::NatKeepalive => Err(Failure::NotDecapsulated("nat_keepalive")),
        Inbound::Ike => Err(Failure::NotDecapsulated("ike")),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}
