//! Who may make a half-open IKE SA: the responder's defences against a
//! flood of IKE_SA_INIT requests, in strongSwan's order (its receiver's
//! `drop_ike_sa_init`):
//!
//! ```text
//!  IKE_SA_INIT request
//!   ├─ half-open (all) ≥ cookie_threshold, or from its address ≥ cookie_threshold_ip,
//!   │  and no valid COOKIE first? ─────────────────────► N(COOKIE), no state (§2.6)
//!   ├─ half-open from its address ≥ block_threshold ───► dropped (blocked_source)
//!   │   (an address: IPv4, or an IPv6 /64)
//!   ├─ half-open (all) ≥ max_half_open, or SAs ≥ max_ike_sas ► dropped (refused_limit)
//!   └─ admitted: proposals, DH, a half-open IKE SA
//! ```
//!
//! A cookie proves the initiator receives at its address (RFC 7296 §2.6);
//! one that does (a real address) is then held to `block_threshold`
//! half-open SAs, so that it alone can reach neither the global cookie
//! threshold nor the global limit, and a peer at another address gets
//! through. A failed IKE_AUTH frees its half-open SA at once (auth.rs).

use core::time::Duration;
use std::net::IpAddr;

use flowsec_crypto::fixed;
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::random::Random;

/// A secret is replaced after this long in use (strongSwan's
/// `COOKIE_SECRET_SWITCH`, 120 s; RFC 7296 §2.6: "periodically changed").
pub(crate) const COOKIE_SECRET_LIFETIME: Duration = Duration::from_secs(120);
/// ... or after this many cookies made with it (strongSwan's older
/// `COOKIE_REUSE`): a flood rotates it sooner,
pub(crate) const COOKIE_REUSE: u32 = 10_000;
/// ... but not before it has been in use this long: only one replaced
/// secret is kept, so a flood that rotated at will would void an honest
/// initiator's cookie before its round trip ends (at 100,000 requests a
/// second, every 0.1 s).
pub(crate) const COOKIE_MIN_LIFETIME: Duration = Duration::from_secs(2);
/// Cookies of the replaced secret are still accepted this long after it
/// was replaced (§2.6: "keep the old value of <secret> around for a short
/// time"; strongSwan's `COOKIE_LIFETIME`, 10 s): an initiator that got
/// one just before the switch gets through without another round trip.
pub(crate) const COOKIE_GRACE: Duration = Duration::from_secs(10);
/// Bytes of a cookie: the secret's version and HMAC-SHA-256 (§2.6 allows
/// 1 to 64).
const COOKIE_LEN: usize = 1 + 32;

/// Why an IKE_SA_INIT request makes no state, when it does not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Answer with this COOKIE (stateless, §2.6).
    Cookie(Vec<u8>),
    /// Its address holds `block_threshold` half-open SAs already: dropped.
    BlockedSource,
    /// The global limits are reached: dropped.
    Limit,
}

/// The responder's cookie secrets (RFC 7296 §2.6): the current one and,
/// for [`COOKIE_GRACE`] after it was replaced, the previous one. A cookie
/// is `<VersionIDofSecret> | HMAC-SHA-256(secret, version | len(Ni) | Ni |
/// IPi | SPIi)`, so checking one needs no state per initiator. Secrets
/// come from the [`Random`] the core is given, never from a constant;
/// they are replaced after [`COOKIE_SECRET_LIFETIME`] in use or
/// [`COOKIE_REUSE`] cookies, driven by the `now` of the calls (the core
/// reads no clock).
pub(crate) struct CookieJar {
    current: CookieSecret,
    previous: Option<CookieSecret>,
}

struct CookieSecret {
    version: u8,
    /// A whole HMAC-SHA-256 block (RFC 2104 uses it as it is).
    key: Zeroizing<[u8; 64]>,
    /// When it was first used (its lifetime runs from then).
    first_use: Option<Duration>,
    /// Cookies made with it.
    made: u32,
    /// When it was replaced (for the previous one).
    retired: Duration,
}

impl CookieSecret {
    fn fresh(version: u8, rng: &mut dyn Random) -> CookieSecret {
        let mut key = Zeroizing::new([0u8; 64]);
        rng.fill(&mut key[..32]);
        CookieSecret {
            version,
            key,
            first_use: None,
            made: 0,
            retired: Duration::ZERO,
        }
    }

    fn cookie(&self, ni: &[u8], ip: IpAddr, spi_i: u64) -> [u8; COOKIE_LEN] {
        // The nonce's length first: IPi has two lengths.
        let ni_len = u16::try_from(ni.len()).unwrap_or(u16::MAX).to_be_bytes();
        let (v4, v6);
        let ip: &[u8] = match ip {
            IpAddr::V4(a) => {
                v4 = a.octets();
                &v4
            }
            IpAddr::V6(a) => {
                v6 = a.octets();
                &v6
            }
        };
        let mac = fixed::hmac_sha256(
            &self.key[..],
            &[&[self.version], &ni_len, ni, ip, &spi_i.to_be_bytes()],
        );
        let mut out = [0u8; COOKIE_LEN];
        out[0] = self.version;
        out[1..].copy_from_slice(&mac);
        out
    }
}

impl CookieJar {
    /// A jar with a fresh secret from `rng`.
    pub(crate) fn new(rng: &mut dyn Random) -> CookieJar {
        let mut first = [0u8; 1];
        rng.fill(&mut first);
        CookieJar {
            current: CookieSecret::fresh(first[0], rng),
            previous: None,
        }
    }

    /// Replace the secret when it is due at `now`; forget the previous
    /// one once its grace is over.
    pub(crate) fn rotate(&mut self, now: Duration, rng: &mut dyn Random) {
        let first_use = *self.current.first_use.get_or_insert(now);
        let end = first_use + COOKIE_SECRET_LIFETIME;
        let worn = self.current.made >= COOKIE_REUSE && now >= first_use + COOKIE_MIN_LIFETIME;
        if now >= end || worn {
            let next = CookieSecret::fresh(self.current.version.wrapping_add(1), rng);
            let mut old = std::mem::replace(&mut self.current, next);
            // An unused secret ends at its lifetime, not at the first
            // request after a quiet hour: its cookies are stale by then.
            old.retired = now.min(end);
            self.previous = Some(old);
            self.current.first_use = Some(now);
        }
        if self
            .previous
            .as_ref()
            .is_some_and(|p| now >= p.retired + COOKIE_GRACE)
        {
            self.previous = None;
        }
    }

    /// The cookie for a request, with the current secret.
    pub(crate) fn make(&mut self, ni: &[u8], ip: IpAddr, spi_i: u64) -> Vec<u8> {
        self.current.made = self.current.made.saturating_add(1);
        self.current.cookie(ni, ip, spi_i).to_vec()
    }

    /// Whether `cookie` is one of ours for this request at `now`: made
    /// with the current secret, or with the previous one within
    /// [`COOKIE_GRACE`] of its replacement. Compared in constant time.
    pub(crate) fn verify(
        &self,
        now: Duration,
        cookie: &[u8],
        ni: &[u8],
        ip: IpAddr,
        spi_i: u64,
    ) -> bool {
        let Some(&version) = cookie.first() else {
            return false;
        };
        let secret = if version == self.current.version {
            &self.current
        } else {
            match &self.previous {
                Some(p) if p.version == version && now < p.retired + COOKIE_GRACE => p,
                _ => return false,
            }
        };
        cookie.len() == COOKIE_LEN && bool::from(secret.cookie(ni, ip, spi_i).ct_eq(cookie))
    }
}

/// What the per-address limits count as one source: an IPv4 address, or
/// an IPv6 /64 (one host or one LAN is given a /64, and picks any address
/// in it at will; RFC 7421).
pub(crate) fn source(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(a) => {
            let net = u128::from(a) & !((1u128 << 64) - 1);
            IpAddr::V6(net.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::SeededRandom;

    const IP: &str = "198.51.100.7";

    fn ask(jar: &mut CookieJar) -> Vec<u8> {
        jar.make(&[7; 32], IP.parse().unwrap(), 0x1234)
    }

    fn ok(jar: &CookieJar, now: u64, cookie: &[u8]) -> bool {
        jar.verify(
            Duration::from_secs(now),
            cookie,
            &[7; 32],
            IP.parse().unwrap(),
            0x1234,
        )
    }

    #[test]
    fn an_ipv6_64_is_one_source() {
        let a = |s: &str| source(s.parse().unwrap());
        assert_eq!(a("2001:db8:1:2::1"), a("2001:db8:1:2:ffff::9"));
        assert_ne!(a("2001:db8:1:2::1"), a("2001:db8:1:3::1"));
        assert_ne!(a("192.0.2.1"), a("192.0.2.2"));
    }

    #[test]
    fn a_cookie_is_bound_to_the_request_and_the_secret() {
        let mut rng = SeededRandom::new(1);
        let mut jar = CookieJar::new(&mut rng);
        jar.rotate(Duration::ZERO, &mut rng);
        let c = ask(&mut jar);
        assert_eq!(c.len(), COOKIE_LEN);
        assert!(ok(&jar, 0, &c));
        let ip: IpAddr = "198.51.100.8".parse().unwrap();
        assert!(!jar.verify(Duration::ZERO, &c, &[7; 32], ip, 0x1234));
        assert!(!jar.verify(Duration::ZERO, &c, &[8; 32], IP.parse().unwrap(), 0x1234));
        assert!(!jar.verify(Duration::ZERO, &c, &[7; 32], IP.parse().unwrap(), 0x1235));
        let mut bad = c.clone();
        bad[20] ^= 1;
        assert!(!ok(&jar, 0, &bad));
        assert!(!ok(&jar, 0, &c[..COOKIE_LEN - 1]));
        assert!(!ok(&jar, 0, &[]));
    }

    #[test]
    fn the_secret_comes_from_the_random_source_never_a_constant() {
        // Two responders with different generators: different cookies for
        // the same request; neither accepts the other's.
        let (mut r1, mut r2) = (SeededRandom::new(1), SeededRandom::new(2));
        let (mut a, mut b) = (CookieJar::new(&mut r1), CookieJar::new(&mut r2));
        let (ca, cb) = (ask(&mut a), ask(&mut b));
        assert_ne!(ca[1..], cb[1..]);
        let mut forged = cb.clone();
        forged[0] = ca[0];
        assert!(!ok(&a, 0, &forged) && !ok(&a, 0, &cb));
        // A key of zeros (the old fallback's shape) makes other cookies.
        let zero = CookieSecret {
            version: ca[0],
            key: Zeroizing::new([0; 64]),
            first_use: None,
            made: 0,
            retired: Duration::ZERO,
        };
        assert_ne!(
            zero.cookie(&[7; 32], IP.parse().unwrap(), 0x1234)[..],
            ca[..]
        );
    }

    /// The cookie is `version | HMAC-SHA-256(secret, version | len(Ni) |
    /// Ni | IPi | SPIi)`, against Python's `hmac` for a fixed secret (IPv4
    /// and IPv6).
    #[test]
    fn cookie_matches_its_definition() {
        let secret = CookieSecret {
            version: 5,
            key: Zeroizing::new([0x11; 64]),
            first_use: None,
            made: 0,
            retired: Duration::ZERO,
        };
        for (ip, mac) in [
            (
                "192.0.2.1",
                "c2d44e9d42440c24e922bf0b2ac9a0cbd2f951ff764e11c1f218dcdf93e6fee3",
            ),
            (
                "2001:db8::1",
                "322b5cc401535d167856fb503ebc6dc2bcaa3d76f761fab7ac8aeecdecc8f3ee",
            ),
        ] {
            let c = secret.cookie(&[7; 32], ip.parse().unwrap(), 0x1234);
            assert_eq!(c[0], 5);
            assert_eq!(hex::encode(&c[1..]), mac, "{ip}");
        }
    }

    #[test]
    fn a_cookie_of_the_previous_secret_is_accepted_within_the_grace_only() {
        let mut rng = SeededRandom::new(3);
        let mut jar = CookieJar::new(&mut rng);
        jar.rotate(Duration::from_secs(1000), &mut rng);
        let old = ask(&mut jar);
        // Not due yet: the same secret.
        jar.rotate(Duration::from_secs(1119), &mut rng);
        assert_eq!(ask(&mut jar), old);
        // Due (120 s in use): a new secret and version; the old cookie
        // still passes for 10 s after the switch, then not.
        jar.rotate(Duration::from_secs(1120), &mut rng);
        let new = ask(&mut jar);
        assert_ne!(new[0], old[0]);
        assert_ne!(new, old);
        assert!(ok(&jar, 1120, &new) && ok(&jar, 1120, &old));
        assert!(ok(&jar, 1129, &old));
        assert!(!ok(&jar, 1130, &old));
        jar.rotate(Duration::from_secs(1130), &mut rng);
        assert!(jar.previous.is_none(), "the old secret is forgotten");
        assert!(!ok(&jar, 1130, &old) && ok(&jar, 1130, &new));
    }

    #[test]
    fn a_quiet_secret_ends_at_its_lifetime() {
        let mut rng = SeededRandom::new(4);
        let mut jar = CookieJar::new(&mut rng);
        jar.rotate(Duration::ZERO, &mut rng);
        let old = ask(&mut jar);
        // The next request an hour later: the switch happens now, but the
        // old secret's cookies are long stale.
        jar.rotate(Duration::from_secs(3600), &mut rng);
        assert!(!ok(&jar, 3600, &old));
    }

    #[test]
    fn a_flood_of_cookies_rotates_the_secret_sooner() {
        let mut rng = SeededRandom::new(5);
        let mut jar = CookieJar::new(&mut rng);
        jar.rotate(Duration::ZERO, &mut rng);
        let first = ask(&mut jar);
        for _ in 1..COOKIE_REUSE {
            jar.make(&[1; 32], IP.parse().unwrap(), 1);
        }
        // Not within its first 2 s: an honest initiator's round trip
        // outlives any flood.
        jar.rotate(Duration::from_secs(1), &mut rng);
        assert_eq!(ask(&mut jar)[0], first[0]);
        jar.rotate(COOKIE_MIN_LIFETIME, &mut rng);
        let next = ask(&mut jar);
        assert_ne!(first[0], next[0]);
        assert!(ok(&jar, 2, &first) && ok(&jar, 2, &next));
    }
}
