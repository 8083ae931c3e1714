//! The inbound plaintext filter (RFC 4301 §5.2): traffic that an inbound
//! (`in`) or forward (`fwd`) PROTECT policy covers must arrive through the
//! tunnel. flowsec sees only what the kernel routes into its TUN device, so
//! plaintext that reaches the gateway by any other interface would be
//! forwarded or delivered by the kernel; an nftables table of flowsec's own
//! (`inet flowsec_<tun>`) drops it, following the SPD in lookup order
//! (BYPASS accepts, DISCARD and PROTECT drop). Decapsulated packets (from
//! the TUN), ESP, AH, IKE/NAT-T (UDP 500/4500) and the RFC 9329 streams
//! (TCP to a `--tcp-listen` port, and the answers on the connections we
//! open to a peer's) pass.
//!
//! Installed with `nft -f -` in one transaction (replace the table whole),
//! kept in step with the SPD, and removed when dropped. It fails closed:
//! without `nft`, or when the kernel refuses the table, the daemon does not
//! start (unless `--no-plaintext-filter` says to run without one); a later
//! change that the filter cannot follow is refused (setkey) or, for what
//! IKE installed, retried until it takes and shown by `ctl status`.
//!
//! ESP, AH and IKE/NAT-T (UDP 500/4500) are accepted only in the input
//! chain, that is to the gateway's own addresses: forwarded, they are
//! plaintext like any other (a spoofed ESP packet from the peer's subnet
//! to an inner host is dropped by the forward chain's policy rules). In
//! the input chain a datagram is judged by its first fragment (the later
//! ones complete nothing else); forwarded fragments are judged one by one,
//! and where a policy's ports decide, every fragment it could cover is
//! dropped (RFC 4301 §7).

use std::fmt::Write as _;

use flowsec_ipsec::spd::{Action, Direction, IpPrefix, PortRange, Selector, Spd};

use crate::routes::BYPASS_MARK;
use crate::tool::{self, ToolError};
use flowsec_wire::udp_encap::NAT_T_PORT;

/// The nftables table of one daemon, removed when dropped.
pub struct Filter {
    table: String,
    tun: String,
    /// The table is installed (false: `--no-plaintext-filter`).
    active: bool,
    /// The last sync that failed, until one succeeds.
    stale: Option<String>,
    /// The TCP ports of RFC 9329's streams (ours to listen on, and the
    /// peers' we connect to): their segments pass.
    tcp_ports: Vec<u16>,
}

impl Filter {
    /// Install the table for `spd`, passing the RFC 9329 streams on
    /// `tcp_ports`; an error (no `nft`, or nftables refused the table)
    /// names why.
    pub fn install(tun: &str, tcp_ports: &[u16], spd: &Spd) -> Result<Filter, ToolError> {
        let mut f = Filter {
            table: table_name(tun),
            tun: tun.to_string(),
            active: true,
            stale: None,
            tcp_ports: tcp_ports.to_vec(),
        };
        let probe = tool::command("nft").and_then(|mut c| {
            c.arg("--version").output().map_err(|error| ToolError::Run {
                command: "nft (nftables)".into(),
                error,
            })
        });
        if let Err(e) = probe {
            f.active = false;
            return Err(e);
        }
        if let Err(e) = f.sync(spd) {
            f.active = false;
            return Err(e);
        }
        Ok(f)
    }

    /// No filter (`--no-plaintext-filter`).
    pub fn none(tun: &str) -> Filter {
        Filter {
            table: table_name(tun),
            tun: tun.to_string(),
            active: false,
            stale: None,
            tcp_ports: Vec::new(),
        }
    }

    /// Replace the table with the one `spd` needs. On error the table is
    /// as it was, and [`Filter::stale`] says so until a sync succeeds.
    pub fn sync(&mut self, spd: &Spd) -> Result<(), ToolError> {
        if !self.active {
            return Ok(());
        }
        let done = nft(&ruleset(&self.table, &self.tun, &self.tcp_ports, spd));
        self.stale = done.as_ref().err().map(ToString::to_string);
        done
    }

    /// Why the table does not follow the SPD now, if it does not.
    pub fn stale(&self) -> Option<&str> {
        self.stale.as_deref()
    }

    /// The table's name (`inet flowsec_<tun>`), when installed.
    pub fn table(&self) -> Option<&str> {
        self.active.then_some(self.table.as_str())
    }
}

impl Drop for Filter {
    fn drop(&mut self) {
        if self.active {
            let _ = nft(&format!("delete table inet {}\n", self.table));
        }
    }
}

pub(crate) fn table_name(tun: &str) -> String {
    let safe: String = tun
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("flowsec_{safe}")
}

fn nft(script: &str) -> Result<(), ToolError> {
    tool::run("nft", &["-f", "-"], Some(script.as_bytes()), "nft")
}

/// The whole table for `spd`, replacing any older one in one transaction;
/// the RFC 9329 streams on `tcp_ports` pass.
pub fn ruleset(table: &str, tun: &str, tcp_ports: &[u16], spd: &Spd) -> String {
    let mut s = String::new();
    // Creating then deleting makes the delete succeed when there is no
    // table yet; all three statements are one transaction.
    let _ = writeln!(s, "table inet {table} {{}}");
    let _ = writeln!(s, "delete table inet {table}");
    let _ = writeln!(s, "table inet {table} {{");
    for (chain, direction) in [("input", Direction::In), ("forward", Direction::Fwd)] {
        let _ = writeln!(
            s,
            "  chain {chain} {{\n    type filter hook {chain} priority filter; policy accept;"
        );
        let _ = writeln!(s, "    iifname \"{tun}\" accept");
        // The tunnel's own traffic ends here, at the gateway (input chain).
        if direction == Direction::In {
            let _ = writeln!(s, "    meta l4proto {{ esp, ah }} accept");
            let _ = writeln!(s, "    udp dport {{ 500, {NAT_T_PORT} }} accept");
            // RFC 9329: IKE and ESP in TCP are the tunnel's own traffic
            // too; an inbound policy that covers the peer's outer address
            // must not drop the stream that carries it. Accepted streams
            // come to our listening ports; on one we opened, the peer
            // answers from its port, on a connection conntrack saw us open
            // with flowsec's mark (the output chain below copies it): not
            // any other program's connection to such a port, nor a SYN.
            if let Some(set) = port_set(tcp_ports) {
                let _ = writeln!(s, "    tcp dport {set} accept");
                let _ = writeln!(
                    s,
                    "    tcp sport {set} ct mark {BYPASS_MARK:#x} ct state established accept"
                );
            }
            // A datagram to the gateway is judged by its first fragment:
            // the later ones reach no socket unless the kernel reassembles
            // them behind a first fragment this chain accepted, and the
            // reassembled datagram is that fragment's protocol and ports
            // (RFC 8200 §4.5: the Next Header of the offset-0 fragment;
            // IPv4 queues fragments by protocol too). nftables cannot name
            // the protocol of a later IPv6 fragment that carries AH (an
            // extension header to it), so without this such fragments fell
            // to the policy rules below and AH over IPv6 never reassembled.
            let _ = writeln!(s, "    ip frag-off & 0x1fff != 0 accept");
            let _ = writeln!(s, "    frag frag-off != 0 accept");
        }
        for p in spd.iter().filter(|p| p.direction == direction) {
            let verdict = match p.action {
                Action::Bypass => "accept",
                Action::Discard | Action::Protect(_) => "counter drop",
            };
            // A fragment that nftables cannot see the ports of (a later
            // one; a first one too short to hold them) never matches a
            // port match: where the ports decide a drop, every fragment
            // between those addresses on that protocol is dropped (RFC
            // 4301 §7: no fragment passes by a guess at its ports).
            if verdict != "accept" {
                if let Some(m) = fragment_matcher(&p.selector) {
                    let _ = writeln!(s, "    {m} {verdict}");
                }
            }
            if let Some(m) = matcher(&p.selector) {
                let _ = writeln!(s, "    {m} {verdict}");
            }
        }
        let _ = writeln!(s, "  }}");
    }
    if !tcp_ports.is_empty() {
        // The connections flowsec opens carry its socket mark: their
        // conntrack entries remember it for the answers (input above).
        let _ = writeln!(
            s,
            "  chain output {{\n    type filter hook output priority filter; policy accept;\n    meta mark {BYPASS_MARK:#x} ct mark set {BYPASS_MARK:#x}\n  }}"
        );
    }
    let _ = writeln!(s, "}}");
    s
}

/// The nftables match of a selector; `None` for mixed families.
fn matcher(sel: &Selector) -> Option<String> {
    let family = |p: &IpPrefix| if p.addr().is_ipv4() { "ip" } else { "ip6" };
    if family(&sel.src) != family(&sel.dst) {
        return None;
    }
    let f = family(&sel.src);
    let mut m = format!("{f} saddr {} {f} daddr {}", sel.src, sel.dst);
    if let Some(proto) = sel.protocol {
        let _ = write!(m, " meta l4proto {proto}");
        // Ports mean something to nftables' `th` for TCP, UDP, SCTP, DCCP;
        // for ICMP they are type and code, left unmatched (a wider drop).
        if matches!(proto, 6 | 17 | 33 | 132) {
            for (field, range) in [("sport", sel.src_ports), ("dport", sel.dst_ports)] {
                if let Some(r) = ports(range) {
                    let _ = write!(m, " th {field} {r}");
                }
            }
        }
    }
    Some(m)
}

/// The match for any fragment a port-matching selector could cover: its
/// addresses and protocol, and a fragment (IPv4: MF or an offset; IPv6: a
/// Fragment header). `None` when the selector names no ports.
fn fragment_matcher(sel: &Selector) -> Option<String> {
    if sel.src_ports == PortRange::ANY && sel.dst_ports == PortRange::ANY {
        return None;
    }
    let plain = Selector {
        src_ports: PortRange::ANY,
        dst_ports: PortRange::ANY,
        ..*sel
    };
    let m = matcher(&plain)?;
    Some(if sel.src.addr().is_ipv4() {
        format!("{m} ip frag-off & 0x3fff != 0")
    } else {
        format!("{m} exthdr frag exists")
    })
}

/// An nftables set of ports (`{ 443, 4500 }`); `None` for none.
fn port_set(ports: &[u16]) -> Option<String> {
    if ports.is_empty() {
        return None;
    }
    let list: Vec<String> = ports.iter().map(u16::to_string).collect();
    Some(format!("{{ {} }}", list.join(", ")))
}

fn ports(r: PortRange) -> Option<String> {
    match (r.start, r.end) {
        (0, 65535) => None,
        (a, b) if a == b => Some(a.to_string()),
        (a, b) => Some(format!("{a}-{b}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spd(text: &str) -> Spd {
        let mut spd = Spd::new();
        for c in flowsec_setkey::parse("t", text).unwrap() {
            if let flowsec_setkey::Command::SpdAdd(p) = c {
                spd.add(p).unwrap();
            }
        }
        spd
    }

    #[test]
    fn inbound_policies_become_rules_in_lookup_order() {
        let s = spd("spdadd 10.2.0.0/24 10.1.0.0/24 any -P fwd ipsec esp/tunnel/192.0.2.2-192.0.2.1/require;\n\
             spdadd 10.2.0.0/24 10.1.0.0/24 any -P out ipsec esp/tunnel/192.0.2.1-192.0.2.2/require;\n\
             spdadd fd02::/64 fd01::/64 tcp -P in ipsec esp/transport//require;\n\
             spdadd 10.9.0.0/16[any] 10.1.0.0/24[53] udp -P fwd prio high none;\n\
             spdadd 10.8.0.0/16 10.1.0.0/24 icmp -P fwd discard;");
        let r = ruleset("flowsec_fs0", "fs0", &[], &s);
        assert!(
            r.starts_with("table inet flowsec_fs0 {}\ndelete table inet flowsec_fs0\n"),
            "{r}"
        );
        let forward = &r[r.find("chain forward").unwrap()..];
        let input = &r[r.find("chain input").unwrap()..r.find("chain forward").unwrap()];
        assert!(
            input.contains("ip6 saddr fd02::/64 ip6 daddr fd01::/64 meta l4proto 6 counter drop"),
            "{input}"
        );
        assert!(!input.contains("10.2.0.0"), "{input}");
        let bypass = forward
            .find("ip saddr 10.9.0.0/16 ip daddr 10.1.0.0/24 meta l4proto 17 th dport 53 accept")
            .unwrap();
        let protect = forward
            .find("ip saddr 10.2.0.0/24 ip daddr 10.1.0.0/24 counter drop")
            .unwrap();
        // The higher-priority BYPASS comes first, as in SPD lookup.
        assert!(bypass < protect, "{forward}");
        assert!(forward
            .contains("ip saddr 10.8.0.0/16 ip daddr 10.1.0.0/24 meta l4proto 1 counter drop"));
        // The tunnel's own traffic passes before any policy rule, and only
        // to the gateway itself: forwarded ESP/AH/IKE is plaintext.
        for (chain, local) in [(input, true), (forward, false)] {
            let first_policy = chain.find(" saddr ").unwrap();
            assert!(chain.find("iifname \"fs0\" accept").unwrap() < first_policy);
            for pass in [
                "meta l4proto { esp, ah } accept",
                "udp dport { 500, 4500 } accept",
                "ip frag-off & 0x1fff != 0 accept",
                "frag frag-off != 0 accept",
            ] {
                match chain.find(pass) {
                    Some(at) => assert!(local && at < first_policy, "{pass} in {chain}"),
                    None => assert!(!local, "{pass} missing in {chain}"),
                }
            }
        }
        // Outbound policies are not the filter's business.
        assert_eq!(r.matches("10.2.0.0/24").count(), 1);
    }

    /// nftables cannot see the ports of a later fragment: where ports
    /// decide a drop, the fragments between those hosts are dropped first.
    #[test]
    fn fragments_of_port_policies_are_dropped() {
        let s = spd("spdadd 10.2.0.0/24[any] 10.1.0.0/24[5004] udp -P fwd ipsec esp/tunnel/192.0.2.2-192.0.2.1/require;\n\
             spdadd fd02::/64[any] fd01::/64[5004] udp -P in ipsec esp/transport//require;\n\
             spdadd 10.3.0.0/24 10.1.0.0/24 any -P fwd ipsec esp/tunnel/192.0.2.2-192.0.2.1/require;\n\
             spdadd 10.9.0.0/16[any] 10.1.0.0/24[53] udp -P fwd prio high none;");
        let r = ruleset("flowsec_fs0", "fs0", &[], &s);
        let frag4 = r
            .find("ip saddr 10.2.0.0/24 ip daddr 10.1.0.0/24 meta l4proto 17 ip frag-off & 0x3fff != 0 counter drop")
            .unwrap();
        let port4 = r
            .find("ip saddr 10.2.0.0/24 ip daddr 10.1.0.0/24 meta l4proto 17 th dport 5004 counter drop")
            .unwrap();
        assert!(frag4 < port4, "{r}");
        assert!(r.contains(
            "ip6 saddr fd02::/64 ip6 daddr fd01::/64 meta l4proto 17 exthdr frag exists counter drop"
        ));
        // Without ports the rule itself covers fragments; a BYPASS never
        // gets a fragment rule (the other two are the input chain's
        // later fragments, judged by their first).
        let fragment_drops = r
            .lines()
            .filter(|l| l.contains("frag") && l.ends_with("drop"))
            .count();
        assert_eq!(fragment_drops, 2, "{r}");
    }

    /// Issue 29 item 13: an inbound policy that covers the peer's outer
    /// address (transport mode between the gateways) must not drop the
    /// RFC 9329 stream that carries the tunnel: its ports pass first.
    #[test]
    fn tcp_encapsulation_ports_pass_before_the_policies() {
        let s = spd("spdadd 192.0.2.2 192.0.2.1 any -P in ipsec esp/transport//require;");
        let r = ruleset("flowsec_fs0", "fs0", &[443, 4500], &s);
        let input = &r[r.find("chain input").unwrap()..r.find("chain forward").unwrap()];
        let forward = &r[r.find("chain forward").unwrap()..];
        let drop = input
            .find("ip saddr 192.0.2.2/32 ip daddr 192.0.2.1/32 counter drop")
            .unwrap();
        let listen = input.find("tcp dport { 443, 4500 } accept").unwrap();
        let answers = input
            .find("tcp sport { 443, 4500 } ct mark 0xf5ec ct state established accept")
            .unwrap();
        assert!(listen < drop && answers < drop, "{input}");
        // Only to the gateway itself: a forwarded stream is plaintext.
        assert!(!forward.contains("tcp "), "{forward}");
        // Without streams, no TCP port passes.
        let none = ruleset("flowsec_fs0", "fs0", &[], &s);
        assert!(!none.contains("tcp "), "{none}");
    }

    #[test]
    fn table_names_are_nft_identifiers() {
        assert_eq!(table_name("flowsec0"), "flowsec_flowsec0");
        assert_eq!(table_name("fs1234-gw.A"), "flowsec_fs1234_gw_A");
    }
}
