//! The inbound plaintext filter (RFC 4301 §5.2): traffic that an inbound
//! (`in`) or forward (`fwd`) PROTECT policy covers must arrive through the
//! tunnel. flowsec sees only what the kernel routes into its TUN device, so
//! plaintext that reaches the gateway by any other interface would be
//! forwarded or delivered by the kernel; an nftables table of flowsec's own
//! (`inet flowsec_<tun>`) drops it, following the SPD in lookup order
//! (BYPASS accepts, DISCARD and PROTECT drop). Decapsulated packets (from
//! the TUN), ESP, AH and IKE/NAT-T (UDP 500/4500) pass.
//!
//! Installed with `nft -f -` in one transaction (replace the table whole),
//! kept in step with the SPD, and removed when dropped. Without `nft` the
//! daemon runs unfiltered, with a warning (also when the kernel refuses
//! the table).

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};

use flowsec_ipsec::spd::{Action, Direction, IpPrefix, PortRange, Selector, Spd};

/// The nftables table of one daemon, removed when dropped.
pub struct Filter {
    table: String,
    tun: String,
    /// `nft` is there and the table was installed.
    active: bool,
}

impl Filter {
    /// Install the table for `spd`. Without `nft`, or when nftables refuses
    /// the table (no kernel support), a warning and no filter.
    pub fn install(tun: &str, spd: &Spd) -> Filter {
        let mut f = Filter {
            table: table_name(tun),
            tun: tun.to_string(),
            active: false,
        };
        if Command::new("nft").arg("--version").output().is_err() {
            eprintln!(
                "flowsec: warning: no nft (nftables): plaintext that an inbound policy covers is not filtered (RFC 4301 §5.2)"
            );
            return f;
        }
        f.active = true;
        if let Err(e) = f.sync(spd) {
            // nft without nf_tables in the kernel (or without the right to
            // use it): the same as no nft, said loudly.
            f.active = false;
            eprintln!(
                "flowsec: warning: {e}: plaintext that an inbound policy covers is not filtered (RFC 4301 §5.2)"
            );
        }
        f
    }

    /// Replace the table with the one `spd` needs.
    pub fn sync(&mut self, spd: &Spd) -> Result<(), String> {
        if !self.active {
            return Ok(());
        }
        nft(&ruleset(&self.table, &self.tun, spd))
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

fn table_name(tun: &str) -> String {
    let safe: String = tun
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("flowsec_{safe}")
}

fn nft(script: &str) -> Result<(), String> {
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("nft: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(script.as_bytes())
            .map_err(|e| format!("nft: {e}"))?;
    }
    let out = child.wait_with_output().map_err(|e| format!("nft: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "nft: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The whole table for `spd`, replacing any older one in one transaction.
pub fn ruleset(table: &str, tun: &str, spd: &Spd) -> String {
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
        let _ = writeln!(s, "    meta l4proto {{ esp, ah }} accept");
        let _ = writeln!(s, "    udp dport {{ 500, 4500 }} accept");
        for p in spd.iter().filter(|p| p.direction == direction) {
            let verdict = match p.action {
                Action::Bypass => "accept",
                Action::Discard | Action::Protect(_) => "counter drop",
            };
            if let Some(m) = matcher(&p.selector) {
                let _ = writeln!(s, "    {m} {verdict}");
            }
        }
        let _ = writeln!(s, "  }}");
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
        let r = ruleset("flowsec_fs0", "fs0", &s);
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
        // The tunnel's own traffic passes before any policy rule.
        for chain in [input, forward] {
            let first_policy = chain.find(" saddr ").unwrap();
            for pass in [
                "iifname \"fs0\" accept",
                "meta l4proto { esp, ah } accept",
                "udp dport { 500, 4500 } accept",
            ] {
                assert!(
                    chain.find(pass).unwrap() < first_policy,
                    "{pass} in {chain}"
                );
            }
        }
        // Outbound policies are not the filter's business.
        assert_eq!(r.matches("10.2.0.0/24").count(), 1);
    }

    #[test]
    fn table_names_are_nft_identifiers() {
        assert_eq!(table_name("flowsec0"), "flowsec_flowsec0");
        assert_eq!(table_name("fs1234-gw.A"), "flowsec_fs1234_gw_A");
    }
}
