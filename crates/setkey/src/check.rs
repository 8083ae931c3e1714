//! Checks across statements of one file: the same SA added twice, and
//! policies that clash. The file is replayed against a scratch SAD key
//! set and a scratch [`Spd`], so a file that flushes or deletes first and
//! then adds again is fine, and the SPD's own rule (no two policies of one
//! direction and priority with overlapping selectors) is reported with
//! the line that breaks it, before anything is applied.
//!
//! Clashes with what the daemon already holds from elsewhere are found
//! when the daemon applies the commands.

use std::net::IpAddr;

use flowsec_ipsec::sa::SaId;
use flowsec_ipsec::spd::Spd;

use crate::error::{ErrorKind, ParseError};
use crate::model::{Command, Statement};

pub(crate) fn check(file: &str, statements: &[Statement]) -> Result<(), ParseError> {
    let mut sas: Vec<(IpAddr, SaId)> = Vec::new();
    let mut spd = Spd::new();
    for s in statements {
        let fail = |kind| Err(ParseError::new(file, s.pos, kind));
        match &s.command {
            Command::Add(c) => {
                let id = c.id();
                if sas.iter().any(|(_, known)| *known == id) {
                    return fail(ErrorKind::DuplicateSa);
                }
                sas.push((c.src, id));
            }
            Command::Delete { id, .. } => sas.retain(|(_, known)| known != id),
            Command::DeleteAll { src, dst, protocol } => {
                sas.retain(|(s, id)| !(s == src && id.dst == *dst && id.protocol == *protocol))
            }
            Command::Flush(protocol) => {
                sas.retain(|(_, id)| protocol.is_some_and(|p| p != id.protocol))
            }
            Command::SpdAdd(policy) => {
                if let Err(e) = spd.add(policy.clone()) {
                    return fail(ErrorKind::Policy(e));
                }
            }
            Command::SpdDelete {
                direction,
                selector,
            } => {
                // A policy from an earlier file may be meant: not an error.
                let _ = spd.remove(*direction, selector);
            }
            Command::SpdFlush => spd.flush(),
            Command::Get { .. } | Command::Dump(_) | Command::SpdDump => {}
        }
    }
    Ok(())
}
