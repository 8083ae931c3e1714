//! The SPD statements: `spdadd` and `spddelete` with their selectors
//! (`src_range dst_range upperspec`) and policies (`-P direction
//! [priority] discard|none|ipsec rules...`), as setkey(8) and
//! ipsec_set_policy(3) (libipsec `policy_parse.y`) define them.

use std::net::IpAddr;

use flowsec_ipsec::sa::{Mode, Protocol};
use flowsec_ipsec::spd::{
    Action, Direction, IpPrefix, Level, Policy, PortRange, SaTemplate, Selector,
};

use crate::addr::{parse_spec, AddrSpec, Port};
use crate::error::{ErrorKind, ParseError};
use crate::lexer::{Token, TokenKind};
use crate::model::Command;
use crate::parser::{parse_decimal, Parser, COMMANDS};

/// IP protocol numbers with setkey/`/etc/protocols` names.
pub(crate) const UPPER: &[(&str, u8)] = &[
    ("icmp", 1),
    ("ipencap", 4),
    ("ip4", 4),
    ("tcp", 6),
    ("udp", 17),
    ("ipv6", 41),
    ("gre", 47),
    ("esp", 50),
    ("ah", 51),
    ("ipv6-icmp", 58),
    ("icmp6", 58),
    ("ipcomp", 108),
    ("sctp", 132),
];

/// setkey's number for "any upper-layer protocol" (`IPSEC_ULPROTO_ANY`).
const ULPROTO_ANY: u64 = 255;
/// Protocols with ports: only these take `[port]` in a selector.
const WITH_PORTS: &[u8] = &[6, 17, 132];
const ICMP: u8 = 1;
const ICMPV6: u8 = 58;
const GRE: u8 = 47;
/// `unique:N` takes 1..=32767 (setkey(8), `IPSEC_MANUAL_REQID_MAX`).
const MAX_MANUAL_REQID: u64 = 32767;
/// libipsec's priority bases, relative to `def` (`PRIORITY_HIGH`,
/// `PRIORITY_LOW` are 0x40000000 and 0xC0000000 around 0x80000000).
pub(crate) const PRIORITY_BASE: i64 = 0x4000_0000;

impl<'a> Parser<'a> {
    /// `spdadd [-46n] src_range dst_range upperspec policy;`
    pub(crate) fn spdadd(&mut self) -> Result<Command, ParseError> {
        let selector = self.selector()?;
        let (direction, rest) = self.policy_spec(false)?;
        let (priority, action) = rest.unwrap_or((0, Action::Bypass));
        Ok(Command::SpdAdd(Policy {
            direction,
            selector,
            action,
            priority,
        }))
    }

    /// `spddelete [-46n] src_range dst_range upperspec -P direction;`
    /// (a full policy after the direction is accepted and ignored, as
    /// ipsec-tools does).
    pub(crate) fn spddelete(&mut self) -> Result<Command, ParseError> {
        let selector = self.selector()?;
        let (direction, _) = self.policy_spec(true)?;
        Ok(Command::SpdDelete {
            direction,
            selector,
        })
    }

    fn selector(&mut self) -> Result<Selector, ParseError> {
        let families = self.families();
        if let Some(t) = self.peek_word().filter(|t| t.text == "tagged").cloned() {
            return Err(self.unsupported(
                t.pos,
                "tagged",
                "PF tags are a BSD packet-filter feature",
            ));
        }
        let (src_t, src) = self.range("a source address range")?;
        let (dst_t, dst) = self.range("a destination address range")?;
        for (t, spec) in [(&src_t, &src), (&dst_t, &dst)] {
            families.check(spec.addr).map_err(|k| self.err(t.pos, k))?;
        }
        if src.addr.is_ipv4() != dst.addr.is_ipv4() {
            return Err(self.err(dst_t.pos, ErrorKind::FamilyMismatch { what: "selector" }));
        }
        let up = self.word("an upper-layer protocol")?;
        let protocol = upper_protocol(up.text)
            .ok_or_else(|| self.err(up.pos, ErrorKind::BadUpperSpec(up.text.to_string())))?;
        let mut selector = Selector::between(prefix(&src), prefix(&dst));
        selector.protocol = protocol;
        for (spec, ports) in [
            (&src, &mut selector.src_ports),
            (&dst, &mut selector.dst_ports),
        ] {
            if let Port::Num(n, pos) = spec.port {
                if !protocol.is_some_and(|p| WITH_PORTS.contains(&p)) {
                    return Err(self.err(
                        pos,
                        ErrorKind::PortNotAllowed {
                            protocol: up.text.to_string(),
                        },
                    ));
                }
                *ports = PortRange::single(n);
            }
        }
        match protocol {
            Some(ICMP | ICMPV6) => self.icmp_type_code(&mut selector)?,
            Some(GRE) => {
                if let Some(t) = self
                    .peek_word()
                    .filter(|t| !t.text.starts_with('-'))
                    .cloned()
                {
                    return Err(self.unsupported(
                        t.pos,
                        "GRE key",
                        "selectors match addresses, protocol and ports only",
                    ));
                }
            }
            _ => {}
        }
        if let Some(t) = self.peek_word().filter(|t| t.text == "-ctx").cloned() {
            return Err(self.no_security_context(t.pos));
        }
        Ok(selector)
    }

    fn range(&mut self, expected: &'static str) -> Result<(Token<'a>, AddrSpec), ParseError> {
        let t = self.word(expected)?;
        let spec = parse_spec(&t, 0, t.text).map_err(|(pos, kind)| self.err(pos, kind))?;
        Ok((t, spec))
    }

    /// `icmp6 135,0`: ICMP type and code, which RFC 4301 §4.4.1.1 puts in
    /// the selector's port fields. setkey(8): "When a zero is specified,
    /// the kernel deals with it as a wildcard."
    fn icmp_type_code(&mut self, selector: &mut Selector) -> Result<(), ParseError> {
        let Some(t) = self
            .peek_word()
            .filter(|t| !t.text.starts_with('-'))
            .cloned()
        else {
            return Ok(());
        };
        self.at += 1;
        let bad = || self.bad_number(&t, "ICMP type,code");
        let (ty, code) = t.text.split_once(',').ok_or_else(bad)?;
        let field = |s: &str| {
            parse_decimal(s).filter(|n| *n <= 255).map(|n| match n {
                0 => PortRange::ANY,
                n => PortRange::single(n as u16),
            })
        };
        selector.src_ports = field(ty).ok_or_else(bad)?;
        selector.dst_ports = field(code).ok_or_else(bad)?;
        Ok(())
    }

    /// `-P direction [priority] action [rules]` up to and including the
    /// `;`. With `bare_ok` (spddelete) the direction alone will do.
    fn policy_spec(
        &mut self,
        bare_ok: bool,
    ) -> Result<(Direction, Option<(i32, Action)>), ParseError> {
        let p = self.word("-P")?;
        if p.text != "-P" {
            return Err(self.not_an_option(&p));
        }
        let d = self.word("a direction")?;
        let direction = match d.text {
            "in" => Direction::In,
            "out" => Direction::Out,
            "fwd" => Direction::Fwd,
            other => return Err(self.err(d.pos, ErrorKind::BadDirection(other.to_string()))),
        };
        if bare_ok && self.peek().is_some_and(|t| t.kind == TokenKind::Semi) {
            self.end()?;
            return Ok((direction, None));
        }
        let priority = self.priority()?;
        let a = self.word("none, discard or ipsec")?;
        let action = match a.text {
            "none" => Action::Bypass,
            "discard" => Action::Discard,
            "ipsec" => Action::Protect(self.rules()?),
            other => return Err(self.err(a.pos, ErrorKind::BadAction(other.to_string()))),
        };
        self.end()?;
        Ok((direction, Some((priority, action))))
    }

    /// `prio N`, `prio -N`, `prio def|low|high [+|- N]`, as flowsec's
    /// priority (lower first; 0 is setkey's `def`). setkey's higher
    /// priority is closer to the front, so the sign flips.
    fn priority(&mut self) -> Result<i32, ParseError> {
        if !self
            .peek_word()
            .is_some_and(|t| t.text == "prio" || t.text == "priority")
        {
            return Ok(0);
        }
        self.at += 1;
        let start = self.peek().map_or(self.eof, |t| t.pos);
        let mut spec = String::new();
        while let Some(t) = self.peek_word() {
            if matches!(t.text, "none" | "discard" | "ipsec" | "bypass" | "entrust") {
                break;
            }
            spec.push_str(t.text);
            self.at += 1;
        }
        parse_priority(&spec).ok_or_else(|| self.err(start, ErrorKind::BadPriority(spec)))
    }

    /// The rules of an `ipsec` policy, innermost first (setkey(8): "if an
    /// IP header was followed by an AH header followed by an ESP header
    /// ... the rule would be: esp/transport//require ah/transport//require").
    fn rules(&mut self) -> Result<Vec<SaTemplate>, ParseError> {
        let mut rules: Vec<SaTemplate> = Vec::new();
        while let Some(t) = self.peek_word().cloned() {
            if t.text.starts_with('-') || COMMANDS.contains(&t.text) {
                break;
            }
            self.at += 1;
            let rule = self.rule(&t)?;
            if rules.iter().any(|r| r.protocol == rule.protocol) {
                return Err(self.err(
                    t.pos,
                    ErrorKind::BadRule {
                        rule: t.text.to_string(),
                        why: "the protocol appears twice in the bundle",
                    },
                ));
            }
            rules.push(rule);
        }
        if rules.is_empty() {
            return Err(match self.peek() {
                Some(t) => self.unexpected(t, "a rule (protocol/mode/src-dst/level)"),
                None => self.err(
                    self.eof,
                    ErrorKind::UnexpectedEnd {
                        expected: "a rule (protocol/mode/src-dst/level)",
                    },
                ),
            });
        }
        Ok(rules)
    }

    /// `protocol/mode/src-dst/level`.
    fn rule(&self, t: &Token<'_>) -> Result<SaTemplate, ParseError> {
        let bad = |why| {
            self.err(
                t.pos,
                ErrorKind::BadRule {
                    rule: t.text.to_string(),
                    why,
                },
            )
        };
        let parts: Vec<&str> = t.text.split('/').collect();
        if !(2..=4).contains(&parts.len()) {
            return Err(bad("expected protocol/mode/src-dst/level"));
        }
        let protocol = match parts[0] {
            "esp" => Protocol::Esp,
            "ah" => Protocol::Ah,
            "ipcomp" => Protocol::IpComp,
            _ => return Err(bad("the protocol is esp, ah or ipcomp")),
        };
        let mode = match parts[1] {
            "transport" => Mode::Transport,
            "tunnel" => Mode::Tunnel,
            _ => return Err(bad("the mode is transport or tunnel")),
        };
        let endpoints = parts.get(2).copied().unwrap_or("");
        let offset = parts[0].len() + parts[1].len() + 2;
        let tunnel = self.endpoints(t, offset, endpoints)?;
        match (mode, tunnel) {
            (Mode::Tunnel, None) => return Err(bad("tunnel mode needs src-dst endpoints")),
            (Mode::Transport, Some(_)) => {
                return Err(bad(
                    "transport mode takes the packet's own addresses; leave src-dst empty",
                ))
            }
            _ => {}
        }
        let (level, reqid) = match parts.get(3).copied().unwrap_or("") {
            // Linux's af_key makes every level but `use` mandatory, so
            // `default` (the sysctl default on BSD) is `require` here.
            "" | "default" | "require" => (Level::Require, 0),
            "use" => (Level::Use, 0),
            "unique" => (Level::Unique, 0),
            other => match other.strip_prefix("unique:").and_then(parse_decimal) {
                Some(n) if (1..=MAX_MANUAL_REQID).contains(&n) => (Level::Unique, n as u32),
                Some(_) => return Err(bad("unique:N takes N in 1..=32767")),
                None => return Err(bad("the level is default, use, require or unique[:N]")),
            },
        };
        Ok(SaTemplate {
            protocol,
            mode,
            tunnel,
            level,
            reqid,
        })
    }

    /// `A-B` (each optionally with `[port]`), or empty. Ports are
    /// accepted for ESP-in-UDP endpoints as setkey(8) shows them, and
    /// ignored: Linux's xfrm templates carry no ports either, and flowsec
    /// finds the SA by its SPI.
    fn endpoints(
        &self,
        t: &Token<'_>,
        offset: usize,
        text: &str,
    ) -> Result<Option<(IpAddr, IpAddr)>, ParseError> {
        if text.is_empty() {
            return Ok(None);
        }
        let Some((a, b)) = text.split_once('-') else {
            return Err(self.err(
                t.pos_at_byte(offset),
                ErrorKind::BadRule {
                    rule: t.text.to_string(),
                    why: "endpoints are written src-dst",
                },
            ));
        };
        let parse = |text: &str, at: usize| -> Result<IpAddr, ParseError> {
            let spec = parse_spec(t, at, text).map_err(|(pos, kind)| self.err(pos, kind))?;
            match spec.prefix_len {
                Some((_, pos)) => Err(self.err(pos, ErrorKind::BadAddress(text.to_string()))),
                None => Ok(spec.addr),
            }
        };
        let src = parse(a, offset)?;
        let b_at = offset + a.len() + 1;
        let dst = parse(b, b_at)?;
        if src.is_ipv4() != dst.is_ipv4() {
            return Err(self.err(
                t.pos_at_byte(b_at),
                ErrorKind::FamilyMismatch {
                    what: "tunnel endpoints",
                },
            ));
        }
        Ok(Some((src, dst)))
    }
}

fn prefix(spec: &AddrSpec) -> IpPrefix {
    match spec.prefix_len {
        // The length was checked against the family in `parse_spec`.
        Some((len, _)) => IpPrefix::new(spec.addr, len).unwrap_or(IpPrefix::host(spec.addr)),
        None => IpPrefix::host(spec.addr),
    }
}

/// An upperspec: `Some(None)` for any, `Some(Some(n))` for protocol n.
fn upper_protocol(text: &str) -> Option<Option<u8>> {
    if text == "any" {
        return Some(None);
    }
    if let Some((_, n)) = UPPER.iter().find(|(name, _)| *name == text) {
        return Some(Some(*n));
    }
    match parse_decimal(text)? {
        ULPROTO_ANY => Some(None),
        n => u8::try_from(n).ok().map(Some),
    }
}

/// The joined priority words, as flowsec's priority.
fn parse_priority(spec: &str) -> Option<i32> {
    let number = |s: &str| parse_decimal(s).and_then(|n| i64::try_from(n).ok());
    let bases = [("high", -PRIORITY_BASE), ("def", 0), ("low", PRIORITY_BASE)];
    let value = match bases.iter().find(|(name, _)| spec.starts_with(name)) {
        Some((name, base)) => {
            let rest = &spec[name.len()..];
            if rest.is_empty() {
                *base
            } else if let Some(n) = rest.strip_prefix('+').and_then(number) {
                // Raising a policy puts it nearer the front.
                (n <= PRIORITY_BASE).then(|| base - n)?
            } else {
                let n = rest.strip_prefix('-').and_then(number)?;
                (n < PRIORITY_BASE).then(|| base + n)?
            }
        }
        None => match spec.strip_prefix('-') {
            Some(n) => number(n)?,
            None => -number(spec)?,
        },
    };
    i32::try_from(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities() {
        assert_eq!(parse_priority("10"), Some(-10));
        assert_eq!(parse_priority("-10"), Some(10));
        assert_eq!(parse_priority("def"), Some(0));
        assert_eq!(parse_priority("high"), Some(-0x4000_0000));
        assert_eq!(parse_priority("low-5"), Some(0x4000_0005));
        assert_eq!(parse_priority("def+5"), Some(-5));
        assert_eq!(parse_priority("high+1073741824"), Some(i32::MIN));
        assert_eq!(parse_priority("high+1073741825"), None);
        assert_eq!(parse_priority("2147483648"), Some(i32::MIN));
        assert_eq!(parse_priority("2147483649"), None);
        assert_eq!(parse_priority(""), None);
        assert_eq!(parse_priority("medium"), None);
    }

    #[test]
    fn upper_protocols() {
        assert_eq!(upper_protocol("any"), Some(None));
        assert_eq!(upper_protocol("255"), Some(None));
        assert_eq!(upper_protocol("icmp6"), Some(Some(58)));
        assert_eq!(upper_protocol("17"), Some(Some(17)));
        assert_eq!(upper_protocol("256"), None);
        assert_eq!(upper_protocol("tcpx"), None);
    }
}
