//! Why a value was refused: the errors of the parsers of numbers and
//! keywords ([`ValueError`]), secrets, proposals, traffic selectors,
//! addresses and identities, each on its own (the parsers are public) and
//! wrapped unchanged in a [`ConfigErrorKind`](super::ConfigErrorKind)
//! when they come from a file. Each carries the value as written (never a
//! secret's).

use core::fmt;

use flowsec_wire::iana::EncrId;

/// A value of the wrong form for its key (numbers, durations, byte
/// counts, ports, booleans, keywords). Each carries the value as given.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ValueError {
    /// Not a decimal number.
    NotANumber(String),
    /// A number too large for the key.
    TooLarge(String),
    /// Not a duration (a number with `s`, `m`, `h` or `d`).
    Duration(String),
    /// Not a byte count (a number with `k`, `M` or `G`).
    Bytes(String),
    /// Not a port in 1..=65535.
    Port(String),
    /// Not a boolean.
    Bool(String),
    /// None of the keywords the key takes.
    Keyword {
        /// The value given.
        value: String,
        /// The keywords it may be.
        words: &'static [&'static str],
    },
    /// A `mode` flowsec does not implement (`beet`, `pass`, …).
    Mode(String),
    /// `start_action = trap|start` and the like.
    CombinedActions(String),
    /// An `auth` method strongSwan has and flowsec does not yet.
    AuthNotSupported(String),
    /// An `auth` method no one has.
    AuthUnknown(String),
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueError::NotANumber(v) => write!(f, "'{v}' is not a number"),
            ValueError::TooLarge(v) => write!(f, "'{v}' is too large"),
            ValueError::Duration(v) => {
                write!(f, "bad duration '{v}' (a number with s, m, h or d)")
            }
            ValueError::Bytes(v) => write!(f, "bad byte count '{v}' (a number with k, M or G)"),
            ValueError::Port(v) => write!(f, "bad port '{v}' (1..=65535)"),
            ValueError::Bool(v) => write!(f, "bad boolean '{v}' (yes or no)"),
            ValueError::Keyword { value, words } => {
                write!(f, "bad value '{value}' ({})", words.join(", "))
            }
            ValueError::Mode(v) => {
                write!(f, "mode '{v}' is not supported (tunnel or transport)")
            }
            ValueError::CombinedActions(v) => {
                write!(f, "combined actions ('{v}') are not supported")
            }
            ValueError::AuthNotSupported(v) => {
                write!(f, "'{v}' is not supported yet (psk and pubkey are)")
            }
            ValueError::AuthUnknown(v) => write!(f, "unknown authentication method '{v}'"),
        }
    }
}

impl std::error::Error for ValueError {}

/// A `secret` that cannot be decoded. Never carries the secret's text.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecretError {
    /// `0x…` that is not hex.
    Hex(HexError),
    /// `0s…` with more than two `=`.
    Base64Padding,
    /// `0s…` with a character outside base64.
    Base64Char,
    /// `0s…` that ends mid-byte.
    Base64Truncated,
    /// No bytes.
    Empty,
}

impl fmt::Display for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretError::Hex(e) => write!(f, "bad hex: {e}"),
            SecretError::Base64Padding => f.write_str("bad base64: too much padding"),
            SecretError::Base64Char => f.write_str("bad base64: not a base64 character"),
            SecretError::Base64Truncated => f.write_str("bad base64: truncated"),
            SecretError::Empty => f.write_str("empty secret"),
        }
    }
}

impl std::error::Error for SecretError {}

/// An empty item in a comma-separated list (`a,,b`, `a,`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmptyListItem {
    /// The whole list.
    pub list: String,
}

impl fmt::Display for EmptyListItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}': empty item in the comma-separated list", self.list)
    }
}

impl std::error::Error for EmptyListItem {}

/// Which kind of proposal an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProposalKind {
    /// `proposals` (IKE SA).
    Ike,
    /// `esp_proposals`.
    Esp,
    /// `ah_proposals`.
    Ah,
}

impl fmt::Display for ProposalKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProposalKind::Ike => "IKE",
            ProposalKind::Esp => "ESP",
            ProposalKind::Ah => "AH",
        })
    }
}

/// Why a proposal was refused (strongSwan's `check_proposal()` rules and
/// flowsec's own). Each carries the proposal as written.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProposalError {
    /// `default` alone where one proposal is parsed.
    DefaultAlone,
    /// `a--b`.
    EmptyAlgorithm {
        /// The proposal.
        proposal: String,
    },
    /// A strongSwan keyword for an algorithm flowsec lacks.
    AlgorithmNotSupported {
        /// The proposal.
        proposal: String,
        /// The keyword as written.
        algorithm: String,
    },
    /// A keyword no one knows.
    UnknownAlgorithm {
        /// The proposal.
        proposal: String,
        /// The keyword as written.
        algorithm: String,
    },
    /// `esn`/`noesn` in an IKE proposal.
    EsnInIke {
        /// The proposal.
        proposal: String,
    },
    /// No encryption algorithm in an IKE or ESP proposal.
    NoEncryption {
        /// The proposal.
        proposal: String,
        /// IKE or ESP.
        kind: ProposalKind,
    },
    /// NULL encryption or AES-GMAC in an IKE proposal (RFC 7296 §3.3.2,
    /// RFC 5282).
    NotForIke {
        /// The proposal.
        proposal: String,
        /// The algorithm.
        encr: EncrId,
    },
    /// No PRF in an IKE proposal (none named, none from an integrity
    /// algorithm).
    NoPrf {
        /// The proposal.
        proposal: String,
    },
    /// No DH group in an IKE proposal.
    NoDhGroup {
        /// The proposal.
        proposal: String,
    },
    /// No integrity algorithm in an AH proposal, or in an IKE proposal
    /// with classic encryption.
    NoIntegrity {
        /// The proposal.
        proposal: String,
        /// IKE or AH.
        kind: ProposalKind,
    },
    /// AEAD and classic encryption algorithms in one proposal.
    MixedAead {
        /// The proposal.
        proposal: String,
    },
    /// ESP with NULL encryption and no integrity (RFC 4303 §3.2).
    NullWithoutIntegrity {
        /// The proposal.
        proposal: String,
    },
    /// An encryption algorithm in an AH proposal.
    EncryptionInAh {
        /// The proposal.
        proposal: String,
    },
    /// An additional key exchange (`ke1_…`) in an ESP or AH proposal
    /// without a PFS group: it follows that key exchange (RFC 9370
    /// §2.2.4).
    AdditionalKeWithoutPfs {
        /// The proposal.
        proposal: String,
    },
    /// An empty item in a proposal list.
    List(EmptyListItem),
}

impl fmt::Display for ProposalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ProposalError as E;
        match self {
            E::DefaultAlone => {
                f.write_str("'default' stands for several proposals: use it in a proposal list")
            }
            E::EmptyAlgorithm { proposal } => write!(f, "'{proposal}': empty algorithm name"),
            E::AlgorithmNotSupported {
                proposal,
                algorithm,
            } => write!(
                f,
                "'{proposal}': algorithm '{algorithm}' is not supported by flowsec"
            ),
            E::UnknownAlgorithm {
                proposal,
                algorithm,
            } => write!(f, "'{proposal}': algorithm '{algorithm}' not recognized"),
            E::EsnInIke { proposal } => write!(
                f,
                "'{proposal}': esn/noesn apply to ESP and AH proposals only"
            ),
            E::NoEncryption { proposal, kind } => write!(
                f,
                "'{proposal}': an encryption algorithm is mandatory in {kind} proposals"
            ),
            E::NotForIke { proposal, encr } => write!(
                f,
                "'{proposal}': {encr} is not allowed for IKE (RFC 7296 §3.3.2, RFC 5282)"
            ),
            E::NoPrf { proposal } => write!(
                f,
                "'{proposal}': a PRF algorithm is mandatory in IKE proposals"
            ),
            E::NoDhGroup { proposal } => {
                write!(f, "'{proposal}': a DH group is mandatory in IKE proposals")
            }
            E::NoIntegrity {
                proposal,
                kind: ProposalKind::Ike,
            } => write!(
                f,
                "'{proposal}': an integrity algorithm is mandatory in IKE proposals with \
                 classic (non-AEAD) encryption algorithms"
            ),
            E::NoIntegrity { proposal, kind } => write!(
                f,
                "'{proposal}': an integrity algorithm is mandatory in {kind} proposals"
            ),
            E::MixedAead { proposal } => write!(
                f,
                "'{proposal}': classic and combined-mode (AEAD) encryption algorithms can't \
                 be contained in the same proposal"
            ),
            E::NullWithoutIntegrity { proposal } => write!(
                f,
                "'{proposal}': NULL encryption needs an integrity algorithm (RFC 4303 §3.2)"
            ),
            E::EncryptionInAh { proposal } => write!(
                f,
                "'{proposal}': AH proposals take integrity algorithms only (no encryption)"
            ),
            E::AdditionalKeWithoutPfs { proposal } => write!(
                f,
                "'{proposal}': additional key exchanges (ke1_…ke7_) in ESP/AH proposals follow \
                 the PFS key exchange (RFC 9370 §2.2.4): add a group, e.g. x25519"
            ),
            E::List(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ProposalError {}

impl From<EmptyListItem> for ProposalError {
    fn from(e: EmptyListItem) -> Self {
        ProposalError::List(e)
    }
}

/// Why a traffic selector (`local_ts`, `remote_ts`) or an address
/// (`local_addrs`, `remote_addrs`) was refused. Each carries the entry as
/// written.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SelectorError {
    /// `10.0.0.0/8[tcp` and the like.
    UnclosedBracket {
        /// The selector.
        selector: String,
    },
    /// A bad `[PROTO/PORT]`.
    ProtoPort {
        /// The selector.
        selector: String,
        /// What is wrong inside the brackets.
        problem: ProtoPortError,
    },
    /// `dynamic[tcp]`.
    DynamicRestricted {
        /// The selector.
        selector: String,
    },
    /// `10.0.0.1-::1`.
    MixedFamilies {
        /// The selector.
        selector: String,
    },
    /// A range whose end is below its start.
    Reversed {
        /// The selector.
        selector: String,
    },
    /// An address that does not parse.
    NotAnAddress {
        /// The whole entry.
        entry: String,
        /// The part that is no address.
        text: String,
    },
    /// A prefix length beyond the family's bits.
    PrefixLength {
        /// The whole entry.
        entry: String,
        /// The length as written.
        bits: String,
        /// 32 or 128.
        max: u8,
    },
    /// An address range of mixed families, or high to low
    /// (`local_addrs`).
    BadAddressRange {
        /// The entry.
        entry: String,
    },
    /// Neither an address, subnet, range nor DNS name (`local_addrs`).
    NotAnAddressSpec {
        /// The entry.
        entry: String,
    },
}

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use SelectorError as E;
        match self {
            E::UnclosedBracket { selector } => {
                write!(f, "'{selector}': '[' without a closing ']' at the end")
            }
            E::ProtoPort { selector, problem } => write!(f, "'{selector}': {problem}"),
            E::DynamicRestricted { selector } => write!(
                f,
                "'{selector}': a protocol/port restriction on 'dynamic' is not supported yet"
            ),
            E::MixedFamilies { selector } => {
                write!(f, "'{selector}': the range mixes IPv4 and IPv6")
            }
            E::Reversed { selector } => write!(f, "'{selector}': the range ends before it starts"),
            E::NotAnAddress { entry, text } => {
                write!(f, "'{entry}': '{text}' is not an IPv4 or IPv6 address")
            }
            E::PrefixLength { entry, bits, max } => {
                write!(f, "'{entry}': bad prefix length '{bits}' (0..={max})")
            }
            E::BadAddressRange { entry } => write!(
                f,
                "'{entry}': not a range of one address family, low to high"
            ),
            E::NotAnAddressSpec { entry } => write!(
                f,
                "'{entry}' is neither an address, subnet, range nor DNS name"
            ),
        }
    }
}

impl std::error::Error for SelectorError {}

/// What is wrong inside a selector's `[PROTO/PORT]`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtoPortError {
    /// Neither a protocol name nor a number below 256.
    UnknownProtocol {
        /// The protocol as written.
        protocol: String,
    },
    /// A port with protocol `any`.
    PortWithoutProtocol,
    /// Neither a port number nor a service name.
    BadPort {
        /// The port as written.
        port: String,
    },
    /// A port range whose end is below its start.
    ReversedPorts {
        /// The range as written.
        range: String,
    },
}

impl fmt::Display for ProtoPortError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtoPortError::UnknownProtocol { protocol } => {
                write!(f, "unknown protocol '{protocol}'")
            }
            ProtoPortError::PortWithoutProtocol => {
                f.write_str("a port needs a protocol (e.g. [tcp/80])")
            }
            ProtoPortError::BadPort { port } => {
                write!(f, "bad port '{port}' (0..=65535 or a service name)")
            }
            ProtoPortError::ReversedPorts { range } => {
                write!(f, "port range '{range}' ends before it starts")
            }
        }
    }
}

impl std::error::Error for ProtoPortError {}

/// Why an identity (`id`, `secrets.ike*.id*`) was refused. Each carries
/// the identity as written.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdentityError {
    /// `C=CH, O=…`: a distinguished name that does not encode.
    DistinguishedName {
        /// The identity.
        id: String,
        /// Why.
        problem: super::dn::DnError,
    },
    /// Bad hex after `#`.
    Hex {
        /// The identity.
        id: String,
        /// What is wrong with the hex.
        problem: HexError,
    },
    /// Nothing after the prefix (`@@`).
    Empty {
        /// The identity.
        id: String,
    },
    /// `@` alone: an unquoted `@#hex`, whose `#` began a comment.
    UnquotedKeyId {
        /// The identity.
        id: String,
    },
    /// A subnet or range.
    SubnetOrRange {
        /// The identity.
        id: String,
    },
    /// Has `:` but is no IPv6 address.
    NotIpv6 {
        /// The identity.
        id: String,
    },
    /// `fqdn:#…`/`email:#…` bytes that are not UTF-8.
    NotUtf8 {
        /// The identity.
        id: String,
    },
    /// `ipv4:`/`ipv6:` with something else.
    NotAnAddress {
        /// The identity.
        id: String,
        /// 4 or 6: the family the prefix named.
        version: u8,
    },
    /// A type flowsec does not support (`asn1dn:`, `{9}:`, …).
    UnsupportedType {
        /// The identity.
        id: String,
    },
}

impl fmt::Display for IdentityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use IdentityError as E;
        match self {
            E::DistinguishedName { id, problem } => {
                write!(f, "'{id}' is no distinguished name: {problem}")
            }
            E::Hex { id, problem } => write!(f, "'{id}': {problem}"),
            E::Empty { id } => write!(f, "'{id}' names no identity"),
            E::UnquotedKeyId { id } => write!(
                f,
                "'{id}' names no identity (a key id must be quoted: \"@#hex\")"
            ),
            E::SubnetOrRange { id } => write!(
                f,
                "'{id}' is a subnet or range identity, which flowsec does not support"
            ),
            E::NotIpv6 { id } => write!(
                f,
                "'{id}' is not an IPv6 address (write keyid:{id} for a key identifier)"
            ),
            E::NotUtf8 { id } => write!(f, "'{id}': not UTF-8"),
            E::NotAnAddress { id, version } => write!(f, "'{id}': not an IPv{version} address"),
            E::UnsupportedType { id } => write!(
                f,
                "'{id}': this identity type is not supported (FQDN, RFC 822, IPv4/IPv6 \
                 address and key id are)"
            ),
        }
    }
}

impl std::error::Error for IdentityError {}

/// Why hex digits (an identity's `#…`, a secret's `0x…`) were refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HexError {
    /// A character other than a hex digit or `:`.
    NotHex,
    /// No digits.
    Empty,
    /// An odd number of digits.
    OddLength,
}

impl fmt::Display for HexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HexError::NotHex => "not a hex digit",
            HexError::Empty => "no hex digits",
            HexError::OddLength => "an odd number of hex digits",
        })
    }
}

impl std::error::Error for HexError {}
