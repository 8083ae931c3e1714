//! Virtual IP pools (RFC 7296 §3.15): the addresses a responder hands out
//! to road warriors that ask with a CFG_REQUEST, as strongSwan's
//! `mem_pool.c` does: an identity gets back the address it left
//! (offline), or the one it holds from the same IKE address when it asks
//! for it again (a reconnect before the old SA is gone); otherwise the
//! next never-used address, then one another identity left. An address
//! asked for that is not the identity's own is not given (two clients
//! could end up with one address); an address is online while an IKE SA
//! holds it, and never given to a second client meanwhile.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::config::{Identity, Pool};

/// Most leases one pool remembers (online and offline): a bound on state
/// (an IPv6 /64 pool is never walked to its end).
const MAX_LEASES: usize = 1 << 16;

/// An address as a number (IPv4 in the low 32 bits).
pub fn to_u128(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

/// The address of number `n` in the family `v4` says.
pub fn from_u128(n: u128, v4: bool) -> IpAddr {
    if v4 {
        IpAddr::V4(Ipv4Addr::from(n as u32))
    } else {
        IpAddr::V6(Ipv6Addr::from(n))
    }
}

/// The leases of every pool, by pool name.
#[derive(Default)]
pub(crate) struct Leases {
    pools: HashMap<String, PoolLeases>,
}

#[derive(Default)]
struct PoolLeases {
    /// The pool's first and last address when `used` was counted (a
    /// reload may move the pool).
    range: (u128, u128),
    /// How many addresses from the first were looked at for a fresh one
    /// (handed out, or skipped as another's).
    used: u128,
    /// Who had which address (online or not), and from which IKE
    /// address it last took it.
    owner: HashMap<u128, (Identity, IpAddr)>,
    /// Addresses held now, with how many IKE SAs hold them (an IKE SA and
    /// the one that rekeyed it).
    online: HashMap<u128, u32>,
}

impl PoolLeases {
    /// The next never-used address of the pool `first..=last`, if any:
    /// one nobody owns or holds (a reload may have moved the pool over
    /// addresses leased before: those are skipped, and the count starts
    /// again at the new first address).
    fn fresh(&mut self, first: u128, last: u128) -> Option<u128> {
        if self.range != (first, last) {
            self.range = (first, last);
            self.used = 0;
        }
        let size = (last - first).saturating_add(1);
        // Each address skipped is an owned one: bounded by MAX_LEASES.
        while self.used < size && self.owner.len() < MAX_LEASES {
            let n = first + self.used;
            if !self.owner.contains_key(&n) && !self.online.contains_key(&n) {
                return Some(n);
            }
            self.used += 1;
        }
        None
    }
}

impl Leases {
    /// An address of `pool` for `id`, asking from IKE address `from`
    /// (`requested`: the address its CFG_REQUEST named, if any); `None`
    /// when the pool is exhausted.
    pub(crate) fn acquire(
        &mut self,
        pool: &Pool,
        id: &Identity,
        from: IpAddr,
        requested: Option<IpAddr>,
    ) -> Option<IpAddr> {
        let v4 = pool.first.is_ipv4();
        let (first, last) = (to_u128(pool.first), to_u128(pool.last));
        let p = self.pools.entry(pool.name.clone()).or_default();
        let in_pool = |n: u128| (first..=last).contains(&n);
        let requested = requested.filter(|a| a.is_ipv4() == v4).map(to_u128);
        // The identity's own address: one it left, or the one it holds
        // from the same IKE address and asks for again.
        let mine = p
            .owner
            .iter()
            .filter(|(n, (o, _))| o.same_as(id) && in_pool(**n))
            .filter(|(n, (_, host))| {
                !p.online.contains_key(n) || (requested == Some(**n) && *host == from)
            })
            .map(|(n, _)| *n)
            .min();
        let fresh = p.fresh(first, last);
        let offline = || {
            p.owner
                .keys()
                .filter(|n| in_pool(**n) && !p.online.contains_key(n))
                .min()
                .copied()
        };
        let n = mine.or(fresh).or_else(offline)?;
        if Some(n) == fresh {
            p.used += 1;
        }
        p.owner.insert(n, (id.clone(), from));
        *p.online.entry(n).or_insert(0) += 1;
        Some(from_u128(n, v4))
    }

    /// Another IKE SA holds `addr` of pool `name` (the successor of an
    /// IKE SA rekey).
    pub(crate) fn hold(&mut self, name: &str, addr: IpAddr) {
        if let Some(p) = self.pools.get_mut(name) {
            *p.online.entry(to_u128(addr)).or_insert(0) += 1;
        }
    }

    /// An IKE SA that held `addr` of pool `name` is gone; the address goes
    /// offline (kept for its identity) when none holds it.
    pub(crate) fn release(&mut self, name: &str, addr: IpAddr) {
        let Some(p) = self.pools.get_mut(name) else {
            return;
        };
        let n = to_u128(addr);
        if let Some(c) = p.online.get_mut(&n) {
            *c -= 1;
            if *c == 0 {
                p.online.remove(&n);
            }
        }
    }

    /// Online addresses of pool `name`.
    #[cfg(test)]
    pub(crate) fn online(&self, name: &str) -> usize {
        self.pools.get(name).map_or(0, |p| p.online.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(first: &str, last: &str) -> Pool {
        Pool {
            name: "p".into(),
            first: first.parse().unwrap(),
            last: last.parse().unwrap(),
            dns: vec![],
        }
    }

    fn id(s: &str) -> Identity {
        Identity::parse(s).unwrap()
    }

    fn host(n: u8) -> IpAddr {
        IpAddr::from([192, 0, 2, n])
    }

    #[test]
    fn addresses_in_order_back_to_their_owner_and_reused_when_offline() {
        let p = pool("10.3.0.1", "10.3.0.2");
        let mut l = Leases::default();
        let a = l.acquire(&p, &id("carol"), host(1), None).unwrap();
        let b = l.acquire(&p, &id("dave"), host(2), None).unwrap();
        assert_eq!(
            (a.to_string(), b.to_string()),
            ("10.3.0.1".into(), "10.3.0.2".into())
        );
        assert_eq!(l.acquire(&p, &id("eve"), host(3), None), None, "exhausted");
        l.release("p", a);
        // carol comes back, from anywhere: the same address.
        assert_eq!(l.acquire(&p, &id("carol"), host(9), None), Some(a));
        l.release("p", a);
        // eve takes carol's offline address.
        assert_eq!(l.acquire(&p, &id("eve"), host(3), None), Some(a));
        assert_eq!(l.online("p"), 2);
    }

    #[test]
    fn an_address_is_never_given_twice() {
        let p = pool("10.3.0.1", "10.3.0.254");
        let mut l = Leases::default();
        // Asking for an address that is not one's own gets a fresh one.
        let want = "10.3.0.2".parse().unwrap();
        let c = l.acquire(&p, &id("carol"), host(1), Some(want)).unwrap();
        let d = l.acquire(&p, &id("dave"), host(2), None).unwrap();
        let e = l.acquire(&p, &id("eve"), host(3), None).unwrap();
        assert_eq!(
            [c, d, e].map(|a| a.to_string()),
            ["10.3.0.1", "10.3.0.2", "10.3.0.3"]
        );
        // carol's address is online: carol from another device gets
        // another one, even asking for it.
        let c2 = l.acquire(&p, &id("carol"), host(7), Some(c)).unwrap();
        assert_ne!(c2, c);
        // From the same IKE address, asking for it: the same (a reconnect
        // before the old IKE SA is gone).
        assert_eq!(l.acquire(&p, &id("carol"), host(1), Some(c)), Some(c));
    }

    #[test]
    fn a_pool_of_the_whole_address_space_does_not_overflow() {
        let p = pool("::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
        let mut l = Leases::default();
        assert!(l.acquire(&p, &id("carol"), host(1), None).is_some());
    }

    #[test]
    fn ipv6_and_a_rekeyed_sa_holding_the_same_address() {
        let p = pool("fd00:3::1", "fd00:3::ffff");
        let mut l = Leases::default();
        let a = l.acquire(&p, &id("carol"), host(1), None).unwrap();
        assert_eq!(a.to_string(), "fd00:3::1");
        l.hold("p", a);
        l.release("p", a);
        assert_eq!(l.online("p"), 1, "the rekeyed SA still holds it");
        l.release("p", a);
        assert_eq!(l.online("p"), 0);
    }

    #[test]
    fn one_identity_in_any_case_holds_one_lease() {
        // Names match without regard to case (the credential is one).
        let p = pool("10.3.0.1", "10.3.0.254");
        let mut l = Leases::default();
        let a = l.acquire(&p, &id("carol@flowsec.test"), host(1), None);
        l.release("p", a.unwrap());
        let b = l.acquire(&p, &id("CAROL@Flowsec.Test"), host(1), None);
        assert_eq!(a, b);
    }

    #[test]
    fn a_moved_pool_skips_the_addresses_leased_before() {
        // 10.3.0.1-2 leased (one online); a reload moves the pool to start
        // at 10.3.0.2: the next fresh address is not 10.3.0.2 again.
        let mut l = Leases::default();
        let old = pool("10.3.0.1", "10.3.0.10");
        let c = l.acquire(&old, &id("carol"), host(1), None).unwrap();
        let d = l.acquire(&old, &id("dave"), host(2), None).unwrap();
        l.release("p", c);
        let moved = pool("10.3.0.2", "10.3.0.20");
        let e = l.acquire(&moved, &id("eve"), host(3), None).unwrap();
        assert_eq!(e.to_string(), "10.3.0.3");
        assert_ne!(e, d);
        // Moved again, to the start: counted afresh, the old ones skipped.
        let back = pool("10.3.0.1", "10.3.0.20");
        let f = l.acquire(&back, &id("frank"), host(4), None).unwrap();
        assert_eq!(f.to_string(), "10.3.0.4");
        assert!(![c, d, e].contains(&f), "never one address twice");
        // carol still gets hers back.
        assert_eq!(l.acquire(&back, &id("carol"), host(1), None), Some(c));
    }
}
