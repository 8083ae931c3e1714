//! What loading a configuration noticed and let pass (strongSwan logs
//! these and goes on): a [`ConfigWarning`] is where (file, dotted key)
//! and a [`ConfigWarningKind`], what. [`super::load_with`] collects them
//! in [`super::Config::warnings`]; the daemon logs each.

use core::fmt;

/// Something in a configuration worth saying that did not refuse it.
/// Displays as `FILE: KEY: PROBLEM`, as a [`super::ConfigError`] does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning {
    /// The file name given to [`load_with`](super::load_with).
    pub file: String,
    /// The dotted key, e.g. `connections.gw.local`.
    pub key: String,
    /// What.
    pub kind: ConfigWarningKind,
}

/// What a [`ConfigWarning`] is about.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigWarningKind {
    /// Our certificate does not validate to a CA we hold, even with the
    /// intermediates in `x509/`. It is loaded and sent anyway: the peer
    /// may hold what completes its path (strongSwan leaves the path to
    /// the verifier).
    LocalCertUnverified {
        /// The certificate's subject.
        subject: String,
        /// Why (webpki's reason).
        why: String,
    },
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.file, self.key, self.kind)
    }
}

impl fmt::Display for ConfigWarningKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigWarningKind::LocalCertUnverified { subject, why } => write!(
                f,
                "our certificate \"{subject}\" does not validate: {why} (sent anyway: the peer may complete its path)"
            ),
        }
    }
}
