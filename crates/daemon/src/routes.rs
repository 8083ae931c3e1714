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
        for (dst, _) in stale {
            // Already gone is fine.
            let _ = ip(&[
                "route",
                "del",
                &dst.to_string(),
                "dev",
                &self.dev,
                "table",
                &table,
            ]);
            self.table.retain(|(d, _)| *d != dst);
        }
        for (dst, src) in wanted {
            if self.table.contains(&(dst, src)) {
                continue;
            }
            let family = if dst.addr().is_ipv4() { "-4" } else { "-6" };
            if !self.rules.contains(&family) {
                let (mark, pref) = (BYPASS_MARK.to_string(), RULE_PREF.to_string());
                let rule = [
                    family, "rule", "add", "not", "fwmark", &mark, "table", &table, "pref", &pref,
                ];
                // A rule left by a daemon that was killed would make `add` fail.
                let mut del = rule;
                del[2] = "del";
                let _ = ip(&del);
                ip(&rule)?;
                self.rules.push(family);
            }
            let dst_s = dst.to_string();
            let mut args = vec![
                "route", "replace", &dst_s, "dev", &self.dev, "table", &table,
            ];
            let src_s = src.map(|a| a.to_string());
            if let Some(src) = &src_s {
                args.extend(["src", src.as_str()]);
            }
            ip(&args)?;
            self.table.retain(|(d, _)| *d != dst);
            self.table.push((dst, src));
        }
        Ok(())
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

fn ip(args: &[&str]) -> Result<(), ToolError> {
    let command = || format!("ip {}", args.join(" "));
    let out = crate::tool::command("ip")?
        .args(args)
        .output()
        .map_err(|error| ToolError::Run {
            command: command(),
            error,
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(ToolError::Failed {
            command: command(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}
