//! Applying setkey statements, all or nothing: a file (or `-c` input, or
//! `-D`/`-F` from the command line) is staged against a copy of the
//! control plane's model; any error names the file, line and column of the
//! statement, and nothing of the input is kept. What was staged becomes a
//! list of [`Change`]s, which every worker applies between two batches.

use core::time::Duration;
use std::collections::BTreeMap;

use flowsec_crypto::Provider;
use flowsec_ipsec::{Protocol, SaConfig, SaId, SecurityAssociation, Spd};
use flowsec_setkey::Command;
use flowsec_wire::udp_encap::NAT_T_PORT;
use zeroize::Zeroizing;

use crate::seqstate::{NonceKey, SeqRange, SeqState};

mod error;
pub use error::{ConfigError, StatementError};

/// What the control plane knows of the configuration: each SA as it was
/// added, without its keys (those live only in the workers' SAs), and the
/// SPD.
#[derive(Debug, Clone, Default)]
pub struct Model {
    /// SAs by (protocol, SPI, destination).
    pub sas: BTreeMap<SaId, SaConfig>,
    /// Policies.
    pub spd: Spd,
    /// Manual SAs whose nonce is their sequence number, by a keyed tag of
    /// their key (`nonce_key_tag`; never the key): a second SA under the
    /// same key is refused. Entries of SAs that are gone are pruned on
    /// the next add.
    pub nonce_keys: BTreeMap<SaId, [u8; 16]>,
}

/// A tag of what makes `config`'s nonces ([`NonceKey`]: protocol,
/// algorithm, key with its salt) for comparing keys without keeping them
/// ([`keyed_tag`]). `None` where the IV is not the sequence number.
fn nonce_key_tag(config: &SaConfig) -> Option<[u8; 16]> {
    NonceKey::of(config).map(|key| keyed_tag(&key.parts()))
}

/// A tag of all of `config`, keys included, to tell whether a reloaded
/// file gives an SA anew or as it was ([`keyed_tag`]; never the keys).
pub(crate) fn fingerprint(config: &SaConfig) -> [u8; 16] {
    // Every field (SaConfig's Debug leaves some out), then the keys with
    // their lengths. Destructured: a new field must be added here.
    let SaConfig {
        protocol,
        spi,
        mode,
        src,
        dst,
        encap,
        encr,
        encr_key: ek,
        integ,
        integ_key: ik,
        ipcomp,
        replay_window,
        esn,
        lifetime,
        tfc_pad_to,
        reqid,
        cpu,
    } = config;
    let fields = format!(
        "{protocol:?}|{spi}|{mode:?}|{src}|{dst}|{encap:?}|{encr:?}|{integ:?}|{ipcomp:?}|{replay_window}|{esn}|{lifetime:?}|{tfc_pad_to}|{reqid}|{cpu:?}"
    );
    keyed_tag(&[
        fields.as_bytes(),
        &(ek.len() as u32).to_be_bytes(),
        ek,
        &(ik.len() as u32).to_be_bytes(),
        ik,
    ])
}

/// HMAC-SHA-256 of `parts` under a secret drawn once per process,
/// truncated to 128 bits: equal inputs give equal tags, and a tag says
/// nothing of a key.
fn keyed_tag(parts: &[&[u8]]) -> [u8; 16] {
    static SECRET: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    let secret = SECRET.get_or_init(|| {
        use flowsec_ike::random::{OsRandom, Random};
        let mut s = [0u8; 32];
        OsRandom.fill(&mut s);
        s
    });
    let mac = flowsec_crypto::fixed::hmac_sha256(secret, parts);
    let mut tag = [0u8; 16];
    tag.copy_from_slice(&mac[..16]);
    tag
}

/// One step for the workers, in order.
#[derive(Debug)]
pub enum Change {
    /// Create this SA (the config still has its keys).
    AddSa(Box<SaConfig>),
    /// Remove an SA.
    RemoveSa(SaId),
    /// Replace the SPD.
    Spd(Spd),
    /// New UDP encapsulation ports for an SA (IKE follows a NAT rebinding).
    Encap(SaId, flowsec_ipsec::UdpEncap),
    /// New outer addresses and encapsulation for an SA, its state kept
    /// (IKE follows a MOBIKE update, RFC 4555 §3.5).
    Move(SaId, flowsec_ipsec::Endpoints),
    /// The sequence numbers a manual SA may use ([`crate::seqstate`]):
    /// start above `from`, stop at `ceiling`.
    Seq(SaId, SeqRange),
}

/// A question in the input, answered once the changes are in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// `get`: one SA.
    Get(SaId),
    /// `dump [protocol]` (`-D`).
    Dump(Option<Protocol>),
    /// `spddump` (`-DP`).
    SpdDump,
}

/// Input that passed every check.
#[derive(Debug)]
pub struct Staged {
    /// The model once the changes are applied.
    pub model: Model,
    /// What the workers must do.
    pub changes: Vec<Change>,
    /// Queries, in input order.
    pub queries: Vec<Query>,
    /// RFC 8221 and similar warnings, with file and line.
    pub warnings: Vec<String>,
    /// Statements in the input.
    pub statements: usize,
}

/// What the host can do, which some SAs need.
#[derive(Debug, Clone, Copy)]
pub struct Capabilities {
    /// UDP port 4500 over IPv4 is ours (ESP in UDP).
    pub udp4: bool,
    /// Likewise over IPv6.
    pub udp6: bool,
}

impl Capabilities {
    /// ESP in UDP is possible between addresses of `addr`'s family.
    pub fn udp_for(&self, addr: std::net::IpAddr) -> bool {
        if addr.is_ipv4() {
            self.udp4
        } else {
            self.udp6
        }
    }
}

/// Check `text` (named `name` in errors) against `model`; nothing changes
/// until the caller commits the result.
pub fn stage(
    model: &Model,
    name: &str,
    text: &str,
    provider: &Provider,
    caps: Capabilities,
    now: Duration,
) -> Result<Staged, ConfigError> {
    let statements = flowsec_setkey::parse_statements(name, text).map_err(ConfigError::Setkey)?;
    let mut staged = Staged {
        model: model.clone(),
        changes: Vec::new(),
        queries: Vec::new(),
        warnings: Vec::new(),
        statements: statements.len(),
    };
    let mut spd_changed = false;
    for st in statements {
        let line = st.pos.line;
        let applied = staged.statement(st.command, provider, caps, now, |w| {
            format!("{name}:{line}: {w}")
        });
        spd_changed |= applied.map_err(|problem| ConfigError::Statement {
            file: name.to_string(),
            line: st.pos.line,
            column: st.pos.column,
            problem,
        })?;
    }
    if spd_changed {
        staged.changes.push(Change::Spd(staged.model.spd.clone()));
    }
    Ok(staged)
}

impl Staged {
    /// Apply one statement to the staged model; true if it changed the
    /// SPD. `warn` places a warning (FILE:LINE).
    fn statement(
        &mut self,
        command: Command,
        provider: &Provider,
        caps: Capabilities,
        now: Duration,
        warn: impl Fn(&str) -> String,
    ) -> Result<bool, StatementError> {
        let m = &mut self.model;
        match command {
            Command::Add(config) => {
                return self
                    .add_sa(config, provider, caps, now, warn)
                    .map(|()| false)
            }
            Command::Delete { id, .. } => {
                m.sas.remove(&id).ok_or(StatementError::NoSa(id))?;
                self.changes.push(Change::RemoveSa(id));
            }
            Command::DeleteAll { src, dst, protocol } => {
                self.remove_sas(|id, c| c.src == src && c.dst == dst && id.protocol == protocol)
            }
            Command::Flush(protocol) => {
                self.remove_sas(|id, _| protocol.is_none_or(|p| id.protocol == p))
            }
            Command::SpdAdd(policy) => {
                m.spd.add(policy).map_err(StatementError::Spd)?;
                return Ok(true);
            }
            Command::SpdDelete {
                direction,
                selector,
            } => {
                m.spd
                    .remove(direction, &selector)
                    .map_err(StatementError::Spd)?;
                return Ok(true);
            }
            Command::SpdFlush => {
                m.spd.flush();
                return Ok(true);
            }
            Command::Get { id, .. } => {
                if !m.sas.contains_key(&id) {
                    return Err(StatementError::NoSa(id));
                }
                self.queries.push(Query::Get(id));
            }
            Command::Dump(protocol) => self.queries.push(Query::Dump(protocol)),
            Command::SpdDump => self.queries.push(Query::SpdDump),
        }
        Ok(false)
    }

    /// `add`: checked (UDP encapsulation possible, keys that build a
    /// transform, a new SPI), then staged without its keys in the model.
    fn add_sa(
        &mut self,
        config: SaConfig,
        provider: &Provider,
        caps: Capabilities,
        now: Duration,
        warn: impl Fn(&str) -> String,
    ) -> Result<(), StatementError> {
        for w in config.warnings() {
            self.warnings.push(warn(&w.to_string()));
        }
        if let Some(encap) = config.encap {
            if encap.src_port != NAT_T_PORT || encap.dst_port != NAT_T_PORT {
                return Err(StatementError::EncapPort);
            }
            if !caps.udp_for(config.src) {
                return Err(StatementError::NoUdp {
                    ipv6: !config.src.is_ipv4(),
                });
            }
        }
        // A replayed packet is accepted without a window (setkey's default
        // is -r 0; RFC 4303 §3.4.3 says to enable it).
        if config.replay_window == 0 && config.has_integrity() {
            self.warnings.push(warn(&format!(
                "{:#x}: no replay window (-r 0): replayed packets are accepted; give -r 64 or more",
                config.spi
            )));
        }
        // Builds the transform: refuses bad key lengths and the like.
        let sa = SecurityAssociation::new(&config, provider, now).map_err(StatementError::Sa)?;
        if self.model.sas.contains_key(&sa.id()) {
            return Err(StatementError::SaExists(sa.id()));
        }
        // Two SAs counting from 1 under one key would repeat every nonce
        // (RFC 4106 §8.1, RFC 3686 §2.1): a per-resource set copied with
        // one key, or both directions given one.
        if let Some(tag) = nonce_key_tag(&config) {
            let m = &mut self.model;
            m.nonce_keys.retain(|id, _| m.sas.contains_key(id));
            if let Some((&other, _)) = m.nonce_keys.iter().find(|(_, t)| **t == tag) {
                return Err(StatementError::KeyReused(other));
            }
            m.nonce_keys.insert(sa.id(), tag);
        }
        self.model.sas.insert(sa.id(), without_keys(&config));
        self.changes.push(Change::AddSa(Box::new(config)));
        Ok(())
    }

    /// Remove (and stage the removal of) every SA `which` selects.
    fn remove_sas(&mut self, which: impl Fn(&SaId, &SaConfig) -> bool) {
        let ids: Vec<SaId> = self
            .model
            .sas
            .iter()
            .filter(|(id, c)| which(id, c))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.model.sas.remove(&id);
            self.changes.push(Change::RemoveSa(id));
        }
    }
}

/// Give each manual SA of `changes` whose nonce is its counter the
/// sequence numbers it may use, recorded under the state directory first
/// ([`crate::seqstate`]): a [`Change::Seq`] right after its
/// [`Change::AddSa`]. Returns the changes and what `state` becomes once
/// they are applied (opened at `dir` the first time one is needed;
/// removed SAs forgotten, their files kept): the caller keeps it only if
/// the batch goes to the workers, so a refused batch changes nothing (the
/// files may have grown, which only skips numbers).
pub fn reserve_sequences(
    changes: Vec<Change>,
    state: &Option<SeqState>,
    dir: &std::path::Path,
) -> Result<(Vec<Change>, Option<SeqState>), ConfigError> {
    let mut state = state.clone();
    let state = &mut state;
    let mut out = Vec::with_capacity(changes.len());
    for change in changes {
        let seq = match &change {
            Change::AddSa(config) if crate::seqstate::fingerprint(config).is_some() => {
                if state.is_none() {
                    *state = Some(SeqState::open(dir).map_err(ConfigError::StateDir)?);
                }
                let range = state
                    .as_mut()
                    .map(|s| s.reserve(config))
                    .transpose()
                    .map_err(ConfigError::Sequence)?
                    .flatten();
                range.map(|r| Change::Seq(config.id(), r))
            }
            Change::RemoveSa(id) => {
                if let Some(s) = state.as_mut() {
                    s.forget(id);
                }
                None
            }
            _ => None,
        };
        out.push(change);
        out.extend(seq);
    }
    Ok((out, state.take()))
}

/// `config` with its keys emptied: what the model keeps.
pub(crate) fn without_keys(config: &SaConfig) -> SaConfig {
    let mut c = config.clone();
    c.encr_key = Zeroizing::new(Vec::new());
    c.integ_key = Zeroizing::new(Vec::new());
    c
}

/// A [`Change`] made concrete for one worker.
#[derive(Debug)]
pub enum WorkerChange {
    /// The worker's own copy of a new SA, and the generation of this
    /// installation of it, the same on every worker (stamped as the
    /// control plane sends it; 0 for those of the start).
    AddSa(Box<SecurityAssociation>, u64),
    /// Remove an SA.
    RemoveSa(SaId),
    /// Replace the SPD; the number is the change's epoch, stamped as the
    /// control plane sends it: a worker whose SPD is older than the latest
    /// epoch sends nothing in the clear.
    Spd(Spd, u64),
    /// New UDP encapsulation ports for an SA.
    Encap(SaId, flowsec_ipsec::UdpEncap),
    /// New outer addresses and encapsulation for an SA.
    Move(SaId, flowsec_ipsec::Endpoints),
    /// A manual SA's sequence numbers.
    Seq(SaId, SeqRange),
    /// Raw IP packets from the first address to the second leave by this
    /// link hop (`crate::nexthop`), or, `None`, the kernel's way. For the
    /// worker's sender, not its databases.
    NextHop(crate::nexthop::Pair, Option<crate::nexthop::LinkHop>),
}

/// Turn `changes` into one list per worker: each gets its own SA objects
/// (an SA's sequence number and replay window are per worker state).
pub fn per_worker(
    changes: &[Change],
    workers: usize,
    provider: &Provider,
    now: Duration,
) -> Result<Vec<Vec<WorkerChange>>, ConfigError> {
    let mut out: Vec<Vec<WorkerChange>> = (0..workers).map(|_| Vec::new()).collect();
    for change in changes {
        for list in out.iter_mut() {
            list.push(match change {
                Change::AddSa(config) => WorkerChange::AddSa(
                    Box::new(
                        SecurityAssociation::new(config, provider, now).map_err(ConfigError::Sa)?,
                    ),
                    0,
                ),
                Change::RemoveSa(id) => WorkerChange::RemoveSa(*id),
                Change::Spd(spd) => WorkerChange::Spd(spd.clone(), 0),
                Change::Encap(id, encap) => WorkerChange::Encap(*id, *encap),
                Change::Move(id, to) => WorkerChange::Move(*id, *to),
                Change::Seq(id, range) => WorkerChange::Seq(*id, *range),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
