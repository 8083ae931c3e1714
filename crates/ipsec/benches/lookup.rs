//! What a worker asks per packet before any crypto: the SPD lookup (a scan
//! of the ordered list, RFC 4301 §4.4.1) against the [`SpdCache`] answer,
//! and the SAD's choice of outbound SA ([`Sad::find_outbound`], indexed by
//! the SA's endpoints) against a scan of every SA, as it was before issue
//! 17. Side by side in one run, for growing databases:
//!
//!     cargo bench -p flowsec-ipsec --bench lookup
//!
//! The matching policy is the last of the list (the worst case; a random
//! position costs half), and 64 flows take turns, as a busy gateway's do.

use core::time::Duration;
use std::net::IpAddr;

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use flowsec_crypto::{EncrId, Provider};
use flowsec_ipsec::sad::Sad;
use flowsec_ipsec::spd::{IpPrefix, Level, SaTemplate};
use flowsec_ipsec::{
    Action, Direction, Flow, Mode, Policy, Protocol, SaConfig, SaHandle, SaState,
    SecurityAssociation, Selector, Spd, SpdCache,
};

const NOW: Duration = Duration::from_secs(10);

fn prefix(addr: [u8; 4], len: u8) -> IpPrefix {
    IpPrefix::new(IpAddr::from(addr), len).unwrap()
}

fn flows() -> Vec<Flow> {
    (0..64u8)
        .map(|i| Flow {
            src: IpAddr::from([10, 1, 0, i]),
            dst: IpAddr::from([10, 2, 0, i]),
            protocol: 17,
            src_port: 40_000 + u16::from(i),
            dst_port: 9,
            fragment: false,
        })
        .collect()
}

/// `n` outbound policies, the one for 10.1/16 → 10.2/16 last.
fn spd(n: usize) -> Spd {
    let mut spd = Spd::new();
    for i in 0..n - 1 {
        let dst = prefix([10, 100 + (i >> 16) as u8, (i >> 8) as u8, i as u8], 32);
        let p = Policy {
            direction: Direction::Out,
            selector: Selector::between(prefix([10, 1, 0, 0], 16), dst),
            action: Action::Discard,
            priority: 0,
        };
        spd.add(p).unwrap();
    }
    let last = Policy {
        direction: Direction::Out,
        selector: Selector::between(prefix([10, 1, 0, 0], 16), prefix([10, 2, 0, 0], 16)),
        action: Action::Discard,
        priority: 0,
    };
    spd.add(last).unwrap();
    spd
}

fn policies(c: &mut Criterion) {
    let flows = flows();
    let mut g = c.benchmark_group("spd_lookup");
    for n in [10usize, 100, 1_000] {
        let spd = spd(n);
        let mut k = 0;
        g.bench_function(BenchmarkId::new("scan", n), |b| {
            b.iter(|| {
                k = (k + 1) % flows.len();
                black_box(spd.lookup(Direction::Out, &flows[k]))
            })
        });
        let mut cache = SpdCache::default();
        g.bench_function(BenchmarkId::new("cache", n), |b| {
            b.iter(|| {
                k = (k + 1) % flows.len();
                black_box(cache.lookup(&spd, Direction::Out, &flows[k]).is_some())
            })
        });
    }
    g.finish();
}

/// `n` outbound tunnel SAs from 192.0.2.1, one of them to 192.0.2.2.
fn sad(n: usize) -> Sad {
    let provider = Provider::fastest();
    let mut sad = Sad::new();
    for i in 0..n {
        let dst = match i {
            0 => IpAddr::from([192, 0, 2, 2]),
            _ => IpAddr::from([198, 18, (i >> 8) as u8, i as u8]),
        };
        let config = SaConfig::esp(
            0x1000 + i as u32,
            Mode::Tunnel,
            IpAddr::from([192, 0, 2, 1]),
            dst,
        )
        .with_encr(EncrId::AES_GCM_16, &[7; 20]);
        sad.add(SecurityAssociation::new(&config, &provider, NOW).unwrap())
            .unwrap();
    }
    sad
}

/// The choice `find_outbound` makes, by a scan of every SA (the code it
/// replaced).
fn scan(sad: &Sad, t: &SaTemplate, now: Duration) -> Option<(u32, SaState)> {
    let (src, dst) = t.tunnel.unwrap();
    sad.iter()
        .filter(|s| {
            s.id().protocol == t.protocol && s.mode() == t.mode && s.src() == src && s.dst() == dst
        })
        .map(|s| (s.id().spi, s.state(now), s.usage().added))
        .filter(|&(_, state, _)| state != SaState::Expired)
        .min_by_key(|&(_, state, added)| (state, core::cmp::Reverse(added)))
        .map(|(spi, state, _)| (spi, state))
}

fn associations(c: &mut Criterion) {
    let template = SaTemplate {
        protocol: Protocol::Esp,
        mode: Mode::Tunnel,
        tunnel: Some((IpAddr::from([192, 0, 2, 1]), IpAddr::from([192, 0, 2, 2]))),
        level: Level::Require,
        reqid: 0,
    };
    let any = IpAddr::from([0, 0, 0, 0]);
    let mut g = c.benchmark_group("sad_find_outbound");
    for n in [2usize, 200, 2_000] {
        let sad = sad(n);
        let found: Option<SaHandle> = sad.find_outbound(&template, any, any, NOW);
        assert_eq!(
            found.and_then(|h| sad.get(h)).map(|s| s.id().spi),
            Some(0x1000)
        );
        g.bench_function(BenchmarkId::new("scan", n), |b| {
            b.iter(|| black_box(scan(&sad, &template, NOW)))
        });
        g.bench_function(BenchmarkId::new("index", n), |b| {
            b.iter(|| black_box(sad.find_outbound(&template, any, any, NOW)))
        });
    }
    g.finish();
}

criterion_group!(benches, policies, associations);
criterion_main!(benches);
