//! What a setkey file asks for: one [`Command`] per statement, in
//! flowsec's own SAD/SPD types so the daemon applies them without a
//! second translation.

use std::net::IpAddr;

use flowsec_ipsec::sa::{Protocol, SaConfig, SaId};
use flowsec_ipsec::spd::{Direction, Policy, Selector};

use crate::error::Pos;

/// One setkey statement (setkey(8) "Configuration syntax"). Exhaustive on
/// purpose: the daemon's `match` should break when a command is added.
#[derive(Debug, Clone)]
pub enum Command {
    /// `add src dst protocol spi [extensions] algorithm...;`
    ///
    /// The SA is fully checked (algorithms, key lengths, replay window,
    /// address families) but not yet created; without `-r` its replay
    /// window is 0 (off), as setkey(8) says for `-r`.
    Add(SaConfig),
    /// `get src dst protocol spi;`
    Get {
        /// Source address (setkey sends it; the SAD is keyed by `id`).
        src: IpAddr,
        /// (protocol, SPI, destination).
        id: SaId,
    },
    /// `delete src dst protocol spi;`
    Delete {
        /// Source address.
        src: IpAddr,
        /// (protocol, SPI, destination).
        id: SaId,
    },
    /// `deleteall src dst protocol;`: every SA of `protocol` between the
    /// two addresses.
    DeleteAll {
        /// Source address.
        src: IpAddr,
        /// Destination address.
        dst: IpAddr,
        /// ESP, AH or IPComp.
        protocol: Protocol,
    },
    /// `flush [protocol];` (`-F`): remove SAs, all or of one protocol.
    Flush(Option<Protocol>),
    /// `dump [protocol];` (`-D`): list SAs.
    Dump(Option<Protocol>),
    /// `spdadd src_range dst_range upperspec policy;`
    SpdAdd(Policy),
    /// `spddelete src_range dst_range upperspec -P direction;`
    SpdDelete {
        /// The policy's direction.
        direction: Direction,
        /// The policy's selector, exactly as added.
        selector: Selector,
    },
    /// `spdflush;` (`-FP`).
    SpdFlush,
    /// `spddump;` (`-DP`).
    SpdDump,
}

/// A [`Command`] with the position of its first token, for the daemon to
/// name the statement when applying it fails at run time (an SPI already
/// in the SAD, a policy that overlaps one loaded earlier).
#[derive(Debug, Clone)]
pub struct Statement {
    /// The command.
    pub command: Command,
    /// Where its first token is.
    pub pos: Pos,
}
