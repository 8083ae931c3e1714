//! Routes that send protected traffic into the TUN device, installed with
//! iproute2 and removed on shutdown (and on drop, should the worker fail).

use std::process::Command;

use flowsec_ipsec::spd::{Action, Direction, IpPrefix, Spd};
use flowsec_ipsec::Mode;

/// Routes this daemon added, removed when dropped.
pub struct Routes {
    dev: String,
    added: Vec<IpPrefix>,
}

impl Routes {
    /// Bring `dev` up with `mtu`, and route the destination of every
    /// outbound tunnel-mode PROTECT policy through it.
    pub fn install(dev: &str, mtu: u16, spd: &Spd) -> Result<Routes, String> {
        ip(&["link", "set", "dev", dev, "mtu", &mtu.to_string(), "up"])?;
        let mut routes = Routes {
            dev: dev.to_string(),
            added: Vec::new(),
        };
        for p in spd.iter().filter(|p| p.direction == Direction::Out) {
            let Action::Protect(templates) = &p.action else {
                continue;
            };
            if !templates.iter().any(|t| t.mode == Mode::Tunnel)
                || routes.added.contains(&p.selector.dst)
            {
                continue;
            }
            let prefix = p.selector.dst.to_string();
            ip(&["route", "replace", &prefix, "dev", dev])?;
            routes.added.push(p.selector.dst);
        }
        Ok(routes)
    }

    /// Prefixes routed into the device.
    pub fn prefixes(&self) -> &[IpPrefix] {
        &self.added
    }
}

impl Drop for Routes {
    fn drop(&mut self) {
        for prefix in self.added.drain(..) {
            // The device may already be gone, taking its routes with it.
            let _ = ip(&["route", "del", &prefix.to_string(), "dev", &self.dev]);
        }
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
