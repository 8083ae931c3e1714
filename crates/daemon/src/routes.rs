//! Routes that send protected traffic into the TUN device, installed with
//! iproute2 and removed on shutdown (and on drop, should the worker fail).
//!
//! The routes go into a table of their own ([`TABLE`]), consulted only by
//! packets *without* flowsec's firewall mark, and flowsec's sockets carry
//! the mark ([`BYPASS_MARK`]), as wg-quick does. So flowsec's own ESP never
//! loops back into the TUN, even when a selector covers the peer itself
//! (transport mode, or a tunnel to 0.0.0.0/0), and the main table,
//! default route included, is never touched.

use std::net::IpAddr;

use flowsec_ipsec::spd::{Action, Direction, IpPrefix, Spd};
use flowsec_ipsec::Mode;

use crate::tool::ToolError;

/// The firewall mark of flowsec's own packets (SO_MARK).
pub const BYPASS_MARK: u32 = 0xf5ec;
/// The routing table of transport-mode routes.
pub const TABLE: u32 = 0xf5ec;
/// Priority of the rule that sends unmarked packets to [`TABLE`]: before
/// the main table (32766).
const RULE_PREF: u32 = 10_000;

/// Routes this daemon added, removed when dropped.
pub struct Routes {
    dev: String,
    /// Each route: destination, and the source address in transport mode.
    table: Vec<(IpPrefix, Option<IpAddr>)>,
    /// `-4` and/or `-6`: families for which the rule was added.
    rules: Vec<&'static str>,
    /// Virtual IPs IKE got from road-warrior gateways (RFC 7296 §3.15),
    /// on the device: routes whose policy comes from one take it as source.
    vips: Vec<IpAddr>,
}

impl Routes {
    /// Bring `dev` up with `mtu`, and route the destination of every
    /// outbound PROTECT policy through it.
    pub fn install(dev: &str, mtu: u16, spd: &Spd) -> Result<Routes, ToolError> {
        // No IPv6 link-local address on the TUN: it would only send router
        // solicitations and MLD reports into the tunnel (counted no_policy).
        // Best effort: kernels without IPv6 refuse the option.
        let _ = ip(&["link", "set", "dev", dev, "addrgenmode", "none"]);
        ip(&["link", "set", "dev", dev, "mtu", &mtu.to_string(), "up"])?;
        let mut routes = Routes {
            dev: dev.to_string(),
            table: Vec::new(),
            rules: Vec::new(),
            vips: Vec::new(),
        };
        routes.sync(spd)?;
        Ok(routes)
    }

    /// Make the routes match `spd`: add those of new PROTECT policies,
    /// remove those no policy needs any more.
    pub fn sync(&mut self, spd: &Spd) -> Result<(), ToolError> {
        let wanted = wanted(spd, &self.vips);
        let table = TABLE.to_string();
        // Only destinations no longer wanted at all: a changed source is
        // replaced in place below (`route replace`), with no moment
        // without a route.
        let stale: Vec<_> = self
            .table
            .iter()
            .filter(|(dst, _)| !wanted.iter().any(|(d, _)| d == dst))
            .copied()
            .collect();
        // Each destination's route changes in one `ip -batch` per sync, not
        // one `ip` per route: a reload that touches thousands of policies
        // forks twice, not thousands of times.
        let dels: Vec<String> = stale
            .iter()
            .map(|(dst, _)| format!("route del {dst} dev {} table {table}", self.dev))
            .collect();
        // Already gone is fine (`-force`: the rest still go).
        let _ = ip_batch(&dels, true);
        self.table
            .retain(|(d, _)| !stale.iter().any(|(s, _)| s == d));
        let fresh: Vec<_> = wanted
            .into_iter()
            .filter(|r| !self.table.contains(r))
            .collect();
        for (dst, _) in &fresh {
            let family = if dst.addr().is_ipv4() { "-4" } else { "-6" };
            if !self.rules.contains(&family) {
                self.add_rule(family)?;
            }
        }
        let lines: Vec<String> = fresh.iter().map(|r| self.replace_line(r)).collect();
        if ip_batch(&lines, false).is_err() {
            // Which one failed, and the others in place: one at a time.
            for (route, line) in fresh.iter().zip(&lines) {
                let args: Vec<&str> = line.split(' ').collect();
                ip(&args)?;
                self.record(*route);
            }
            return Ok(());
        }
        for route in fresh {
            self.record(route);
        }
        Ok(())
    }

    /// The rule that sends unmarked packets of `family` to [`TABLE`].
    fn add_rule(&mut self, family: &'static str) -> Result<(), ToolError> {
        let (mark, pref, table) = (
            BYPASS_MARK.to_string(),
            RULE_PREF.to_string(),
            TABLE.to_string(),
        );
        let rule = [
            family, "rule", "add", "not", "fwmark", &mark, "table", &table, "pref", &pref,
        ];
        // A rule left by a daemon that was killed would make `add` fail.
        let mut del = rule;
        del[2] = "del";
        let _ = ip(&del);
        ip(&rule)?;
        self.rules.push(family);
        Ok(())
    }

    /// `route replace` of one route (no moment without a route when only
    /// its source changes), as an `ip` command line.
    fn replace_line(&self, (dst, src): &(IpPrefix, Option<IpAddr>)) -> String {
        let mut line = format!("route replace {dst} dev {} table {TABLE}", self.dev);
        if let Some(src) = src {
            line += &format!(" src {src}");
        }
        line
    }

    /// `route` is in place now.
    fn record(&mut self, route: (IpPrefix, Option<IpAddr>)) {
        self.table.retain(|(d, _)| *d != route.0);
        self.table.push(route);
    }

    /// Put a virtual IP on the device (`ip addr add ADDR/32`, /128 for
    /// IPv6 without duplicate address detection); routes follow at the
    /// next [`Routes::sync`].
    pub fn add_vip(&mut self, addr: IpAddr) -> Result<(), ToolError> {
        if self.vips.contains(&addr) {
            return Ok(());
        }
        let a = match addr {
            IpAddr::V4(a) => format!("{a}/32"),
            IpAddr::V6(a) => format!("{a}/128"),
        };
        let mut args = vec!["addr", "replace", a.as_str(), "dev", self.dev.as_str()];
        if addr.is_ipv6() {
            args.push("nodad");
        }
        ip(&args)?;
        self.vips.push(addr);
        Ok(())
    }

    /// Take a virtual IP off the device (gone already is fine).
    pub fn del_vip(&mut self, addr: IpAddr) {
        if let Some(i) = self.vips.iter().position(|a| *a == addr) {
            self.vips.remove(i);
            let a = match addr {
                IpAddr::V4(a) => format!("{a}/32"),
                IpAddr::V6(a) => format!("{a}/128"),
            };
            let _ = ip(&["addr", "del", &a, "dev", &self.dev]);
        }
    }

    /// Prefixes routed into the device.
    pub fn prefixes(&self) -> impl Iterator<Item = &IpPrefix> {
        self.table.iter().map(|(dst, _)| dst)
    }
}

/// The routes `spd` needs: one per destination of an outbound PROTECT or
/// DISCARD policy, the first policy for a destination deciding its source.
/// (The daemon matches the whole selector: what such a route brings it
/// that a BYPASS policy, or no policy, covers goes on in the clear.)
fn wanted(spd: &Spd, vips: &[IpAddr]) -> Vec<(IpPrefix, Option<IpAddr>)> {
    let mut out: Vec<(IpPrefix, Option<IpAddr>)> = Vec::new();
    for p in spd.iter().filter(|p| p.direction == Direction::Out) {
        let templates = match &p.action {
            Action::Protect(templates) => &templates[..],
            Action::Discard => &[],
            Action::Bypass => continue,
        };
        if out.iter().any(|(d, _)| *d == p.selector.dst) {
            continue;
        }
        // In transport mode a host selector names the address the host's
        // traffic must come from (the TUN itself has none).
        // A road warrior's traffic comes from its virtual IP.
        let src = match !templates.is_empty() && templates.iter().all(|t| t.mode == Mode::Transport)
        {
            true => host(&p.selector.src),
            false => host(&p.selector.src).filter(|a| vips.contains(a)),
        };
        out.push((p.selector.dst, src));
    }
    out
}

fn host(prefix: &IpPrefix) -> Option<IpAddr> {
    let full = if prefix.addr().is_ipv4() { 32 } else { 128 };
    (prefix.prefix_len() == full).then(|| prefix.addr())
}

impl Drop for Routes {
    fn drop(&mut self) {
        // The device may already be gone, taking its routes with it: errors
        // here are expected and ignored.
        let table = TABLE.to_string();
        for (prefix, _) in self.table.drain(..) {
            let _ = ip(&[
                "route",
                "del",
                &prefix.to_string(),
                "dev",
                &self.dev,
                "table",
                &table,
            ]);
        }
        let (mark, pref) = (BYPASS_MARK.to_string(), RULE_PREF.to_string());
        for family in self.rules.drain(..) {
            let _ = ip(&[
                family, "rule", "del", "not", "fwmark", &mark, "table", &table, "pref", &pref,
            ]);
        }
        for addr in self.vips.clone() {
            self.del_vip(addr);
        }
    }
}

/// Run `lines` (ip commands without the leading `ip`) in one `ip -batch -`
/// (`-force`: go on past a failing line). Nothing to do: no process.
fn ip_batch(lines: &[String], force: bool) -> Result<(), ToolError> {
    if lines.is_empty() {
        return Ok(());
    }
    let args: &[&str] = if force {
        &["-force", "-batch", "-"]
    } else {
        &["-batch", "-"]
    };
    let command = format!("ip -batch - ({} commands)", lines.len());
    crate::tool::run("ip", args, Some(batch_text(lines).as_bytes()), &command)
}

/// What `ip -batch` reads: one command a line.
fn batch_text(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn ip(args: &[&str]) -> Result<(), ToolError> {
    crate::tool::run("ip", args, None, &format!("ip {}", args.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_changes_are_one_batch_of_ip_commands() {
        let r = Routes {
            dev: "fs0".into(),
            table: Vec::new(),
            rules: Vec::new(),
            vips: Vec::new(),
        };
        let dst = IpPrefix::new("10.2.0.0".parse().unwrap(), 24).unwrap();
        let v6 = IpPrefix::new("fd00::1".parse().unwrap(), 128).unwrap();
        let lines = [
            r.replace_line(&(dst, None)),
            r.replace_line(&(v6, Some("fd00::2".parse().unwrap()))),
        ];
        assert_eq!(
            batch_text(&lines),
            format!(
                "route replace 10.2.0.0/24 dev fs0 table {TABLE}\n\
                 route replace fd00::1/128 dev fs0 table {TABLE} src fd00::2\n"
            )
        );
    }
}
