//! `setkey -D` / `-DP` style text for SAs and policies, laid out as
//! ipsec-tools' `pfkey_sadump()` and `pfkey_spdump()` (libipsec
//! `pfkey_dump.c`, `ipsec_dump_policy.c`) print them on Linux, so that
//! eyes and scripts used to setkey read it the same way.
//!
//! Differences, each on purpose:
//! - **No keys.** setkey prints each key in hex after its algorithm
//!   (`E: aes-cbc  0123abcd ...`); flowsec prints the algorithm only,
//!   because secrets never appear in output that ends up in logs, tickets
//!   and terminal scrollback. There is no option to print them.
//! - Times are ages in seconds (`diff: 12(s)`, `last: 3(s)`), not ctime(3)
//!   dates: the core has no wall clock, only the caller's monotonic time.
//! - `flags=` is always 0 (flowsec has no PF_KEY SA flags), and the PF_KEY
//!   bookkeeping lines (`sadb_seq= pid= refcnt=`, `spid=`) are left out.
//! - No trailing spaces.

use core::fmt::Write;
use core::time::Duration;

use flowsec_crypto::IntegId;
use flowsec_ipsec::lifetime::{Limits, SaState};
use flowsec_ipsec::sa::{Protocol, SaConfig, SecurityAssociation};
use flowsec_ipsec::spd::{Action, Direction, Level, Policy, PortRange, SaTemplate, Selector};

use crate::algorithms::{auth_name, comp_name, encr_name};
use crate::policy::{PRIORITY_BASE, UPPER};

/// What a live SA adds to its configuration in a dump: the sequence
/// counter, the state and the usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SaLive {
    /// The last sequence number sent.
    pub seq: u64,
    /// Mature, dying or expired.
    pub state: SaState,
    /// Time since the SA was added.
    pub age: Duration,
    /// Time since its first packet, if it has had one.
    pub since_first_use: Option<Duration>,
    /// Bytes processed.
    pub bytes: u64,
    /// Packets processed.
    pub packets: u64,
}

impl SaLive {
    /// An SA just added: what `setkey -D` shows right after `add`.
    pub const FRESH: SaLive = SaLive {
        seq: 0,
        state: SaState::Mature,
        age: Duration::ZERO,
        since_first_use: None,
        bytes: 0,
        packets: 0,
    };

    /// The live part of `sa` at `now`.
    pub fn of(sa: &SecurityAssociation, now: Duration) -> Self {
        let usage = sa.usage();
        SaLive {
            seq: sa.seq(),
            state: sa.state(now),
            age: now.saturating_sub(usage.added),
            since_first_use: usage.first_use.map(|t| now.saturating_sub(t)),
            bytes: usage.bytes,
            packets: usage.packets,
        }
    }
}

/// One SA as `setkey -D` prints it (without its keys; see the module
/// docs). `live` is `None` for an SA not yet installed, which prints as
/// [`SaLive::FRESH`].
pub fn format_sa(config: &SaConfig, live: Option<&SaLive>) -> String {
    let live = live.unwrap_or(&SaLive::FRESH);
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_sa(&mut out, config, live);
    out
}

fn write_sa(out: &mut String, c: &SaConfig, live: &SaLive) -> core::fmt::Result {
    match c.encap {
        Some(e) => writeln!(out, "{}[{}] {}[{}]", c.src, e.src_port, c.dst, e.dst_port)?,
        None => writeln!(out, "{} {}", c.src, c.dst)?,
    }
    let satype = match (c.protocol, c.encap.is_some()) {
        (Protocol::Esp, true) => "esp-udp",
        (p, _) => match p {
            Protocol::Esp => "esp",
            Protocol::Ah => "ah",
            Protocol::IpComp => "ipcomp",
        },
    };
    write!(
        out,
        "\t{satype} mode={} spi={}({:#010x}) reqid={}({:#010x})",
        c.mode, c.spi, c.spi, c.reqid, c.reqid
    )?;
    // A per-resource SA (`-cpu`, flowsec's own): its worker.
    match c.cpu {
        Some(cpu) => writeln!(out, " cpu={cpu}")?,
        None => writeln!(out)?,
    }
    write_algorithms(out, c)?;
    let state = match live.state {
        SaState::Mature => "mature",
        SaState::Dying => "dying",
        SaState::Expired => "dead",
    };
    let replay = if c.protocol == Protocol::IpComp {
        0
    } else {
        c.replay_window
    };
    writeln!(
        out,
        "\tseq={:#010x} replay={replay} flags=0x00000000 state={state}",
        live.seq
    )?;
    write_lifetimes(out, c, live)
}

/// The `E:`, `C:` and `A:` lines: the SA's algorithms (never its keys).
fn write_algorithms(out: &mut String, c: &SaConfig) -> core::fmt::Result {
    match c.protocol {
        Protocol::Esp => {
            let name = encr_name(c.encr).map_or_else(|| c.encr.to_string(), str::to_string);
            writeln!(out, "\tE: {name}")?;
        }
        Protocol::IpComp => {
            let name = comp_name(c.ipcomp).map_or_else(|| c.ipcomp.to_string(), str::to_string);
            writeln!(out, "\tC: {name}")?;
        }
        Protocol::Ah => {}
    }
    if c.protocol != Protocol::IpComp && c.integ != IntegId::NONE {
        let name = auth_name(c.integ).map_or_else(|| c.integ.to_string(), str::to_string);
        writeln!(out, "\tA: {name}")?;
    }
    Ok(())
}

/// The usage so far beside the hard and soft limits: age, time since
/// first use, bytes and packets.
fn write_lifetimes(out: &mut String, c: &SaConfig, live: &SaLive) -> core::fmt::Result {
    let (h, s): (&Limits, &Limits) = (&c.lifetime.hard, &c.lifetime.soft);
    let secs = |d: Option<Duration>| d.map_or(0, |d| d.as_secs());
    writeln!(
        out,
        "\tdiff: {}(s)\thard: {}(s)\tsoft: {}(s)",
        live.age.as_secs(),
        secs(h.add_time),
        secs(s.add_time)
    )?;
    let last = live
        .since_first_use
        .map_or_else(|| "never".to_string(), |d| format!("{}(s)", d.as_secs()));
    writeln!(
        out,
        "\tlast: {last}\thard: {}(s)\tsoft: {}(s)",
        secs(h.use_time),
        secs(s.use_time)
    )?;
    writeln!(
        out,
        "\tcurrent: {}(bytes)\thard: {}(bytes)\tsoft: {}(bytes)",
        live.bytes,
        h.bytes.unwrap_or(0),
        s.bytes.unwrap_or(0)
    )?;
    writeln!(
        out,
        "\tallocated: {}\thard: {}\tsoft: {}",
        live.packets,
        h.packets.unwrap_or(0),
        s.packets.unwrap_or(0)
    )
}

/// One policy as `setkey -DP` prints it.
pub fn format_policy(policy: &Policy) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_policy(&mut out, policy);
    out
}

fn write_policy(out: &mut String, p: &Policy) -> core::fmt::Result {
    write_selector(out, &p.selector)?;
    let direction = match p.direction {
        Direction::In => "in",
        Direction::Out => "out",
        Direction::Fwd => "fwd",
    };
    let action = match p.action {
        Action::Bypass => "none",
        Action::Discard => "discard",
        Action::Protect(_) => "ipsec",
    };
    writeln!(out, "\t{direction} {} {action}", priority(p.priority))?;
    if let Action::Protect(rules) = &p.action {
        for rule in rules {
            writeln!(out, "\t{}", format_rule(rule))?;
        }
    }
    Ok(())
}

fn write_selector(out: &mut String, s: &Selector) -> core::fmt::Result {
    let portless = matches!(s.protocol, Some(1 | 58 | 47 | 135));
    for (prefix, ports) in [(&s.src, &s.src_ports), (&s.dst, &s.dst_ports)] {
        write!(out, "{}", prefix.addr())?;
        let full = if prefix.addr().is_ipv4() { 32 } else { 128 };
        if prefix.prefix_len() != full {
            write!(out, "/{}", prefix.prefix_len())?;
        }
        if !portless {
            write!(out, "[{}]", port_range(ports, "any"))?;
        }
        out.push(' ');
    }
    match s.protocol {
        None => out.push_str("any"),
        Some(n) => match UPPER.iter().find(|(_, p)| *p == n) {
            Some((name, _)) => out.push_str(name),
            None => write!(out, "{n}")?,
        },
    }
    if matches!(s.protocol, Some(1 | 58))
        && (s.src_ports != PortRange::ANY || s.dst_ports != PortRange::ANY)
    {
        // ICMP type and code; 0 is setkey's wildcard.
        write!(
            out,
            " {},{}",
            port_range(&s.src_ports, "0"),
            port_range(&s.dst_ports, "0")
        )?;
    }
    out.push('\n');
    Ok(())
}

fn port_range(r: &PortRange, any: &str) -> String {
    if *r == PortRange::ANY {
        any.to_string()
    } else if r.start == r.end {
        r.start.to_string()
    } else {
        format!("{}-{}", r.start, r.end)
    }
}

/// ipsec-tools' `prio def|high|low [+|- N]`, choosing the nearest base as
/// `ipsec_dump_policy()` does.
fn priority(p: i32) -> String {
    let p = i64::from(p);
    let (name, base) = if p < -PRIORITY_BASE / 2 {
        ("high", -PRIORITY_BASE)
    } else if p >= PRIORITY_BASE / 2 {
        ("low", PRIORITY_BASE)
    } else {
        ("def", 0)
    };
    // setkey's offsets raise a policy towards the front: the sign flips.
    match base - p {
        0 => format!("prio {name}"),
        n if n > 0 => format!("prio {name} + {n}"),
        n => format!("prio {name} - {}", -n),
    }
}

/// `esp/tunnel/A-B/require`, `ah/transport//unique:5`.
pub fn format_rule(t: &SaTemplate) -> String {
    let protocol = match t.protocol {
        Protocol::Esp => "esp",
        Protocol::Ah => "ah",
        Protocol::IpComp => "ipcomp",
    };
    let endpoints = t
        .tunnel
        .map_or_else(String::new, |(a, b)| format!("{a}-{b}"));
    let level = match t.level {
        Level::Require => "require",
        Level::Use => "use",
        Level::Unique => "unique",
    };
    let mut out = format!("{protocol}/{}/{endpoints}/{level}", t.mode);
    if t.reqid != 0 {
        // ipsec-tools marks reqids beyond the manual range with '#'.
        let mark = if t.reqid > 32767 { '#' } else { ':' };
        let _ = write!(out, "{mark}{}", t.reqid);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_round_trip_through_setkey_spelling() {
        assert_eq!(priority(0), "prio def");
        assert_eq!(priority(-5), "prio def + 5");
        assert_eq!(priority(5), "prio def - 5");
        assert_eq!(priority(-0x4000_0000), "prio high");
        assert_eq!(priority(0x4000_0003), "prio low - 3");
        assert_eq!(priority(i32::MIN), "prio high + 1073741824");
    }
}
