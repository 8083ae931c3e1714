//! Why a configuration was refused ([`ConfigError`]), and why one setkey
//! statement that parses cannot be applied ([`StatementError`]). The
//! errors of the setkey, IPsec and IKE crates and of [`crate::seqstate`]
//! are wrapped unchanged.
//!
//! The texts are the ones `flowsec up` and `flowsec setkey` have always
//! printed: tests and users grep them (`FILE:LINE:COL: …` for setkey
//! input, `FILE:LINE: KEY: …` for swanctl.conf).

use core::fmt;
use std::io;

use flowsec_ipsec::spd::SpdError;
use flowsec_ipsec::{SaError, SaId};
use flowsec_wire::udp_encap::NAT_T_PORT;

use crate::seqstate::SeqStateError;

/// A configuration that could not be applied; nothing of it was.
#[derive(Debug)]
#[non_exhaustive]
pub enum ConfigError {
    /// The setkey file could not be read.
    Read {
        /// The file.
        file: String,
        /// Why.
        error: io::Error,
    },
    /// The setkey input does not parse (`FILE:LINE:COL: …`).
    Setkey(flowsec_setkey::ParseError),
    /// A setkey statement parses but cannot be applied.
    Statement {
        /// The input's name (a path, or `-`).
        file: String,
        /// The statement's line, from 1.
        line: u32,
        /// Its column, from 1.
        column: u32,
        /// Why.
        problem: StatementError,
    },
    /// The IKE configuration (`-c`, swanctl.conf) was refused.
    Ike(flowsec_ike::config::ConfigError),
    /// The state directory for the sequence numbers of manual SAs could
    /// not be opened.
    StateDir(SeqStateError),
    /// Sequence numbers could not be recorded for a new manual SA.
    Sequence(SeqStateError),
    /// A worker's copy of an SA could not be made.
    Sa(SaError),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Read { file, error } => write!(f, "{file}: {error}"),
            ConfigError::Setkey(e) => e.fmt(f),
            ConfigError::Statement {
                file,
                line,
                column,
                problem,
            } => write!(f, "{file}:{line}:{column}: {problem}"),
            ConfigError::Ike(e) => e.fmt(f),
            ConfigError::StateDir(e) => write!(
                f,
                "state directory (--state-dir) for the sequence numbers of manual \
                 AES-GCM/CCM/CTR/ChaCha20 SAs, which must never repeat a nonce: {e}"
            ),
            ConfigError::Sequence(e) => e.fmt(f),
            ConfigError::Sa(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Read { error, .. } => Some(error),
            ConfigError::Setkey(e) => Some(e),
            ConfigError::Ike(e) => Some(e),
            ConfigError::StateDir(e) | ConfigError::Sequence(e) => Some(e),
            ConfigError::Statement { .. } | ConfigError::Sa(_) => None,
        }
    }
}

/// Why a setkey statement that parses cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StatementError {
    /// ESP in UDP on a port other than 4500.
    EncapPort,
    /// ESP in UDP over a family whose port 4500 could not be opened at
    /// start.
    NoUdp {
        /// IPv6 (else IPv4).
        ipv6: bool,
    },
    /// The SA's algorithms, keys or replay window were refused.
    Sa(SaError),
    /// `add` of an SA that exists.
    SaExists(SaId),
    /// `add` of a counter-nonce SA (AES-GCM, AES-CCM, ChaCha20-Poly1305,
    /// AES-GMAC, AES-CTR) with the key of this one.
    KeyReused(SaId),
    /// `delete` or `get` of an SA that does not.
    NoSa(SaId),
    /// `spdadd` of a policy that exists or overlaps; `spddelete` of one
    /// that does not.
    Spd(SpdError),
}

impl fmt::Display for StatementError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatementError::EncapPort => write!(
                f,
                "UDP encapsulation is supported on port {NAT_T_PORT} only, so far"
            ),
            StatementError::NoUdp { ipv6 } => write!(
                f,
                "UDP port {NAT_T_PORT} over {} could not be opened at start (in use?): no ESP \
                 in UDP",
                if *ipv6 { "IPv6" } else { "IPv4" }
            ),
            StatementError::Sa(e) => e.fmt(f),
            StatementError::SaExists(id) => write!(f, "SA {id} already exists"),
            StatementError::KeyReused(id) => write!(
                f,
                "reuses the key of SA {id}: with this cipher the IV is the sequence number, so \
                 two SAs counting from 1 under one key would repeat every nonce; give each SA its \
                 own key"
            ),
            StatementError::NoSa(id) => write!(f, "no SA {id}"),
            StatementError::Spd(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for StatementError {}
