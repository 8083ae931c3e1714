//! `flowsec ctl reload` and SIGHUP: read the `-c` and `--setkey` files
//! again, check both whole as at start (an error names FILE:LINE and
//! changes nothing), then apply the difference: IKE connections through
//! [`flowsec_ike::Ike::reload`]; the file's manual SAs and policies
//! against what the file gave last time, an SA given as before kept with
//! its sequence number and replay window.

use core::fmt;
use std::collections::BTreeMap;

use flowsec_ipsec::spd::SpdError;
use flowsec_ipsec::{Direction, Policy, SaConfig, SaId, Selector};

use super::streams::listen_ports;
use super::{CommitError, Plane};
use crate::answers;
use crate::apply::{self, Change, ConfigError, Model, Staged};

/// What the `--setkey` file put in place last: its SAs (by a
/// fingerprint of everything, keys included, never the keys) and its
/// policies. What IKE or `ctl setkey` added is not in here, and a reload
/// leaves it alone.
#[derive(Debug, Default)]
pub(super) struct Manual {
    sas: BTreeMap<SaId, [u8; 16]>,
    policies: Vec<Policy>,
}

impl Manual {
    /// What a file staged against an empty model puts in place.
    pub(super) fn of(staged: &Staged) -> Manual {
        Manual {
            sas: added(&staged.changes)
                .filter(|(id, _)| staged.model.sas.contains_key(id))
                .map(|(id, c)| (id, apply::fingerprint(c)))
                .collect(),
            policies: staged.model.spd.iter().cloned().collect(),
        }
    }
}

/// The SAs `changes` add, the last one for each SA (a file may add,
/// delete and add one again).
fn added(changes: &[Change]) -> impl Iterator<Item = (SaId, &SaConfig)> {
    let mut last: BTreeMap<SaId, &SaConfig> = BTreeMap::new();
    for c in changes {
        if let Change::AddSa(config) = c {
            last.insert(config.id(), &**config);
        }
    }
    last.into_iter()
}

/// The manual part of a reload, checked and ready to commit.
struct SetkeyReload {
    name: String,
    model: Model,
    changes: Vec<Change>,
    manual: Manual,
    counts: answers::SetkeyReloaded,
    warnings: Vec<String>,
}

/// Why a reload changed nothing, or only part of what it read.
#[derive(Debug)]
pub(super) enum ReloadError {
    /// Started without `-c` or `--setkey`: there is nothing to read again.
    NoFiles,
    /// The IKE configuration was refused.
    Ike(flowsec_ike::config::ConfigError),
    /// A connection wants TCP that this daemon does not serve.
    Tcp(TcpNeeded),
    /// The file and what vici loaded do not fit together.
    Vici(String),
    /// The `--setkey` file was refused.
    Setkey(Box<SetkeyRefused>),
    /// The `--setkey` file's changes were refused or only partly applied
    /// ([`CommitError`]); with `ike_skipped`, the IKE configuration was
    /// then not reloaded.
    Commit {
        error: Box<CommitError>,
        ike_skipped: bool,
    },
}

impl fmt::Display for ReloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReloadError::NoFiles => write!(
                f,
                "this daemon was started without -c or --setkey; nothing changed"
            ),
            ReloadError::Ike(e) => write!(f, "{e}; nothing changed"),
            ReloadError::Tcp(e) => write!(f, "{e}; nothing changed"),
            ReloadError::Vici(e) => write!(f, "{e}; nothing changed"),
            ReloadError::Setkey(e) => write!(f, "{e}; nothing changed"),
            ReloadError::Commit { error, ike_skipped } => {
                error.fmt(f)?;
                if *ike_skipped {
                    f.write_str("; the IKE configuration was not reloaded")?;
                }
                Ok(())
            }
        }
    }
}

/// Why a connection over TCP cannot be had without a restart: the
/// stream thread and its listeners are set up at start only.
#[derive(Debug)]
pub(super) enum TcpNeeded {
    /// The daemon started without the stream thread.
    NoStreams,
    /// The stream thread does not listen on this port.
    Port(u16),
}

impl fmt::Display for TcpNeeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TcpNeeded::NoStreams => write!(
                f,
                "a connection has tcp_encap, and this daemon started without TCP: restart it"
            ),
            TcpNeeded::Port(port) => write!(
                f,
                "a connection wants TCP port {port}, which this daemon does not listen on (restart it, or give --tcp-listen {port})"
            ),
        }
    }
}

/// Why the `--setkey` file cannot replace what it gave last time.
#[derive(Debug)]
pub(super) enum SetkeyRefused {
    /// It could not be read, or does not stage on its own.
    Config(ConfigError),
    /// One of its SAs exists, put there by IKE or `ctl setkey`.
    Exists { name: String, id: SaId },
    /// One of its counter-nonce SAs has the key of an SA that stays.
    KeyReused { name: String, id: SaId, other: SaId },
    /// One of its policies does not fit the SPD as it is.
    Policy {
        name: String,
        direction: Direction,
        selector: Selector,
        error: SpdError,
    },
}

impl fmt::Display for SetkeyRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetkeyRefused::Config(e) => e.fmt(f),
            SetkeyRefused::Exists { name, id } => write!(
                f,
                "{name}: {id} exists already (installed by IKE or `ctl setkey`)"
            ),
            SetkeyRefused::KeyReused { name, id, other } => {
                write!(f, "{name}: {id} reuses the key of {other}")
            }
            SetkeyRefused::Policy {
                name,
                direction,
                selector,
                error,
            } => write!(f, "{name}: policy {direction} {selector:?}: {error}"),
        }
    }
}

impl Plane {
    /// Re-read the files and apply what changed; the answer says what
    /// was done, or why nothing was.
    pub(super) fn reload(&mut self) -> Result<answers::Reloaded, ReloadError> {
        crate::sys::notify::sd_notify("RELOADING=1");
        let answer = self.try_reload();
        crate::sys::notify::sd_notify("READY=1");
        answer
    }

    fn try_reload(&mut self) -> Result<answers::Reloaded, ReloadError> {
        if self.ike_path.is_none() && self.setkey_path.is_none() {
            return Err(ReloadError::NoFiles);
        }
        // Both files checked before either is applied.
        let ike = match &self.ike_path {
            Some(path) => {
                let file = flowsec_ike::config::load_with(
                    &self.provider,
                    path,
                    self.swanctl_dir.as_deref(),
                )
                .map_err(ReloadError::Ike)?;
                super::setup::log_ike_warnings(Some(&file));
                // What vici loaded stays loaded.
                let config = super::vici::merged(Some(&file), &self.loaded)
                    .map_err(|e| ReloadError::Vici(e.to_string()))?;
                self.check_streams(&config).map_err(ReloadError::Tcp)?;
                Some((file, config))
            }
            None => None,
        };
        let setkey = match self.setkey_path.clone() {
            Some(path) => Some(
                self.stage_setkey(&path)
                    .map_err(|e| ReloadError::Setkey(Box::new(e)))?,
            ),
            None => None,
        };
        let mut answer = answers::Reloaded::default();
        if let Some(s) = setkey {
            if let Err(error) = self.commit(&s.name, s.model, s.changes) {
                // The workers took the SA changes (the policy part was
                // undone): remember those SAs as the file's.
                self.manual.sas = s.manual.sas;
                return Err(ReloadError::Commit {
                    error: Box::new(error),
                    ike_skipped: self.ike_path.is_some(),
                });
            }
            self.manual = s.manual;
            answer.setkey = Some(s.counts);
            answer.warnings = Some(s.warnings);
        }
        if let Some((file, config)) = ike {
            self.file_config = Some(file);
            let r = self
                .ike_step(|p, now, k| p.ike.reload(now, config, k))
                .unwrap_or_default();
            answer.ike = Some(answers::ConnsReloaded {
                added: r.added,
                replaced: r.replaced,
                removed: r.removed,
                unchanged: r.unchanged,
            });
        }
        Ok(answer)
    }

    /// A connection over TCP needs the stream thread, listening on its
    /// port (`flowsec up` opened them before dropping privileges).
    pub(super) fn check_streams(
        &self,
        config: &flowsec_ike::config::Config,
    ) -> Result<(), TcpNeeded> {
        let Some(ike) = &self.ike else {
            return Ok(());
        };
        let wanted = listen_ports(&[], &config.connections);
        if wanted.is_empty() {
            return Ok(());
        }
        if ike.stream.is_none() {
            return Err(TcpNeeded::NoStreams);
        }
        match wanted.iter().find(|p| !ike.tcp_ports.contains(p)) {
            Some(port) => Err(TcpNeeded::Port(*port)),
            None => Ok(()),
        }
    }

    /// The `--setkey` file as a change of what it gave last time.
    fn stage_setkey(&self, path: &std::path::Path) -> Result<SetkeyReload, SetkeyRefused> {
        let name = path.display().to_string();
        let fresh = self.stage_fresh(path, &name)?;
        let want = Manual::of(&fresh);
        let mut model = self.model.clone();
        let mut changes = Vec::new();
        let (kept, removed, added_n) =
            self.sa_changes(&name, &fresh, &want, &mut model, &mut changes)?;
        let policies_changed = self.policy_changes(&name, &want, &mut model, &mut changes)?;
        Ok(SetkeyReload {
            name,
            model,
            changes,
            manual: want,
            counts: answers::SetkeyReloaded {
                kept,
                added: added_n,
                removed,
                policies_changed,
            },
            warnings: fresh.warnings,
        })
    }

    /// The file `path` (named `name`), read and staged on its own, against
    /// an empty model: all of it checked as at start.
    fn stage_fresh(&self, path: &std::path::Path, name: &str) -> Result<Staged, SetkeyRefused> {
        let text = zeroize::Zeroizing::new(std::fs::read_to_string(path).map_err(|error| {
            SetkeyRefused::Config(ConfigError::Read {
                file: name.to_string(),
                error,
            })
        })?);
        let now = self.start.elapsed();
        apply::stage(
            &Model::default(),
            name,
            &text,
            &self.provider,
            self.caps,
            now,
        )
        .map_err(SetkeyRefused::Config)
    }

    /// The SA part of a reload, into `model` and `changes`: an SA the file
    /// gave before and gives as it was is kept, one it no longer gives (or
    /// gives anew) removed, a new one added. Returns how many were kept,
    /// removed and added.
    fn sa_changes(
        &self,
        name: &str,
        fresh: &Staged,
        want: &Manual,
        model: &mut Model,
        changes: &mut Vec<Change>,
    ) -> Result<(usize, usize, usize), SetkeyRefused> {
        // What the file gave last time and is still there (`ctl setkey`
        // may have deleted some).
        let had: BTreeMap<SaId, [u8; 16]> = self
            .manual
            .sas
            .iter()
            .filter(|(id, _)| self.model.sas.contains_key(id))
            .map(|(id, f)| (*id, *f))
            .collect();
        let (mut kept, mut removed, mut added_n) = (0, 0, 0);
        for (id, fp) in &had {
            if want.sas.get(id) == Some(fp) {
                kept += 1;
            } else {
                model.sas.remove(id);
                changes.push(Change::RemoveSa(*id));
                removed += 1;
            }
        }
        for (id, config) in added(&fresh.changes) {
            if !want.sas.contains_key(&id) || had.get(&id) == want.sas.get(&id) {
                continue;
            }
            if model.sas.contains_key(&id) {
                let name = name.to_string();
                return Err(SetkeyRefused::Exists { name, id });
            }
            if let Some(tag) = fresh.model.nonce_keys.get(&id) {
                // Under the key of an SA that stays (IKE's or `ctl
                // setkey`'s), its nonces would repeat (RFC 4106 §8.1).
                let reused = model
                    .nonce_keys
                    .iter()
                    .find(|(other, t)| *t == tag && **other != id && model.sas.contains_key(other));
                if let Some((&other, _)) = reused {
                    let name = name.to_string();
                    return Err(SetkeyRefused::KeyReused { name, id, other });
                }
                model.nonce_keys.insert(id, *tag);
            }
            model.sas.insert(id, apply::without_keys(config));
            changes.push(Change::AddSa(Box::new(config.clone())));
            added_n += 1;
        }
        Ok((kept, removed, added_n))
    }

    /// The policy part of a reload, into `model` and `changes`: the
    /// file's policies of last time out (where they are still its own),
    /// its new ones in. Returns whether the SPD changed.
    fn policy_changes(
        &self,
        name: &str,
        want: &Manual,
        model: &mut Model,
        changes: &mut Vec<Change>,
    ) -> Result<bool, SetkeyRefused> {
        let mut spd = model.spd.clone();
        for p in self
            .manual
            .policies
            .iter()
            .filter(|p| !want.policies.contains(p))
        {
            // Only if it is still the file's (IKE or `ctl setkey` may have
            // put another at that selector since).
            if spd.iter().any(|q| q == p) {
                let _ = spd.remove(p.direction, &p.selector);
            }
        }
        for p in want
            .policies
            .iter()
            .filter(|p| !self.manual.policies.contains(p))
        {
            spd.add(p.clone()).map_err(|error| SetkeyRefused::Policy {
                name: name.to_string(),
                direction: p.direction,
                selector: p.selector,
                error,
            })?;
        }
        let policies_changed = spd.iter().ne(model.spd.iter());
        if policies_changed {
            model.spd = spd.clone();
            changes.push(Change::Spd(spd));
        }
        Ok(policies_changed)
    }
}
