//! Why a configuration was refused: a [`ConfigError`] is where (file,
//! line, dotted key) and a [`ConfigErrorKind`], what. The errors that the
//! value parsers return on their own ([`value_error`](super::value_error):
//! [`ValueError`], [`SecretError`], [`ProposalError`], [`SelectorError`],
//! [`IdentityError`], [`EmptyListItem`]) are wrapped in it unchanged, so
//! a caller can match the whole way down.
//!
//! The texts are the ones `flowsec up -c` has always printed: tests and
//! users grep them.

use core::fmt;

use super::include::MAX_INCLUDE_DEPTH;
use super::lexer::MAX_DEPTH;
use super::value_error::{
    EmptyListItem, IdentityError, ProposalError, SecretError, SelectorError, ValueError,
};
use super::MAX_FILE_LEN;

/// Why a configuration was refused, and where. Displays as
/// `FILE:LINE: KEY: PROBLEM` (`FILE: PROBLEM` when the file could not be
/// read; the key is left out where there is none, e.g. a stray `}` at the
/// top).
#[derive(Debug)]
pub struct ConfigError {
    /// The file name given to [`parse`](super::parse) (the path for
    /// [`load`](super::load)).
    pub file: String,
    /// Line, from 1; 0 when the file could not be read.
    pub line: usize,
    /// The dotted key or section path, e.g.
    /// `connections.gw.children.net.esp_proposals`; empty where there is
    /// none.
    pub key: String,
    /// What is wrong.
    pub kind: ConfigErrorKind,
}

impl ConfigError {
    pub(crate) fn new(file: &str, line: usize, key: String, kind: ConfigErrorKind) -> ConfigError {
        ConfigError {
            file: file.to_string(),
            line,
            key,
            kind,
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if self.line != 0 {
            write!(f, ":{}", self.line)?;
        }
        if !self.key.is_empty() {
            write!(f, ": {}", self.key)?;
        }
        write!(f, ": {}", self.kind)
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ConfigErrorKind::Read(e) | ConfigErrorKind::IncludeRead(_, e) => Some(e),
            _ => None,
        }
    }
}

/// What is wrong with a configuration (the problem part of a
/// [`ConfigError`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    // --- the file
    /// The file could not be read.
    Read(std::io::Error),
    /// The file is larger than [`MAX_FILE_LEN`].
    TooLarge,
    /// The file is not UTF-8 (the line is the first bad one).
    NotUtf8,

    // --- the settings syntax (lexer)
    /// A quoted string where a name belongs.
    QuotedName,
    /// A quoted value runs to the end of the file.
    UnterminatedQuote,
    /// A section is still open at the end of the file.
    Unclosed {
        /// The section's name.
        section: String,
        /// The line it opened on.
        opened: usize,
    },
    /// A `}` at the top level.
    StrayClose,
    /// `include` without a pattern.
    IncludeEmpty,
    /// `include PATH`: PATH (no wildcards) could not be read.
    IncludeRead(String, std::io::Error),
    /// `include PATH`: PATH is not a regular file.
    IncludeNotFile(String),
    /// `include` of a file being read already.
    IncludeLoop(String),
    /// Includes nested deeper than [`MAX_INCLUDE_DEPTH`].
    IncludeTooDeep,
    /// Sections nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// `name : ...` followed by something other than `name[.name]`, `,`
    /// and `{`.
    BadReference {
        /// What was there.
        found: Found,
    },
    /// `name : base { }` where no section `base` exists.
    UnknownReference(String),
    /// A section inheriting from itself, directly or through others.
    ReferenceLoop(String),
    /// A name followed by neither `{` nor `=`.
    ExpectedOpenOrEquals {
        /// The name.
        name: String,
        /// What followed it.
        found: Found,
    },
    /// Something other than a name where one belongs.
    ExpectedName {
        /// What was there.
        found: Found,
    },
    /// A key given twice in one section.
    Duplicate {
        /// Where it was given first.
        first_line: usize,
    },

    // --- sections and keys (swanctl)
    /// A setting at the top level.
    UnknownTopLevelKey,
    /// A section flowsec does not know.
    UnknownSection,
    /// `authorities.NAME` with both `cacert` and `file`, or one twice.
    AuthorityCertTwice,
    /// `authorities.NAME.file` not an absolute path.
    AuthorityFileRelative,
    /// `authorities.NAME` without `cacert` or `file`.
    AuthorityWithoutCert,
    /// A setting in a section that holds sections only.
    SectionsOnly {
        /// The section (`connections`, `connections.gw.children`).
        section: String,
    },
    /// A key flowsec does not know.
    UnknownKey,
    /// A strongSwan key flowsec does not implement (`mediated_by`, …).
    KeyNotSupported,
    /// A `ppk` secret without `id`: it names no PPK_ID.
    PpkSecretWithoutId,
    /// A PPK_ID (`ppk_id`, a `ppk` secret's `id`) strongSwan would send in
    /// binary: an IP address or a distinguished name.
    PpkIdNotPlain {
        /// The value.
        value: String,
    },
    /// A `redirect_to` gateway that is neither an address nor a host name.
    BadGateway(crate::gateway::BadGateway),
    /// `redirect_load` is not one `unix://PATH` vici socket per
    /// `redirect_to` gateway: why.
    RedirectLoad(&'static str),
    /// A strongSwan key flowsec accepts only unset (`interface`, `label`).
    OnlyUnset,
    /// `per_cpu_sas = encap`, strongSwan's non-negotiated UDP variant.
    PerCpuEncap,
    /// `rekey_switch = keep-old` on a CHILD_SA without a `life_time`: the
    /// old SA would never go.
    KeepOldForever,
    /// `rekey_switch` other than `loss-free` with `per_cpu_sas = yes`.
    SwitchPerCpu,
    /// `tcp_port`, `tcp_tls` or `tcp_fallback_time` with `tcp_encap = no`.
    TcpKeyWithoutTcp,
    /// `tcp_fallback_time` without `tcp_encap = fallback`, or zero.
    TcpFallbackTime,
    /// `encap = yes` (UDP) with `tcp_encap = yes`.
    TcpForcedUdp,
    /// A strongSwan key flowsec accepts only at strongSwan's default.
    OnlyDefault {
        /// The value given.
        value: String,
        /// strongSwan's default.
        default: &'static str,
    },
    /// `version = 1`.
    Ikev1,
    /// `version` other than 0, 1 or 2.
    BadVersion {
        /// The value given.
        value: String,
    },
    /// `vips`.
    /// `pools = NAME` naming no `pools { NAME { } }` section.
    UnknownPool(String),
    /// A `pools` attribute flowsec does not send.
    PoolAttribute,
    /// A pool without `addrs`.
    PoolWithoutAddrs,
    /// Not an IP address, range or subnet.
    BadAddress(String),
    /// `local-N`/`remote-N` sections.
    AuthRounds,
    /// A connection without its `local` or `remote` section.
    MissingAuthSection {
        /// `local` or `remote`.
        side: &'static str,
    },
    /// A subsection of `local`/`remote` (certificates).
    Certificates,
    /// Keys of `local`/`remote` flowsec does not have yet (`ca_id`,
    /// `groups`, EAP and XAuth identities).
    PskOnly,
    /// A credential file that cannot be used (the error's file names it).
    Credential(String),
    /// `certs`/`cacerts` names a file not loaded from the directory.
    UnknownCredential {
        /// The name given.
        file: String,
        /// The directory looked in.
        dir: String,
    },
    /// `auth = pubkey` locally, with no certificate for it.
    NoLocalCert {
        /// The local `id`, if set.
        id: Option<String>,
        /// The swanctl directory.
        dir: String,
    },
    /// `pubkeys` on a side that does not authenticate with `pubkey`.
    PubkeysWithoutPubkeyAuth,
    /// `pubkeys` on a side without `id`.
    PubkeysWithoutId,
    /// `local.pubkeys`: the private key of its first key is not loaded.
    NoPrivateKeyForPubkey {
        /// The file in `pubkey/`.
        file: String,
    },
    /// Our certificate's private key is not loaded.
    NoPrivateKey {
        /// The certificate's subject.
        subject: String,
    },
    /// `auth = eap-mschapv2` locally without an `eap-…` secret for the
    /// EAP identity.
    NoEapSecret {
        /// `eap_id` (or `id`), if set.
        user: Option<String>,
    },
    /// EAP on both sides.
    EapBothSides,
    /// Our certificate's subject is empty and no `id` is set.
    EmptySubject,
    /// EAP clients (`remote.auth = eap-…`) with `local.auth = psk`: the
    /// responder must authenticate with a signature (RFC 7296 §2.16).
    EapWithPsk,
    /// An `eap-…` secret without `id`: it would be every user's password.
    EapSecretWithoutId,
    /// A pool whose addresses overlap another's.
    PoolOverlap {
        /// The other pool.
        other: String,
    },
    /// `auth = pubkey` remotely with no CA certificate to trust.
    NoCa {
        /// The directory looked in.
        dir: String,
    },
    /// `replay_window` out of range.
    ReplayWindow {
        /// The value given.
        packets: u32,
    },
    /// A Child SA's hard limit below its rekey limit.
    LifeBelowRekey {
        /// The hard limit (`life_time` seconds, `life_bytes`,
        /// `life_packets`).
        life: u64,
        /// The rekey limit.
        rekey: u64,
    },
    /// A `secrets` section of a type flowsec has (`eap`, `rsa`, …) but does
    /// not support yet (`known`), or of no known type.
    SecretType {
        /// Whether strongSwan knows the type.
        known: bool,
    },
    /// A key in a `secrets.ike` section other than `secret` and `id*`.
    UnknownSecretKey,
    /// A `secrets.ike` section without `secret`.
    MissingSecret,
    /// A key password section (`secrets.rsa…`) without `file`.
    MissingKeyFile,

    // --- values
    /// A bad number, duration, keyword and the like.
    Value(ValueError),
    /// A bad `secret`.
    Secret(SecretError),
    /// A bad proposal.
    Proposal(ProposalError),
    /// A bad traffic selector or address.
    Selector(SelectorError),
    /// A bad identity.
    Identity(IdentityError),
    /// An empty item in a comma-separated list.
    List(EmptyListItem),
}

// One flat match, an arm and a message per variant: over 80 lines, but a
// table to read down, not logic to split (issue 18).
impl fmt::Display for ConfigErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ConfigErrorKind as K;
        match self {
            K::Read(e) => e.fmt(f),
            K::TooLarge => write!(f, "larger than {MAX_FILE_LEN} bytes"),
            K::NotUtf8 => f.write_str("not UTF-8 text"),
            K::QuotedName => {
                f.write_str("unexpected quoted string (quotes are allowed in values only)")
            }
            K::UnterminatedQuote => f.write_str("unterminated quoted string"),
            K::Unclosed { section, opened } => {
                write!(
                    f,
                    "section '{section}' opened on line {opened} is not closed"
                )
            }
            K::StrayClose => f.write_str("'}' without a section to close"),
            K::IncludeEmpty => f.write_str("'include' without a file name"),
            K::IncludeRead(path, e) => write!(f, "cannot include '{path}': {e}"),
            K::IncludeNotFile(path) => write!(f, "cannot include '{path}': not a regular file"),
            K::IncludeLoop(path) => write!(f, "'{path}' is included in itself"),
            K::IncludeTooDeep => write!(f, "includes nested deeper than {MAX_INCLUDE_DEPTH}"),
            K::TooDeep => write!(f, "sections nested deeper than {MAX_DEPTH}"),
            K::BadReference { found } => write!(
                f,
                "expected a section name ('a' or 'a.b'), ',' or '{{' in the references after \
                 ':', found {found}"
            ),
            K::UnknownReference(name) => write!(f, "references '{name}': no such section"),
            K::ReferenceLoop(name) => write!(f, "references '{name}', which inherits from it"),
            K::ExpectedOpenOrEquals { name, found } => {
                write!(f, "expected '{{' or '=' after '{name}', found {found}")
            }
            K::ExpectedName { found } => write!(f, "expected a name, found {found}"),
            K::Duplicate { first_line } => write!(f, "given twice (first on line {first_line})"),
            K::UnknownTopLevelKey => f.write_str("unknown top-level key"),
            K::UnknownSection => f.write_str("unknown section"),
            K::AuthorityCertTwice => {
                f.write_str("one of 'cacert' or 'file' per authority (swanctl.conf(5))")
            }
            K::AuthorityFileRelative => {
                f.write_str("must be an absolute path ('cacert' takes a file in x509ca/)")
            }
            K::AuthorityWithoutCert => {
                f.write_str("an authority needs its CA certificate: 'cacert' or 'file'")
            }
            K::SectionsOnly { section } => write!(f, "'{section}' holds sections only"),
            K::UnknownKey => f.write_str("unknown key"),
            K::PubkeysWithoutPubkeyAuth => {
                f.write_str("raw public keys need auth = pubkey (or rsa, ecdsa, ed25519)")
            }
            K::NoPrivateKeyForPubkey { file } => write!(
                f,
                "no private key for the public key pubkey/{file} (private/, rsa/, ecdsa/, pkcs8/)"
            ),
            K::PubkeysWithoutId => {
                f.write_str("raw public keys need an id on this side: the key names no identity")
            }
            K::MissingKeyFile => f.write_str("missing: the key file the secret decrypts"),
            K::KeyNotSupported => f.write_str("not supported"),
            K::OnlyUnset => f.write_str("not supported (only unset, strongSwan's default)"),
            K::PerCpuEncap => f.write_str(
                "'encap' is not supported (flowsec steers per-resource SAs by SPI): yes or no",
            ),
            K::KeepOldForever => f.write_str(
                "keep-old needs a life_time: the old SA is kept until its lifetime expires",
            ),
            K::SwitchPerCpu => f.write_str("only loss-free is supported with per_cpu_sas = yes"),
            K::TcpKeyWithoutTcp => f.write_str("needs tcp_encap = yes or fallback"),
            K::TcpFallbackTime => {
                f.write_str("needs tcp_encap = fallback and a time above 0 (e.g. 5s)")
            }
            K::TcpForcedUdp => {
                f.write_str("encap = yes forces UDP, tcp_encap = yes TCP: choose one")
            }
            K::OnlyDefault { value, default } => write!(
                f,
                "'{value}' is not supported (only strongSwan's default '{default}')"
            ),
            K::Ikev1 => f.write_str("IKEv1 is not supported"),
            K::BadVersion { value } => write!(f, "bad version '{value}' (0 or 2)"),
            K::UnknownPool(p) => write!(f, "no pool '{p}' in pools {{ }}"),
            K::PoolAttribute => f.write_str("not supported yet (a pool takes addrs and dns)"),
            K::PoolWithoutAddrs => f.write_str("missing: a pool needs addrs"),
            K::BadAddress(a) => write!(f, "'{a}' is not an address, range or subnet"),
            K::AuthRounds => f.write_str("multiple authentication rounds are not supported"),
            K::MissingAuthSection { side } => {
                write!(
                    f,
                    "section missing: flowsec needs '{side} {{ auth = psk }}'"
                )
            }
            K::Certificates => f.write_str(
                "subsections of local/remote are not supported (certificates are files in x509/)",
            ),
            K::PskOnly => f.write_str(
                "not supported yet (local/remote take auth, id, certs, cacerts, pubkeys, \
                     eap_id and revocation)",
            ),
            K::Credential(why) => f.write_str(why),
            K::UnknownCredential { file, dir } => write!(f, "'{file}' is not a file in {dir}"),
            K::NoLocalCert { id: Some(id), dir } => write!(
                f,
                "no certificate for '{id}' with its private key under {dir} (x509/, and \
                 private/, rsa/, ecdsa/ or pkcs8/); set certs = FILE"
            ),
            K::NoLocalCert { id: None, dir } => write!(
                f,
                "auth = pubkey needs certs = FILE (in {dir}/x509) or an id its certificate holds"
            ),
            K::NoPrivateKey { subject } => write!(
                f,
                "no private key for the certificate \"{subject}\" (private/, rsa/, ecdsa/, pkcs8/)"
            ),
            K::NoEapSecret { user: Some(u) } => {
                write!(f, "auth = eap-mschapv2 needs a secrets.eap-… with id = {u}")
            }
            K::NoEapSecret { user: None } => {
                f.write_str("auth = eap-mschapv2 needs eap_id (or id) and a secrets.eap-… for it")
            }
            K::EapBothSides => {
                f.write_str("EAP authenticates the initiator only: the gateway needs auth = pubkey")
            }
            K::EmptySubject => f.write_str(
                "our certificate's subject is empty: set id = one of its subjectAltNames",
            ),
            K::EapWithPsk => f.write_str(
                "a gateway for EAP clients authenticates with a certificate (auth = pubkey, \
                 RFC 7296 §2.16): with psk any client could guess the key offline",
            ),
            K::BadGateway(e) => e.fmt(f),
            K::RedirectLoad(why) => f.write_str(why),
            K::PpkSecretWithoutId => {
                f.write_str("a ppk secret needs id = PPK_ID: the identity the peers name it by")
            }
            K::PpkIdNotPlain { value } => write!(
                f,
                "'{value}': a PPK_ID is a plain name (strongSwan would send an IP address or \
                 a distinguished name in binary form)"
            ),
            K::EapSecretWithoutId => f.write_str(
                "an eap secret needs id = USER: without it, it would be every user's password",
            ),
            K::PoolOverlap { other } => write!(
                f,
                "overlaps pool '{other}': one address could go to two clients"
            ),
            K::NoCa { dir } => write!(
                f,
                "auth = pubkey needs the CA certificates the peer's chains to, in {dir}"
            ),
            K::ReplayWindow { packets } => {
                use flowsec_ipsec::replay::{MAX_WINDOW, MIN_WINDOW};
                write!(
                    f,
                    "{packets} outside {MIN_WINDOW}..={MAX_WINDOW} packets (or 0 to disable)"
                )
            }
            K::LifeBelowRekey { life, rekey } => write!(
                f,
                "{life} is below the rekey limit {rekey}: the SA would expire before it is \
                 rekeyed"
            ),
            K::SecretType { known: true } => f.write_str(
                "not supported yet: flowsec reads ike…, eap…, and the key passwords of \
                     rsa…, ecdsa…, pkcs8… and private… sections",
            ),
            K::SecretType { known: false } => {
                f.write_str("unknown secret type (IKE pre-shared keys are ikeSUFFIX sections)")
            }
            K::UnknownSecretKey => f.write_str(
                "unknown key (secret, id or idSUFFIX; file and secretSUFFIX for a key password)",
            ),
            K::MissingSecret => f.write_str("missing"),
            K::Value(e) => e.fmt(f),
            K::Secret(e) => e.fmt(f),
            K::Proposal(e) => e.fmt(f),
            K::Selector(e) => e.fmt(f),
            K::Identity(e) => e.fmt(f),
            K::List(e) => e.fmt(f),
        }
    }
}

impl From<ValueError> for ConfigErrorKind {
    fn from(e: ValueError) -> Self {
        ConfigErrorKind::Value(e)
    }
}

impl From<SecretError> for ConfigErrorKind {
    fn from(e: SecretError) -> Self {
        ConfigErrorKind::Secret(e)
    }
}

impl From<ProposalError> for ConfigErrorKind {
    fn from(e: ProposalError) -> Self {
        ConfigErrorKind::Proposal(e)
    }
}

impl From<SelectorError> for ConfigErrorKind {
    fn from(e: SelectorError) -> Self {
        ConfigErrorKind::Selector(e)
    }
}

impl From<IdentityError> for ConfigErrorKind {
    fn from(e: IdentityError) -> Self {
        ConfigErrorKind::Identity(e)
    }
}

impl From<EmptyListItem> for ConfigErrorKind {
    fn from(e: EmptyListItem) -> Self {
        ConfigErrorKind::List(e)
    }
}

/// What the settings parser found where it wanted something else.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Found {
    /// A name.
    Name(String),
    /// `{`.
    Open,
    /// `}`.
    Close,
    /// `=`.
    Equals,
    /// `:`.
    Colon,
    /// `.` or `,` outside a value.
    Stray(char),
    /// The word `include` as a statement.
    Include,
    /// The end of the file.
    Eof,
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Found::Name(n) => write!(f, "'{n}'"),
            Found::Open => f.write_str("'{'"),
            Found::Close => f.write_str("'}'"),
            Found::Equals => f.write_str("'='"),
            Found::Colon => f.write_str("':'"),
            Found::Stray(c) => write!(f, "'{c}'"),
            Found::Include => f.write_str("'include'"),
            Found::Eof => f.write_str("the end of the file"),
        }
    }
}
