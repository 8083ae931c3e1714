//! Applying a parsed setkey file to a fresh SAD and SPD, all or nothing:
//! any error names the file, line and column of the statement, and nothing
//! of the file is kept.

use core::fmt;
use core::time::Duration;
use std::path::Path;

use flowsec_crypto::Provider;
use flowsec_ipsec::{Sad, SecurityAssociation, Spd};
use flowsec_setkey::Command;

/// The databases a daemon runs with.
#[derive(Debug, Default)]
pub struct Databases {
    /// Security associations.
    pub sad: Sad,
    /// Security policies.
    pub spd: Spd,
}

/// A configuration file that could not be loaded.
#[derive(Debug)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Read and apply a setkey file to empty databases.
pub fn load_setkey(
    path: &Path,
    provider: &Provider,
    now: Duration,
) -> Result<Databases, ConfigError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError(format!("{name}: {e}")))?;
    let statements =
        flowsec_setkey::parse_statements(&name, &text).map_err(|e| ConfigError(e.to_string()))?;
    let mut db = Databases::default();
    for st in statements {
        let at =
            |what: String| ConfigError(format!("{name}:{}:{}: {what}", st.pos.line, st.pos.column));
        match st.command {
            Command::Add(config) => {
                for w in config.warnings() {
                    eprintln!("flowsec: warning: {name}:{}: {w}", st.pos.line);
                }
                if let Some(encap) = config.encap {
                    if !config.src.is_ipv4() || encap.src_port != 4500 || encap.dst_port != 4500 {
                        return Err(at(
                            "UDP encapsulation is supported on port 4500 over IPv4 only, so far"
                                .into(),
                        ));
                    }
                }
                let sa = SecurityAssociation::new(&config, provider, now)
                    .map_err(|e| at(e.to_string()))?;
                db.sad.add(sa).map_err(|e| at(e.to_string()))?;
            }
            Command::SpdAdd(policy) => db.spd.add(policy).map_err(|e| at(e.to_string()))?,
            Command::Delete { id, .. } => {
                db.sad.remove(&id).ok_or_else(|| at("no such SA".into()))?;
            }
            Command::DeleteAll { src, dst, protocol } => {
                let ids: Vec<_> = db
                    .sad
                    .iter()
                    .filter(|sa| sa.src() == src && sa.dst() == dst && sa.id().protocol == protocol)
                    .map(|sa| sa.id())
                    .collect();
                for id in ids {
                    db.sad.remove(&id);
                }
            }
            Command::Flush(protocol) => db.sad.flush(protocol),
            Command::SpdDelete {
                direction,
                selector,
            } => {
                db.spd
                    .remove(direction, &selector)
                    .map_err(|e| at(e.to_string()))?;
            }
            Command::SpdFlush => db.spd.flush(),
            // Queries have nothing to apply when loading a file.
            Command::Get { .. } | Command::Dump(_) | Command::SpdDump => {}
        }
    }
    Ok(db)
}
