//! What `flowsec ctl` asks and what the daemon answers, as types: the
//! daemon fills them, `flowsec ctl` reads them, and both encodings are
//! these types through serde: vici (`crate::vici::format`, the
//! `flowsec-*` commands) and the control socket's JSON (one request line,
//! one document; kept for scripts that speak JSON, e.g. scripts/soak.sh).

use serde::{Deserialize, Serialize};

/// A request, as the control socket's JSON names it (`{"cmd": "sas"}`);
/// over vici the command is `flowsec-` and the name.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "cmd", rename_all = "lowercase")]
pub enum Request {
    /// `ctl status`.
    Status,
    /// `ctl sas`.
    Sas,
    /// `ctl policies`.
    Policies,
    /// `ctl stats`.
    Stats,
    /// `ctl reload`.
    Reload,
    /// `flowsec setkey`: a setkey file's text (it holds keys).
    Setkey {
        /// The name its errors carry.
        #[serde(default)]
        name: Option<String>,
        /// The statements.
        text: String,
    },
    /// Bring up an IKE SA and/or a CHILD_SA (queued; vici's `initiate`
    /// waits instead).
    Initiate(Names),
    /// Delete SAs (queued).
    Terminate(Names),
    /// Rekey SAs (queued).
    Rekey(Names),
}

/// `flowsec-setkey` without its `text`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MissingText;

impl core::fmt::Display for MissingText {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("setkey: missing \"text\"")
    }
}

impl std::error::Error for MissingText {}

/// What `initiate`, `terminate` and `rekey` act on.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct Names {
    /// The connection, or `#UID`.
    #[serde(default)]
    pub ike: Option<String>,
    /// The child by its config name.
    #[serde(default)]
    pub child: Option<String>,
}

impl Request {
    /// The request for vici command `command` (`flowsec-sas`, …) with
    /// its message `text` values; `None` for another command.
    pub fn from_vici(
        command: &str,
        message: &flowsec_wire::vici::Section,
    ) -> Option<Result<Request, MissingText>> {
        let cmd = command.strip_prefix("flowsec-")?;
        let names = || Names {
            ike: message.str("ike").map(String::from),
            child: message.str("child").map(String::from),
        };
        Some(Ok(match cmd {
            "status" => Request::Status,
            "sas" => Request::Sas,
            "policies" => Request::Policies,
            "stats" => Request::Stats,
            "reload" => Request::Reload,
            "setkey" => match message.str("text") {
                Some(text) => Request::Setkey {
                    name: message.str("name").map(String::from),
                    text: text.to_string(),
                },
                None => return Some(Err(MissingText)),
            },
            "initiate" => Request::Initiate(names()),
            "terminate" => Request::Terminate(names()),
            "rekey" => Request::Rekey(names()),
            _ => return None,
        }))
    }
}

/// An answer: each request's own shape.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(untagged)]
pub enum Answer {
    /// `status`.
    Status(Status),
    /// `sas`.
    Sas(Sas),
    /// `policies` (JSON: an array; vici: under `policies`).
    Policies(Policies),
    /// `stats`.
    Stats(StatsAnswer),
    /// `reload`.
    Reload(Reloaded),
    /// `setkey`.
    Setkey(SetkeyDone),
    /// `initiate`, `terminate`, `rekey`: how many SAs were acted on.
    Queued(Queued),
}

/// `ctl status`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Status {
    /// The TUN device.
    pub tun: String,
    /// Seconds since start.
    pub uptime_s: f64,
    /// Worker threads.
    pub workers: usize,
    /// Each worker's health.
    pub worker_health: Vec<WorkerHealth>,
    /// SAs in the SAD.
    pub sas: usize,
    /// Policies in the SPD.
    pub policies: usize,
    /// The nftables table that keeps plaintext in.
    pub plaintext_filter: PlaintextFilter,
    /// The control thread's effective capabilities.
    pub capabilities: Vec<String>,
    /// Whether `no_new_privs` is set.
    pub no_new_privs: bool,
    /// Control clients refused for their credentials.
    pub ctl_refused: u64,
}

/// One worker's health.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct WorkerHealth {
    /// Its number.
    pub worker: usize,
    /// Whether it missed its last deadline.
    pub late: bool,
    /// Deadlines missed.
    pub missed_deadlines: u64,
    /// Changes waiting for it.
    pub pending_changes: usize,
}

/// The plaintext filter's state.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PlaintextFilter {
    /// The table, when it is in place.
    pub table: Option<String>,
    /// Why it is out of date, when it is.
    pub stale: Option<String>,
}

/// `ctl sas`: the IKE SAs and every SA of the SAD.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Sas {
    /// IKE SAs with their CHILD_SAs.
    pub ike_sas: Vec<IkeSa>,
    /// The SAD, with each SA's live counters.
    pub sas: Vec<Sa>,
}

/// One IKE SA, named as `swanctl --list-sas` names things.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub struct IkeSa {
    pub name: String,
    pub uniqueid: u32,
    pub state: String,
    pub initiator: bool,
    pub initiator_spi: String,
    pub responder_spi: String,
    pub local_host: String,
    pub local_port: u16,
    pub local_id: String,
    pub remote_host: String,
    pub remote_port: u16,
    pub remote_id: String,
    pub local_vips: Vec<String>,
    pub remote_vips: Vec<String>,
    pub dns: Vec<String>,
    pub nat: bool,
    pub transport: String,
    pub proposal: String,
    pub established_s: Option<u64>,
    pub rekey_in_s: Option<u64>,
    pub child_sas: Vec<ChildSa>,
}

/// One CHILD_SA with its two SAs' counters.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub struct ChildSa {
    pub name: String,
    pub reqid: u32,
    pub state: String,
    pub mode: String,
    pub protocol: String,
    pub encap: bool,
    pub per_cpu: bool,
    pub cpu: Option<u32>,
    pub spi_in: String,
    pub spi_out: String,
    pub proposal: String,
    pub dh_group: Option<String>,
    pub cpi_in: Option<String>,
    pub cpi_out: Option<String>,
    pub bytes_in: u64,
    pub packets_in: u64,
    pub bytes_out: u64,
    pub packets_out: u64,
    pub install_time_s: u64,
    pub rekey_in_s: Option<u64>,
    pub life_in_s: Option<u64>,
    pub local_ts: Vec<String>,
    pub remote_ts: Vec<String>,
}

/// One SA of the SAD (no keys) with the live state of the worker copy
/// that carries its traffic.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub struct Sa {
    pub protocol: String,
    pub spi: String,
    pub mode: String,
    pub src: String,
    pub dst: String,
    pub encap: Option<Encap>,
    pub encr: String,
    pub integ: String,
    pub esn: bool,
    pub reqid: u32,
    pub cpu: Option<u32>,
    pub worker: Option<usize>,
    pub state: String,
    pub bytes: u64,
    pub packets: u64,
    pub seq: u64,
    pub replay_window: u32,
    pub replay_drops: u64,
    pub auth_failures: u64,
    pub other_drops: u64,
    pub age_s: u64,
    pub last_use_s: Option<u64>,
}

/// UDP encapsulation's ports.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Encap {
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
}

/// `ctl policies`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Policies {
    /// The SPD in order.
    pub policies: Vec<Policy>,
}

/// One policy of the SPD.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub struct Policy {
    pub direction: String,
    pub src: String,
    pub dst: String,
    pub protocol: Option<u8>,
    pub priority: i64,
    pub action: PolicyAction,
    /// The policy as a setkey statement.
    pub setkey: String,
}

/// What a policy does: `none`, `discard`, or its IPsec rules.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(untagged)]
pub enum PolicyAction {
    /// `none` or `discard`.
    Word(String),
    /// setkey's rules (`esp/tunnel/A-B/require`).
    Rules(Vec<String>),
}

/// Named counters in their order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters(pub Vec<(String, u64)>);

impl Counters {
    /// Counters from a `named()` list.
    pub fn of<'a>(named: impl IntoIterator<Item = (&'a str, u64)>) -> Counters {
        Counters(named.into_iter().map(|(k, n)| (k.to_string(), n)).collect())
    }

    /// The counter `name` (0 when absent).
    pub fn get(&self, name: &str) -> u64 {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map_or(0, |(_, n)| *n)
    }
}

impl Serialize for Counters {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, n) in &self.0 {
            m.serialize_entry(k, n)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Counters {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Counters;
            fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str("named counters")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Counters, A::Error> {
                let mut c = Vec::new();
                while let Some((k, n)) = a.next_entry::<String, u64>()? {
                    c.push((k, n));
                }
                Ok(Counters(c))
            }
        }
        d.deserialize_map(V)
    }
}

/// One worker's counters (or all workers' summed), its drops by reason
/// beside them under `drops`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkerCounters {
    /// `sent`, `delivered`, …
    pub counters: Counters,
    /// Drops by reason (only those that happened).
    pub drops: Counters,
}

impl Serialize for WorkerCounters {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.counters.0.len() + 1))?;
        for (k, n) in &self.counters.0 {
            m.serialize_entry(k, n)?;
        }
        m.serialize_entry("drops", &self.drops)?;
        m.end()
    }
}

impl<'de> Deserialize<'de> for WorkerCounters {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = WorkerCounters;
            fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str("a worker's counters")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<WorkerCounters, A::Error> {
                let mut w = WorkerCounters::default();
                while let Some(k) = a.next_key::<String>()? {
                    if k == "drops" {
                        w.drops = a.next_value()?;
                    } else {
                        w.counters.0.push((k, a.next_value()?));
                    }
                }
                Ok(w)
            }
        }
        d.deserialize_map(V)
    }
}

/// `ctl stats`: the workers' counters, their total, and the control
/// plane's parts that run.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct StatsAnswer {
    /// Every worker's summed.
    pub total: WorkerCounters,
    /// Per worker.
    pub workers: Vec<WorkerCounters>,
    /// IKE's (with `ike_sas`), when IKE runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ike: Option<Counters>,
    /// IKE's receive queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ike_queue: Option<Counters>,
    /// The TCP/TLS stream thread's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<Counters>,
    /// The metrics thread's (`--metrics`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Counters>,
    /// The vici server's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vici: Option<Counters>,
}

/// `ctl reload`: what became of the files' contents.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct Reloaded {
    /// The setkey file's SAs and policies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setkey: Option<SetkeyReloaded>,
    /// The setkey file's warnings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
    /// The connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ike: Option<ConnsReloaded>,
}

/// A reload's connections by fate.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
#[allow(missing_docs)]
pub struct ConnsReloaded {
    pub added: Vec<String>,
    pub replaced: Vec<String>,
    pub removed: Vec<String>,
    pub unchanged: Vec<String>,
}

/// A reload's setkey file.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
#[allow(missing_docs)]
pub struct SetkeyReloaded {
    pub kept: usize,
    pub added: usize,
    pub removed: usize,
    pub policies_changed: bool,
}

/// `flowsec setkey`'s answer.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct SetkeyDone {
    /// Changes applied.
    pub applied: usize,
    /// What the file should not have said.
    pub warnings: Vec<String>,
    /// The answers to `get`, `dump`, `spddump`, in setkey's format.
    pub output: String,
}

/// How many SAs a request acted on.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct Queued {
    /// SAs.
    pub ok: usize,
}

macro_rules! answer_from {
    ($($variant:ident($ty:ty)),*) => {$(
        impl From<$ty> for Answer {
            fn from(a: $ty) -> Answer {
                Answer::$variant(a)
            }
        }
    )*};
}

answer_from!(
    Status(Status),
    Sas(Sas),
    Policies(Policies),
    Stats(StatsAnswer),
    Reload(Reloaded),
    Setkey(SetkeyDone),
    Queued(Queued)
);

impl Answer {
    /// The control socket's JSON document (the policies a bare array, as
    /// they always were).
    pub fn to_json(&self) -> serde_json::Value {
        let v = match self {
            Answer::Policies(p) => serde_json::to_value(&p.policies),
            other => serde_json::to_value(other),
        };
        v.unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }))
    }
}
