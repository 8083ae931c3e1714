//! The Internet checksum (RFC 1071) over the sizes the data path sums:
//! a small datagram, a full-size TCP segment, a coalesced 64 KB one.
//! Beside it, the loop it replaced (one chain of big-endian 64-bit loads,
//! issue 17) and the plain loop of 16-bit words, so the ratios are
//! measured side by side in one run:
//!
//!     cargo bench -p flowsec-wire --bench checksum

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use flowsec_wire::ipv4::checksum;

fn words16(data: &[u8]) -> u16 {
    let mut sum: u64 = data
        .chunks(2)
        .map(|c| u64::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

fn be64(data: &[u8]) -> u16 {
    let mut sum: u64 = 0;
    let mut words = data.chunks_exact(8);
    for c in &mut words {
        let w = u64::from_be_bytes(c.try_into().unwrap());
        sum += (w >> 32) + (w & 0xffff_ffff);
    }
    for c in words.remainder().chunks(2) {
        sum += u64::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

fn bench(c: &mut Criterion) {
    let data: Vec<u8> = (0..65_535u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    let mut g = c.benchmark_group("checksum");
    for len in [64usize, 1_400, 65_535] {
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_with_input(BenchmarkId::new("data", len), &data[..len], |b, d| {
            b.iter(|| checksum::data(black_box(d)))
        });
        g.bench_with_input(BenchmarkId::new("be64", len), &data[..len], |b, d| {
            b.iter(|| be64(black_box(d)))
        });
        g.bench_with_input(BenchmarkId::new("words16", len), &data[..len], |b, d| {
            b.iter(|| words16(black_box(d)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
