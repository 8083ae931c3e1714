//! Why a setkey file was refused, and where.

use core::fmt;

use flowsec_crypto::CryptoError;
use flowsec_ipsec::sa::SaError;
use flowsec_ipsec::spd::SpdError;

/// A 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1, counted in characters.
    pub column: u32,
}

/// A syntax or semantic error: the file, the position and why. Displays
/// as `FILE:LINE:COL: message`, the way compilers do, so editors can jump
/// to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The source name given to [`parse`](crate::parse) (a path, or `-`
    /// for standard input).
    pub file: String,
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1, in characters.
    pub column: u32,
    /// What is wrong.
    pub kind: ErrorKind,
}

impl ParseError {
    pub(crate) fn new(file: &str, pos: Pos, kind: ErrorKind) -> Self {
        ParseError {
            file: file.to_string(),
            line: pos.line,
            column: pos.column,
            kind,
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.column, self.kind
        )
    }
}

impl std::error::Error for ParseError {}

/// Which algorithm option an algorithm name was given to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AlgOption {
    /// `-E`: ESP encryption (or combined mode).
    Encr,
    /// `-A`: ESP or AH authentication.
    Auth,
    /// `-C`: IPComp compression.
    Comp,
}

impl fmt::Display for AlgOption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AlgOption::Encr => "-E",
            AlgOption::Auth => "-A",
            AlgOption::Comp => "-C",
        })
    }
}

/// What is wrong, one variant per way a file can be wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A `"` with no closing `"`.
    UnterminatedString,
    /// A statement that does not start with a known command.
    UnknownCommand(String),
    /// A setkey command or feature that flowsec does not implement.
    Unsupported {
        /// The command or option as written.
        what: String,
        /// Why, or what to use instead.
        why: &'static str,
    },
    /// The file (or statement) ended where more was needed.
    UnexpectedEnd {
        /// What was needed.
        expected: &'static str,
    },
    /// A token other than the one the grammar needs here.
    Expected {
        /// What was needed.
        expected: &'static str,
        /// What was found.
        found: String,
    },
    /// A statement not ended by `;` before the next one (or the end).
    MissingSemicolon {
        /// What follows where the `;` should be.
        found: String,
    },
    /// An option that this statement does not take.
    UnknownOption(String),
    /// The same option twice in one statement.
    DuplicateOption(String),
    /// An option that does not apply to the statement's protocol.
    OptionNotForProtocol {
        /// The option (`-E`, `-A`, `-C`, `-r`).
        option: &'static str,
        /// The protocol as written.
        protocol: &'static str,
    },
    /// A protocol other than `esp`, `esp-udp`, `ah`, `ipcomp`.
    UnknownProtocol(String),
    /// An algorithm name setkey does not know.
    UnknownAlgorithm {
        /// `-E`, `-A` or `-C`.
        option: AlgOption,
        /// The name as written.
        name: String,
    },
    /// An algorithm setkey knows but flowsec refuses.
    UnsupportedAlgorithm {
        /// `-E`, `-A` or `-C`.
        option: AlgOption,
        /// The name as written.
        name: String,
        /// Why.
        why: &'static str,
    },
    /// The protocol's algorithm option is missing (`esp` without `-E`...).
    MissingAlgorithm {
        /// The option that is needed.
        option: AlgOption,
        /// The protocol as written.
        protocol: &'static str,
    },
    /// A combined-mode (AEAD) cipher given an `-A` as well.
    AeadWithAuth {
        /// The `-E` algorithm.
        encr: &'static str,
    },
    /// A key that is neither `0x` hex nor a quoted string.
    BadKeySyntax,
    /// Malformed hex in a key.
    BadHex {
        /// Why.
        why: &'static str,
    },
    /// An algorithm that takes no key was given one.
    KeyNotAllowed {
        /// The algorithm.
        algorithm: &'static str,
    },
    /// The key was refused for the algorithm (length, weak key).
    BadKey {
        /// The algorithm.
        algorithm: &'static str,
        /// The provider's reason.
        error: CryptoError,
    },
    /// Not a numeric IPv4 or IPv6 address (setkey would resolve host
    /// names; flowsec reads numeric addresses only).
    BadAddress(String),
    /// A `/prefixlen` that is not a number or too long for the family.
    BadPrefixLen(String),
    /// A `[port]` that is not `any` or 0..=65535, or a malformed bracket.
    BadPort(String),
    /// A port where the protocol has none.
    PortNotAllowed {
        /// Where the port was given (`esp`, `ah`, `ipcomp`, `any`, `icmp`...).
        protocol: String,
    },
    /// IPv4 and IPv6 mixed where both ends must be of one family.
    FamilyMismatch {
        /// Which pair (`SA addresses`, `selector`, `tunnel endpoints`).
        what: &'static str,
    },
    /// An address of the wrong family after `-4` or `-6`.
    FamilyNotAllowed {
        /// `-4` or `-6`.
        flag: &'static str,
    },
    /// A number that does not parse or is out of range.
    BadNumber {
        /// What the number is.
        what: &'static str,
        /// The token as written.
        token: String,
    },
    /// SPI 0..=255 (reserved, RFC 4303 §2.1) or a CPI outside 256..=65535.
    BadSpi {
        /// The value.
        spi: u64,
        /// The rule it breaks.
        why: &'static str,
    },
    /// A replay window other than 0 or 32..=4096 packets.
    ReplayWindow(u64),
    /// A soft lifetime longer than the hard one.
    SoftAfterHard {
        /// `-ls`/`-lh` or `-bs`/`-bh`.
        what: &'static str,
    },
    /// A bad `-m` mode.
    BadMode(String),
    /// A bad `-P` direction.
    BadDirection(String),
    /// A bad policy action (not `none`, `discard` or `ipsec`).
    BadAction(String),
    /// A bad `prio` specification.
    BadPriority(String),
    /// A bad upper-layer protocol in a selector.
    BadUpperSpec(String),
    /// A bad `protocol/mode/src-dst/level` rule.
    BadRule {
        /// The rule as written.
        rule: String,
        /// Why.
        why: &'static str,
    },
    /// The combination was refused when the SA was built.
    Sa(SaError),
    /// The same SA (protocol, SPI, destination) added twice.
    DuplicateSa,
    /// The policy clashes with an earlier one in the same file.
    Policy(SpdError),
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ErrorKind::*;
        match self {
            UnterminatedString => f.write_str("unterminated quoted string"),
            UnknownCommand(t) => write!(f, "unknown command '{t}'"),
            Unsupported { what, why } => write!(f, "'{what}' is not supported: {why}"),
            UnexpectedEnd { expected } => write!(f, "expected {expected} at end of input"),
            Expected { expected, found } => write!(f, "expected {expected}, found '{found}'"),
            MissingSemicolon { found } => write!(f, "missing ';' before '{found}'"),
            UnknownOption(o) => write!(f, "unknown option '{o}'"),
            DuplicateOption(o) => write!(f, "option '{o}' given twice"),
            OptionNotForProtocol { option, protocol } => {
                write!(f, "option {option} does not apply to {protocol}")
            }
            UnknownProtocol(p) => {
                write!(f, "unknown protocol '{p}' (esp, esp-udp, ah or ipcomp)")
            }
            UnknownAlgorithm { option, name } => {
                write!(f, "unknown algorithm '{name}' for {option}")
            }
            UnsupportedAlgorithm { option, name, why } => {
                write!(f, "algorithm '{name}' for {option} is not supported: {why}")
            }
            MissingAlgorithm { option, protocol } => write!(f, "{protocol} needs {option}"),
            AeadWithAuth { encr } => write!(
                f,
                "{encr} is a combined-mode cipher and takes no -A (RFC 4303 §3.2)"
            ),
            // The text is not repeated: it may be a key, and errors reach
            // the daemon's log (a reload).
            BadKeySyntax => write!(
                f,
                "bad key: a key is 0x followed by hex digits, or a \"quoted string\""
            ),
            BadHex { why } => write!(f, "bad hex key: {why}"),
            KeyNotAllowed { algorithm } => write!(f, "{algorithm} takes no key"),
            BadKey { algorithm, error } => write!(f, "bad key for {algorithm}: {error}"),
            BadAddress(t) => write!(f, "bad address '{t}' (numeric IPv4 or IPv6 expected)"),
            BadPrefixLen(t) => write!(f, "bad prefix length '{t}'"),
            BadPort(t) => write!(f, "bad port '{t}' (a number 0..=65535 or 'any')"),
            PortNotAllowed { protocol } => write!(f, "a port is not allowed with {protocol}"),
            FamilyMismatch { what } => write!(f, "{what} mix IPv4 and IPv6"),
            FamilyNotAllowed { flag } => write!(f, "address family not allowed by {flag}"),
            BadNumber { what, token } => write!(f, "bad {what} '{token}'"),
            BadSpi { spi, why } => write!(f, "bad SPI {spi}: {why}"),
            ReplayWindow(n) => write!(
                f,
                "replay window {n} outside 32..=4096 packets (or 0 to disable)"
            ),
            SoftAfterHard { what } => write!(f, "soft lifetime exceeds hard lifetime ({what})"),
            BadMode(t) => write!(f, "bad mode '{t}' (transport, tunnel or any)"),
            BadDirection(t) => write!(f, "bad direction '{t}' (in, out or fwd)"),
            BadAction(t) => write!(f, "bad policy '{t}' (none, discard or ipsec)"),
            BadPriority(t) => write!(f, "bad priority '{t}'"),
            BadUpperSpec(t) => write!(f, "bad upper-layer protocol '{t}'"),
            BadRule { rule, why } => write!(f, "bad rule '{rule}': {why}"),
            Sa(e) => write!(f, "SA refused: {e}"),
            DuplicateSa => f.write_str("this SA (protocol, SPI, destination) is added twice"),
            Policy(e) => write!(f, "policy refused: {e}"),
        }
    }
}
