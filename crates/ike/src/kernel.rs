//! The narrow interface through which the IKE core installs what it
//! negotiated: the same operations strongSwan's `kernel_ipsec_t` has
//! (`get_spi`, `add_sa`, `del_sa`, `add_policy`, `del_policy`, `query_sa`)
//! plus the source-address lookup of its `kernel_net_t`. The daemon backs it
//! with the data plane's workers; tests back it with a recorder.
//!
//! Calls are actions, not questions with side effects on the core: the core
//! never waits on the data plane, and a data plane that applies the actions
//! after the core's call returns is correct.

use std::net::IpAddr;

use flowsec_ipsec::{Direction, Endpoints, Policy, Protocol, SaConfig, SaId, Selector, UdpEncap};

/// Bytes and packets an SA has carried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SaUsage {
    /// Payload bytes protected or recovered.
    pub bytes: u64,
    /// Packets.
    pub packets: u64,
}

/// What the IKE core asks of the IPsec data plane.
pub trait Kernel {
    /// An inbound SPI for `protocol` that no SA on this host uses (RFC 4303
    /// §2.1: values 1–255 are reserved), or for IPComp a CPI (256 and up,
    /// 16 bits); 0 when none is left.
    fn alloc_spi(&mut self, protocol: Protocol) -> u32;
    /// [`Kernel::alloc_spi`] for the inbound SA of resource `cpu`'s
    /// per-resource Child SA (RFC 9611): one the data plane steers to
    /// that resource, where it can.
    fn alloc_spi_on(&mut self, protocol: Protocol, cpu: Option<u32>) -> u32 {
        let _ = cpu;
        self.alloc_spi(protocol)
    }
    /// An SPI from [`Kernel::alloc_spi`] that will not be used after all.
    fn release_spi(&mut self, protocol: Protocol, spi: u32) {
        let _ = (protocol, spi);
    }
    /// Install an SA, keys included.
    fn add_sa(&mut self, sa: SaConfig);
    /// Remove an SA; unknown ids are ignored.
    fn del_sa(&mut self, id: SaId);
    /// New UDP encapsulation ports for an SA that has them (a NAT in
    /// front of the peer rebound it, RFC 7296 §2.23); its state stays.
    fn update_encap(&mut self, id: SaId, encap: UdpEncap);
    /// Move an SA to new outer addresses and encapsulation, its keys,
    /// sequence numbers and replay window kept (a MOBIKE update, RFC 4555
    /// §3.5): its id afterwards (the destination is part of it), `None`
    /// when it was refused (no such SA, another SA has the new id, mixed
    /// families) and nothing moved.
    fn move_sa(&mut self, id: SaId, to: Endpoints) -> Option<SaId>;
    /// Install a policy.
    fn add_policy(&mut self, policy: Policy);
    /// Remove the policy with this direction and selector.
    fn del_policy(&mut self, direction: Direction, selector: Selector);
    /// What an SA has carried so far, if it exists.
    fn query_sa(&mut self, id: SaId) -> Option<SaUsage>;
    /// The address this host would send from to reach `dst`.
    fn source_for(&mut self, dst: IpAddr) -> Option<IpAddr>;
    /// The address of host `name` (a redirect to a gateway named by its
    /// FQDN, RFC 5685); `None` when it does not resolve.
    fn resolve(&mut self, name: &str) -> Option<IpAddr> {
        let _ = name;
        None
    }
    /// A virtual IP the peer gave us (RFC 7296 §3.15): on the tunnel
    /// device, the source of what goes into the tunnel.
    fn add_vip(&mut self, _addr: IpAddr) {}
    /// That virtual IP is no longer ours.
    fn del_vip(&mut self, _addr: IpAddr) {}
}

/// A [`Kernel`] that records what it was asked, for tests and `--dry-run`
/// style checks: SPIs count up from 0xc000_0000 + `spi_base`, CPIs from
/// 0x1000 + `spi_base`.
#[derive(Debug, Default)]
pub struct RecordingKernel {
    /// First SPI handed out is `0xc000_0000 + spi_base + 1`.
    pub spi_base: u32,
    /// SPIs handed out so far.
    pub spis: u32,
    /// Installed SAs.
    pub sas: Vec<SaConfig>,
    /// Installed policies.
    pub policies: Vec<Policy>,
    /// Usage reported by `query_sa` (set by tests).
    pub usage: std::collections::BTreeMap<SaId, SaUsage>,
    /// Log of calls, in order, for assertions (`add_sa esp 0x..`).
    pub log: Vec<String>,
    /// Virtual IPs given to us, in order.
    pub vips: Vec<IpAddr>,
    /// What `source_for` answers (set by tests; `None`: no route), unless
    /// `routes` names the destination.
    pub source: Option<IpAddr>,
    /// Per destination: the source `source_for` answers.
    pub routes: Vec<(IpAddr, IpAddr)>,
}

impl RecordingKernel {
    /// The installed SA with this SPI, if any.
    pub fn sa(&self, spi: u32) -> Option<&SaConfig> {
        self.sas.iter().find(|s| s.spi == spi)
    }
}

impl Kernel for RecordingKernel {
    fn alloc_spi(&mut self, protocol: Protocol) -> u32 {
        self.spis += 1;
        match protocol {
            // A CPI: 16 bits, 256 and up (RFC 3173 §3.3).
            Protocol::IpComp => 0x1000 + self.spi_base + self.spis,
            _ => 0xc000_0000 + self.spi_base + self.spis,
        }
    }

    fn add_sa(&mut self, sa: SaConfig) {
        self.log
            .push(format!("add_sa {} {:#010x}", sa.protocol, sa.spi));
        self.sas.retain(|s| s.spi != sa.spi || s.dst != sa.dst);
        self.sas.push(sa);
    }

    fn del_sa(&mut self, id: SaId) {
        self.log
            .push(format!("del_sa {} {:#010x}", id.protocol, id.spi));
        self.sas
            .retain(|s| !(s.protocol == id.protocol && s.spi == id.spi && s.dst == id.dst));
    }

    fn update_encap(&mut self, id: SaId, encap: UdpEncap) {
        self.log.push(format!(
            "update_encap {} {:#010x} {}:{}",
            id.protocol, id.spi, encap.src_port, encap.dst_port
        ));
        for s in self
            .sas
            .iter_mut()
            .filter(|s| s.protocol == id.protocol && s.spi == id.spi && s.dst == id.dst)
        {
            if s.encap.is_some() {
                s.encap = Some(encap);
            }
        }
    }

    fn move_sa(&mut self, id: SaId, to: Endpoints) -> Option<SaId> {
        let new = SaId { dst: to.dst, ..id };
        self.log.push(format!(
            "move_sa {} {:#010x} {}->{}{}",
            id.protocol,
            id.spi,
            to.src,
            to.dst,
            to.encap.map_or(String::new(), |e| format!(
                " udp {}:{}",
                e.src_port, e.dst_port
            ))
        ));
        let same =
            |s: &SaConfig, i: SaId| s.protocol == i.protocol && s.spi == i.spi && s.dst == i.dst;
        if new != id && self.sas.iter().any(|s| same(s, new)) {
            return None;
        }
        let s = self.sas.iter_mut().find(|s| same(s, id))?;
        if to.src.is_ipv4() != to.dst.is_ipv4() {
            return None;
        }
        (s.src, s.dst, s.encap) = (to.src, to.dst, to.encap);
        Some(new)
    }

    fn add_policy(&mut self, policy: Policy) {
        self.log.push(format!(
            "add_policy {} {}->{}",
            policy.direction,
            policy.selector.src.addr(),
            policy.selector.dst.addr()
        ));
        self.policies.push(policy);
    }

    fn del_policy(&mut self, direction: Direction, selector: Selector) {
        self.log.push(format!(
            "del_policy {} {}->{}",
            direction,
            selector.src.addr(),
            selector.dst.addr()
        ));
        self.policies
            .retain(|p| !(p.direction == direction && p.selector == selector));
    }

    fn query_sa(&mut self, id: SaId) -> Option<SaUsage> {
        self.sas
            .iter()
            .any(|s| s.protocol == id.protocol && s.spi == id.spi && s.dst == id.dst)
            .then(|| self.usage.get(&id).copied().unwrap_or_default())
    }

    fn source_for(&mut self, dst: IpAddr) -> Option<IpAddr> {
        match self.routes.iter().find(|(d, _)| *d == dst) {
            Some((_, src)) => Some(*src),
            None => self.source,
        }
    }

    fn add_vip(&mut self, addr: IpAddr) {
        self.log.push(format!("add_vip {addr}"));
        self.vips.push(addr);
    }

    fn del_vip(&mut self, addr: IpAddr) {
        self.log.push(format!("del_vip {addr}"));
        self.vips.retain(|a| *a != addr);
    }
}
