//! `flowsec speed`'s key exchange rows: operations per second of each
//! IKE key exchange method of the provider, MODP to ML-KEM, as `openssl
//! speed ecdh`/`openssl speed ml-kem-768` print them. Three operations
//! make one exchange (RFC 7296 §1.2, draft-ietf-ipsecme-ikev2-mlkem §2):
//! - `ke-start`: the initiator's key pair and KE data (Diffie-Hellman:
//!   g^i; ML-KEM: KeyGen, the encapsulation key);
//! - `ke-respond`: the responder's answer and secret (Diffie-Hellman:
//!   its key pair and g^ir; ML-KEM: the §7.2 key check and Encaps);
//! - `ke-finish`: the initiator's secret (g^ir; ML-KEM: Decaps).
//!
//! A row's size is the KE payload data the operation sends (0 for
//! `ke-finish`). What a rekey costs a gateway is `ke-start` +
//! `ke-finish` as initiator, `ke-respond` as responder.

use std::hint::black_box;
use std::time::{Duration, Instant};

use flowsec_crypto::random::OsRandom;
use flowsec_crypto::Provider;

use super::{row, Row};

/// The rows' operations.
pub(super) const KX_OPS: &[&str] = &["ke-start", "ke-respond", "ke-finish"];

/// Every method of `provider`: the three operations, each about `per`.
pub(super) fn kx_rows(provider: &Provider, per: Duration) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut rng = OsRandom;
    let backend = provider.backend_names().join(">");
    for id in provider.key_exchange_ids() {
        let Some(method) = provider.key_exchange(id) else {
            continue;
        };
        let name = id.to_string();
        let Ok(initiator) = method.start(&mut rng) else {
            continue;
        };
        let sent = initiator.public_value().to_vec();
        let Ok((responder, _)) = method.respond(&mut rng, &sent) else {
            continue;
        };
        let answer = responder.public_value().to_vec();
        let ns = measure(per, || {
            black_box(method.start(&mut rng).ok());
        });
        rows.push(row(&name, "ke-start", &backend, sent.len(), ns, None));
        let ns = measure(per, || {
            black_box(method.respond(&mut rng, &sent).ok());
        });
        rows.push(row(&name, "ke-respond", &backend, answer.len(), ns, None));
        let ns = measure(per, || {
            black_box(initiator.shared_secret(&answer).ok());
        });
        rows.push(row(&name, "ke-finish", &backend, 0, ns, None));
    }
    rows
}

/// Nanoseconds per call of `op`, run for about `per` after one warm-up
/// call (at least once): unlike the packet rows' batches, a slow group
/// (MODP-8192: tens of milliseconds a key) runs a few times, not 16.
fn measure(per: Duration, mut op: impl FnMut()) -> f64 {
    op();
    let start = Instant::now();
    let mut calls = 0u32;
    while calls == 0 || start.elapsed() < per {
        op();
        calls += 1;
    }
    start.elapsed().as_nanos() as f64 / f64::from(calls)
}

/// The key exchange rows as a table: a line per method and backend,
/// operations per second of each operation, and a whole exchange's
/// milliseconds (both ends on one core).
pub(super) fn print_kx_table(rows: &[Row]) {
    let kx: Vec<&Row> = rows.iter().filter(|r| KX_OPS.contains(&r.op)).collect();
    if kx.is_empty() {
        return;
    }
    println!("\nkey exchange methods, operations per second (one core)");
    println!(
        "{:<14} {:<20} {:>10} {:>11} {:>10} {:>12} {:>9} {:>9}",
        "method", "backend", "start/s", "respond/s", "finish/s", "exchange ms", "KEi B", "KEr B"
    );
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for r in &kx {
        if !keys.contains(&(r.suite.as_str(), r.backend.as_str())) {
            keys.push((r.suite.as_str(), r.backend.as_str()));
        }
    }
    for (method, backend) in keys {
        let op = |name: &str| {
            kx.iter()
                .find(|r| r.suite == method && r.backend == backend && r.op == name)
        };
        let (Some(s), Some(r), Some(f)) = (op("ke-start"), op("ke-respond"), op("ke-finish"))
        else {
            continue;
        };
        let ms = (s.ns_per_op + r.ns_per_op + f.ns_per_op) / 1e6;
        println!(
            "{method:<14} {backend:<20} {:>10.0} {:>11.0} {:>10.0} {ms:>12.3} {:>9} {:>9}",
            s.ops_per_s, r.ops_per_s, f.ops_per_s, s.size, r.size
        );
    }
}
