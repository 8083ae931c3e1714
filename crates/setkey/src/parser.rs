//! The statement parser: the token cursor, statement dispatch, and the
//! SAD statements (`add`, `get`, `delete`, `deleteall`, `flush`, `dump`).
//! The SPD statements are in [`crate::policy`].

use core::time::Duration;
use std::net::IpAddr;

use flowsec_crypto::esp::is_aead;
use flowsec_crypto::{EncrId, IntegId, Provider};
use flowsec_ipsec::lifetime::{Lifetime, Limits};
use flowsec_ipsec::replay::{MAX_WINDOW, MIN_WINDOW};
use flowsec_ipsec::sa::{Mode, Protocol, SaConfig, SaId, SecurityAssociation, UdpEncap};
use flowsec_wire::iana::IpcompId;
use zeroize::Zeroizing;

use crate::addr::{parse_spec, Families, Port};
use crate::algorithms;
use crate::error::{AlgOption, ErrorKind, ParseError, Pos};
use crate::lexer::{Token, TokenKind};
use crate::model::{Command, Statement};

use flowsec_wire::udp_encap::NAT_T_PORT;
/// SPIs 1..=255 are reserved by IANA (RFC 4303 §2.1, RFC 4302 §2.4); 0 is
/// never an SA's SPI. setkey(8): "SPI values between 0 and 255 are
/// reserved for future use by IANA and cannot be used."
const MIN_SPI: u32 = 256;
/// IPComp CPIs are 16 bits (RFC 3173 §2.2); values below 256 are the
/// well-known transform ids (RFC 3173 §3.3), so a CPI that names one SA
/// is 256..=65535.
const MIN_CPI: u32 = 256;
const MAX_CPI: u32 = 0xffff;

/// Statement keywords: a word that starts a statement, for telling "a
/// missing `;`" from "an unknown option".
pub(crate) const COMMANDS: &[&str] = &[
    "add",
    "get",
    "delete",
    "deleteall",
    "flush",
    "dump",
    "spdadd",
    "spddelete",
    "spdflush",
    "spddump",
    "getspi",
    "update",
    "spdupdate",
    "exit",
    "quit",
    "bye",
];

/// The options of `add`.
const SA_OPTIONS: &[&str] = &[
    "-m", "-r", "-u", "-f", "-lh", "-ls", "-bh", "-bs", "-E", "-A", "-C", "-cpu",
];

pub(crate) struct Parser<'a> {
    pub file: &'a str,
    pub tokens: Vec<Token<'a>>,
    pub at: usize,
    pub eof: Pos,
    pub provider: Provider,
}

/// How an SA statement named its protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SaType {
    pub protocol: Protocol,
    pub udp: bool,
}

impl SaType {
    pub fn name(self) -> &'static str {
        match (self.protocol, self.udp) {
            (Protocol::Esp, true) => "esp-udp",
            (Protocol::Esp, false) => "esp",
            (Protocol::Ah, _) => "ah",
            (Protocol::IpComp, _) => "ipcomp",
        }
    }
}

impl<'a> Parser<'a> {
    pub fn err(&self, pos: Pos, kind: ErrorKind) -> ParseError {
        ParseError::new(self.file, pos, kind)
    }

    /// `what`, written at `pos`, is setkey input flowsec refuses: `why`.
    pub fn unsupported(&self, pos: Pos, what: &str, why: &'static str) -> ParseError {
        self.err(
            pos,
            ErrorKind::Unsupported {
                what: what.to_string(),
                why,
            },
        )
    }

    /// `-ctx`, an SA's or a policy's security context.
    pub fn no_security_context(&self, pos: Pos) -> ParseError {
        self.unsupported(pos, "-ctx", "flowsec has no LSM security labels")
    }

    /// `t` is not a valid `what`.
    pub fn bad_number(&self, t: &Token<'_>, what: &'static str) -> ParseError {
        self.err(
            t.pos,
            ErrorKind::BadNumber {
                what,
                token: t.text.to_string(),
            },
        )
    }

    pub fn peek(&self) -> Option<&Token<'a>> {
        self.tokens.get(self.at)
    }

    /// The next token if it is a word.
    pub fn peek_word(&self) -> Option<&Token<'a>> {
        self.peek().filter(|t| t.kind == TokenKind::Word)
    }

    pub fn bump(&mut self) -> Option<Token<'a>> {
        let t = self.tokens.get(self.at).cloned();
        if t.is_some() {
            self.at += 1;
        }
        t
    }

    /// Where the previous token ends (where a missing `;` belongs).
    fn prev_end(&self) -> Pos {
        self.at
            .checked_sub(1)
            .and_then(|i| self.tokens.get(i))
            .map_or(Pos { line: 1, column: 1 }, |t| t.end)
    }

    /// The next token, which must be a word.
    pub fn word(&mut self, expected: &'static str) -> Result<Token<'a>, ParseError> {
        match self.bump() {
            None => Err(self.err(self.eof, ErrorKind::UnexpectedEnd { expected })),
            Some(t) if t.kind == TokenKind::Word => Ok(t),
            Some(t) => Err(self.unexpected(&t, expected)),
        }
    }

    /// "expected X, found Y" for `t`; a `;` that ends a statement too early
    /// reads as what it is.
    pub fn unexpected(&self, t: &Token<'_>, expected: &'static str) -> ParseError {
        let found = match t.kind {
            TokenKind::Quoted => format!("\"{}\"", t.text),
            _ => t.text.to_string(),
        };
        self.err(t.pos, ErrorKind::Expected { expected, found })
    }

    /// The `;` that ends a statement.
    pub fn end(&mut self) -> Result<(), ParseError> {
        match self.peek() {
            Some(t) if t.kind == TokenKind::Semi => {
                self.at += 1;
                Ok(())
            }
            Some(t) => {
                let t = t.clone();
                Err(self.not_an_option(&t))
            }
            None => Err(self.err(
                self.prev_end(),
                ErrorKind::MissingSemicolon {
                    found: "end of input".into(),
                },
            )),
        }
    }

    /// The error for a token where an option or `;` was expected.
    pub fn not_an_option(&self, t: &Token<'_>) -> ParseError {
        if t.kind == TokenKind::Word && COMMANDS.contains(&t.text) {
            self.err(
                self.prev_end(),
                ErrorKind::MissingSemicolon {
                    found: t.text.to_string(),
                },
            )
        } else if t.kind == TokenKind::Word && t.text.starts_with('-') {
            self.err(t.pos, ErrorKind::UnknownOption(t.text.to_string()))
        } else {
            self.unexpected(t, "an option or ';'")
        }
    }

    /// Every statement in the file.
    pub fn statements(&mut self) -> Result<Vec<Statement>, ParseError> {
        let mut out = Vec::new();
        while let Some(t) = self.bump() {
            if t.kind == TokenKind::Semi {
                continue; // An empty statement.
            }
            if t.kind != TokenKind::Word {
                return Err(self.unexpected(&t, "a command"));
            }
            let command = self.statement(&t)?;
            out.push(Statement {
                command,
                pos: t.pos,
            });
        }
        Ok(out)
    }

    fn statement(&mut self, t: &Token<'a>) -> Result<Command, ParseError> {
        let unsupported = |why| Err(self.unsupported(t.pos, t.text, why));
        match t.text {
            "add" => self.add(t.pos),
            "get" | "delete" => {
                let (src, id) = self.sa_id()?;
                self.end()?;
                Ok(if t.text == "get" {
                    Command::Get { src, id }
                } else {
                    Command::Delete { src, id }
                })
            }
            "deleteall" => self.deleteall(),
            "flush" | "dump" => {
                let protocol = match self.peek_word() {
                    Some(_) => Some(self.sa_type()?.protocol),
                    None => None,
                };
                self.end()?;
                Ok(if t.text == "flush" {
                    Command::Flush(protocol)
                } else {
                    Command::Dump(protocol)
                })
            }
            "spdadd" => self.spdadd(),
            "spddelete" => self.spddelete(),
            "spdflush" | "spddump" => {
                self.end()?;
                Ok(if t.text == "spdflush" {
                    Command::SpdFlush
                } else {
                    Command::SpdDump
                })
            }
            "getspi" | "update" => {
                unsupported("SPIs and keys are fixed at 'add' (delete and add to rekey)")
            }
            "spdupdate" => unsupported("use spddelete and spdadd"),
            "exit" | "quit" | "bye" => {
                unsupported("input ends at the end of the file or of standard input")
            }
            other => Err(self.err(t.pos, ErrorKind::UnknownCommand(other.to_string()))),
        }
    }

    /// Optional `-4`/`-6`/`-n` flags.
    pub fn families(&mut self) -> Families {
        match self.peek_word().and_then(|t| Families::parse(t.text)) {
            Some(f) => {
                self.at += 1;
                f
            }
            None => Families::default(),
        }
    }

    /// A host address with an optional `[port]` (setkey's `ipandport`).
    fn host(&mut self, families: Families) -> Result<(IpAddr, Port, Pos), ParseError> {
        let t = self.word("an address")?;
        let spec = parse_spec(&t, 0, t.text).map_err(|(pos, kind)| self.err(pos, kind))?;
        if let Some((_, pos)) = spec.prefix_len {
            return Err(self.err(pos, ErrorKind::BadAddress(t.text.to_string())));
        }
        families.check(spec.addr).map_err(|k| self.err(t.pos, k))?;
        Ok((spec.addr, spec.port, t.pos))
    }

    /// `src dst` of an SA, with their ports and the position of `dst`.
    fn sa_addresses(&mut self) -> Result<[(IpAddr, Port, Pos); 2], ParseError> {
        let families = self.families();
        let src = self.host(families)?;
        let dst = self.host(families)?;
        if src.0.is_ipv4() != dst.0.is_ipv4() {
            return Err(self.err(
                dst.2,
                ErrorKind::FamilyMismatch {
                    what: "SA addresses",
                },
            ));
        }
        Ok([src, dst])
    }

    /// `esp`, `esp-udp`, `ah` or `ipcomp`.
    fn sa_type(&mut self) -> Result<SaType, ParseError> {
        let t = self.word("a protocol")?;
        let (protocol, udp) = match t.text {
            "esp" => (Protocol::Esp, false),
            "esp-udp" => (Protocol::Esp, true),
            "ah" => (Protocol::Ah, false),
            "ipcomp" => (Protocol::IpComp, false),
            "esp-old" | "ah-old" => {
                return Err(self.unsupported(
                    t.pos,
                    t.text,
                    "RFC 1826/1827 AH and ESP are obsolete; use ah or esp",
                ))
            }
            "tcp" => {
                return Err(self.unsupported(
                    t.pos,
                    t.text,
                    "TCP-MD5 (RFC 2385) is a TCP option, not an IPsec SA",
                ))
            }
            other => return Err(self.err(t.pos, ErrorKind::UnknownProtocol(other.to_string()))),
        };
        Ok(SaType { protocol, udp })
    }

    /// An SPI (decimal or `0x` hex), range-checked for the protocol.
    fn spi(&mut self, ty: SaType) -> Result<u32, ParseError> {
        let t = self.word("an SPI")?;
        let value = parse_u64(t.text).ok_or_else(|| self.bad_number(&t, "SPI"))?;
        let bad = |why| self.err(t.pos, ErrorKind::BadSpi { spi: value, why });
        if ty.protocol == Protocol::IpComp {
            if !(u64::from(MIN_CPI)..=u64::from(MAX_CPI)).contains(&value) {
                return Err(bad(
                    "an IPComp CPI is 256..=65535 (16 bits; below 256 are transform ids, RFC 3173 §3.3)",
                ));
            }
        } else if value > u64::from(u32::MAX) {
            return Err(bad("an SPI is 32 bits"));
        } else if value < u64::from(MIN_SPI) {
            return Err(bad("SPIs 0..=255 are reserved (RFC 4303 §2.1)"));
        }
        // Range-checked just above.
        Ok(value as u32)
    }

    fn sa_id(&mut self) -> Result<(IpAddr, SaId), ParseError> {
        let [src, dst] = self.sa_addresses()?;
        let ty = self.sa_type()?;
        self.check_ports(ty, &[src.1, dst.1])?;
        let spi = self.spi(ty)?;
        Ok((
            src.0,
            SaId {
                protocol: ty.protocol,
                spi,
                dst: dst.0,
            },
        ))
    }

    /// Only `esp-udp` SAs take ports (they are its UDP ports).
    fn check_ports(&self, ty: SaType, ports: &[Port]) -> Result<(), ParseError> {
        for port in ports {
            if let Port::Num(_, pos) = port {
                if !ty.udp {
                    return Err(self.err(
                        *pos,
                        ErrorKind::PortNotAllowed {
                            protocol: ty.name().to_string(),
                        },
                    ));
                }
            }
        }
        Ok(())
    }

    fn deleteall(&mut self) -> Result<Command, ParseError> {
        let [src, dst] = self.sa_addresses()?;
        let ty = self.sa_type()?;
        self.check_ports(ty, &[src.1, dst.1])?;
        self.end()?;
        Ok(Command::DeleteAll {
            src: src.0,
            dst: dst.0,
            protocol: ty.protocol,
        })
    }

    /// `add src dst protocol spi [extensions] algorithm...;`
    fn add(&mut self, start: Pos) -> Result<Command, ParseError> {
        let [src, dst] = self.sa_addresses()?;
        let ty = self.sa_type()?;
        self.check_ports(ty, &[src.1, dst.1])?;
        if ty.udp {
            if let Some(t) = self.peek_word() {
                if t.text.parse::<IpAddr>().is_ok() {
                    let t = t.clone();
                    return Err(self.unsupported(
                        t.pos,
                        "esp-udp NAT-OA",
                        "original addresses are for transport-mode checksum fixes flowsec does not do",
                    ));
                }
            }
        }
        let spi = self.spi(ty)?;
        let opts = self.sa_options(ty)?;
        let end = self.peek().map_or(self.eof, |t| t.pos);
        self.end()?;
        let config = self.sa_config(ty, spi, [src, dst], opts, end)?;
        SecurityAssociation::new(&config, &self.provider, Duration::ZERO)
            .map_err(|e| self.err(start, ErrorKind::Sa(e)))?;
        Ok(Command::Add(config))
    }

    fn sa_config(
        &self,
        ty: SaType,
        spi: u32,
        [src, dst]: [(IpAddr, Port, Pos); 2],
        opts: SaOptions,
        end: Pos,
    ) -> Result<SaConfig, ParseError> {
        let mut c = SaConfig::esp(spi, opts.mode, src.0, dst.0);
        c.protocol = ty.protocol;
        // setkey(8) -r: "If size is zero or not specified, replay checks
        // don't take place."
        c.replay_window = opts.replay.unwrap_or(0);
        c.reqid = opts.reqid.unwrap_or(0);
        c.cpu = opts.cpu;
        c.lifetime = opts.lifetime;
        if ty.udp {
            let port = |p: Port| match p {
                Port::Num(n, _) => n,
                Port::Absent | Port::Any => NAT_T_PORT,
            };
            c.encap = Some(UdpEncap::udp(port(src.1), port(dst.1)));
        }
        let missing = |option| {
            self.err(
                end,
                ErrorKind::MissingAlgorithm {
                    option,
                    protocol: ty.name(),
                },
            )
        };
        match ty.protocol {
            Protocol::Esp => {
                let (encr, key) = opts.encr.ok_or_else(|| missing(AlgOption::Encr))?;
                c.encr = encr;
                c.encr_key = key;
                if let Some((integ, key)) = opts.auth {
                    c.integ = integ;
                    c.integ_key = key;
                }
            }
            Protocol::Ah => {
                let (integ, key) = opts.auth.ok_or_else(|| missing(AlgOption::Auth))?;
                c.integ = integ;
                c.integ_key = key;
            }
            Protocol::IpComp => {
                c.ipcomp = opts.comp.ok_or_else(|| missing(AlgOption::Comp))?;
            }
        }
        Ok(c)
    }

    /// The options of an `add` (setkey's `extension_spec` and
    /// `algorithm_spec`), in any order.
    fn sa_options(&mut self, ty: SaType) -> Result<SaOptions, ParseError> {
        let mut o = SaOptions::default();
        let mut seen: Vec<&'static str> = Vec::new();
        let mut auth_pos = None;
        let mut soft_pos: Vec<(&'static str, Pos)> = Vec::new();
        while let Some(t) = self.peek().cloned() {
            if t.kind == TokenKind::Semi {
                break;
            }
            let option = self.sa_option(&t, ty, &seen)?;
            seen.push(option);
            if option == "-ls" || option == "-bs" {
                soft_pos.push((option, t.pos));
            }
            if option == "-A" {
                auth_pos = Some(t.pos);
            }
            self.at += 1;
            self.sa_option_value(option, &mut o)?;
        }
        if let (Some((encr, _)), Some(pos)) = (&o.encr, auth_pos) {
            if is_aead(*encr) {
                let name = algorithms::encr_name(*encr).unwrap_or("the cipher");
                return Err(self.err(pos, ErrorKind::AeadWithAuth { encr: name }));
            }
        }
        check_soft_hard(&o.lifetime).map_err(|what| {
            let option = if what.starts_with("-ls") {
                "-ls"
            } else {
                "-bs"
            };
            let pos = soft_pos
                .iter()
                .find(|(o, _)| *o == option)
                .map_or(self.eof, |(_, pos)| *pos);
            self.err(pos, ErrorKind::SoftAfterHard { what })
        })?;
        Ok(o)
    }

    /// Which of [`SA_OPTIONS`] `t` is, if it is one an SA of type `ty`
    /// takes and not one already `seen` (only `-f` may come again).
    fn sa_option(
        &self,
        t: &Token<'_>,
        ty: SaType,
        seen: &[&'static str],
    ) -> Result<&'static str, ParseError> {
        let option = match SA_OPTIONS.iter().find(|o| **o == t.text) {
            Some(o) => *o,
            None if t.text == "-ctx" => return Err(self.no_security_context(t.pos)),
            None => return Err(self.not_an_option(t)),
        };
        if seen.contains(&option) && option != "-f" {
            return Err(self.err(t.pos, ErrorKind::DuplicateOption(option.to_string())));
        }
        let applies = match option {
            "-r" | "-A" | "-cpu" => ty.protocol != Protocol::IpComp,
            "-E" => ty.protocol == Protocol::Esp,
            "-C" => ty.protocol == Protocol::IpComp,
            _ => true,
        };
        if !applies {
            return Err(self.err(
                t.pos,
                ErrorKind::OptionNotForProtocol {
                    option,
                    protocol: ty.name(),
                },
            ));
        }
        Ok(option)
    }

    /// The value(s) after `option`, into `o`.
    fn sa_option_value(&mut self, option: &str, o: &mut SaOptions) -> Result<(), ParseError> {
        match option {
            "-m" => o.mode = self.mode()?,
            "-r" => o.replay = Some(self.replay()?),
            "-u" => o.reqid = Some(self.number("reqid", u64::from(u32::MAX))? as u32),
            "-f" => self.pad_option()?,
            "-lh" => o.lifetime.hard.add_time = self.seconds()?,
            "-ls" => o.lifetime.soft.add_time = self.seconds()?,
            "-bh" => o.lifetime.hard.bytes = self.bytes()?,
            "-bs" => o.lifetime.soft.bytes = self.bytes()?,
            "-E" => o.encr = Some(self.encr_alg()?),
            "-A" => o.auth = Some(self.auth_alg()?),
            // flowsec's own (Linux: `ip xfrm state ... pcpu N`): a
            // per-resource SA of worker N (RFC 9611).
            "-cpu" => o.cpu = Some(self.number("worker", u64::from(MAX_CPU))? as u32),
            _ => o.comp = Some(self.comp_alg()?),
        }
        Ok(())
    }

    fn mode(&mut self) -> Result<Mode, ParseError> {
        let t = self.word("a mode")?;
        match t.text {
            // setkey(8): the default mode is "any"; an SA of mode any
            // serves transport-mode policies, which is what it is here.
            "transport" | "any" => Ok(Mode::Transport),
            "tunnel" => Ok(Mode::Tunnel),
            other => Err(self.err(t.pos, ErrorKind::BadMode(other.to_string()))),
        }
    }

    /// `-r N`: the window in packets, as ipsec-tools on Linux hands it to
    /// the kernel (`sadb_sa_replay`, which Linux's af_key reads as a
    /// packet count). The BSD manual's "bytes" (KAME's bitmap size, 8
    /// packets each) is not followed; see the crate docs.
    fn replay(&mut self) -> Result<u32, ParseError> {
        let t = self.word("a replay window size")?;
        let n = parse_decimal(t.text).ok_or_else(|| self.bad_number(&t, "replay window"))?;
        if n != 0 && !(u64::from(MIN_WINDOW)..=u64::from(MAX_WINDOW)).contains(&n) {
            return Err(self.err(t.pos, ErrorKind::ReplayWindow(n)));
        }
        Ok(n as u32)
    }

    /// A decimal number up to `max`.
    pub fn number(&mut self, what: &'static str, max: u64) -> Result<u64, ParseError> {
        let t = self.word(what)?;
        parse_decimal(t.text)
            .filter(|n| *n <= max)
            .ok_or_else(|| self.bad_number(&t, what))
    }

    /// `-lh`/`-ls` seconds; 0 is no limit, as in PF_KEY.
    fn seconds(&mut self) -> Result<Option<Duration>, ParseError> {
        let n = self.number("lifetime in seconds", u64::MAX)?;
        Ok((n != 0).then(|| Duration::from_secs(n)))
    }

    /// `-bh`/`-bs` bytes; 0 is no limit.
    fn bytes(&mut self) -> Result<Option<u64>, ParseError> {
        let n = self.number("lifetime in bytes", u64::MAX)?;
        Ok((n != 0).then_some(n))
    }

    /// `-f zero-pad|random-pad|seq-pad|nocyclic-seq`: KAME padding and
    /// sequence flags. Accepted and ignored: ESP padding is always the
    /// RFC 4303 §2.4 monotonic bytes, and sequence numbers never cycle
    /// (§3.3.3); Linux ignores these flags too.
    fn pad_option(&mut self) -> Result<(), ParseError> {
        let t = self.word("a padding option")?;
        match t.text {
            "zero-pad" | "random-pad" | "seq-pad" | "nocyclic-seq" => Ok(()),
            _ => Err(self.unexpected(&t, "zero-pad, random-pad, seq-pad or nocyclic-seq")),
        }
    }
}

struct SaOptions {
    mode: Mode,
    replay: Option<u32>,
    reqid: Option<u32>,
    lifetime: Lifetime,
    encr: Option<(EncrId, Zeroizing<Vec<u8>>)>,
    auth: Option<(IntegId, Zeroizing<Vec<u8>>)>,
    comp: Option<IpcompId>,
    cpu: Option<u32>,
}

/// The highest `-cpu` (flowsec runs at most 256 workers).
const MAX_CPU: u32 = 255;

impl Default for SaOptions {
    fn default() -> Self {
        SaOptions {
            mode: Mode::Transport,
            replay: None,
            reqid: None,
            lifetime: Lifetime::default(),
            encr: None,
            auth: None,
            comp: None,
            cpu: None,
        }
    }
}

fn check_soft_hard(l: &Lifetime) -> Result<(), &'static str> {
    fn over<T: PartialOrd>(soft: Option<T>, hard: Option<T>) -> bool {
        matches!((soft, hard), (Some(s), Some(h)) if s > h)
    }
    let (s, h): (&Limits, &Limits) = (&l.soft, &l.hard);
    if over(s.add_time, h.add_time) {
        return Err("-ls > -lh");
    }
    if over(s.bytes, h.bytes) {
        return Err("-bs > -bh");
    }
    Ok(())
}

/// A decimal number of ASCII digits only (no sign, no spaces).
pub(crate) fn parse_decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Decimal, or hex with `0x` (setkey's `DECSTRING`/`HEXSTRING`).
fn parse_u64(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or(s.strip_prefix("0X")) {
        Some(hex) if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            u64::from_str_radix(hex, 16).ok()
        }
        Some(_) => None,
        None => parse_decimal(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(parse_u64("0x1000"), Some(4096));
        assert_eq!(parse_u64("4096"), Some(4096));
        assert_eq!(parse_u64("+1"), None);
        assert_eq!(parse_u64("0x"), None);
        assert_eq!(parse_decimal("99999999999999999999999"), None);
    }
}
