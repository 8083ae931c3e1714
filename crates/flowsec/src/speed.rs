//! `flowsec speed`: seal and open throughput of every ESP/AH suite through
//! the real IPsec core (tunnel mode, IPv4 outer header: SA lookup result,
//! outer header, padding, sequence number, crypto), on one core, the way
//! `openssl speed` reports ciphers. The "raw" rows call the AEAD directly
//! on the same sizes, so the core's overhead is the difference; the S4 rows
//! are the raw primitives study S4 tabulated (AES-128-CBC and SHA-1); the
//! key exchange rows ([`kx`]) each IKE key exchange method's operations
//! per second, MODP to ML-KEM.
//!
//! Sizes are the protected packet's length (the inner IP packet). Seal
//! rewrites only the inner header each round (the payload is encrypted in
//! place again); open copies the sealed packet into the buffer each round,
//! as receiving it would, with the replay window off (the same packet is
//! opened again and again), which skips the window's bitmap update.

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use clap::Args;
use flowsec_crypto::backend::HashAlg;
use flowsec_crypto::policy::{encr_requirement, integ_requirement};
use flowsec_crypto::suite::{integ_key_len, Suite};
use flowsec_crypto::{Aead, EncrId, IntegId, Provider};
use flowsec_ipsec::process::{self, Bundle, Egress, Inbound, SealError};
use flowsec_ipsec::spd::{Level, SaTemplate};
use flowsec_ipsec::{Flow, Mode, PacketBuf, SaConfig, Sad, SecurityAssociation};
use serde::Serialize;

use crate::{CliError, UsageError};

mod kx;

/// Why a suite could not be measured.
#[derive(Debug)]
#[non_exhaustive]
pub enum SpeedError {
    /// The suite's SA could not be made.
    Sa(flowsec_ipsec::SaError),
    /// The SA could not be added to its SAD.
    Sad(flowsec_ipsec::sad::SadError),
    /// The sender's bundle could not be resolved, or a first seal failed.
    Seal(flowsec_ipsec::SealError),
    /// The raw AEAD could not be made.
    Crypto(flowsec_crypto::CryptoError),
    /// Seals failed while they were timed.
    SealFailures {
        /// How many.
        failures: u64,
        /// The packet size.
        size: usize,
    },
    /// A sealed packet did not open to the packet sealed.
    SelfCheck {
        /// The packet size.
        size: usize,
        /// What opening it gave.
        outcome: Result<Inbound, flowsec_ipsec::DropReason>,
    },
    /// Opens failed while they were timed.
    OpenFailures {
        /// How many.
        failures: u64,
        /// The packet size.
        size: usize,
    },
}

impl std::fmt::Display for SpeedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpeedError::Sa(e) => e.fmt(f),
            SpeedError::Sad(e) => e.fmt(f),
            SpeedError::Seal(e) => e.fmt(f),
            SpeedError::Crypto(e) => e.fmt(f),
            SpeedError::SealFailures { failures, size } => {
                write!(f, "{failures} seals failed at {size} bytes")
            }
            SpeedError::SelfCheck { size, outcome } => {
                write!(f, "self-check failed at {size} bytes: {outcome:?}")
            }
            SpeedError::OpenFailures { failures, size } => {
                write!(f, "{failures} opens failed at {size} bytes")
            }
        }
    }
}

impl std::error::Error for SpeedError {}

/// The sizes `flowsec speed` measures by default.
pub const SIZES: &[usize] = &[64, 256, 512, 1024, 1420, 1500, 2048, 8192, 16384];
/// Study S4's data sizes for the raw-primitive rows.
pub const S4_SIZES: &[usize] = &[256, 512, 1024, 1500, 2048];
/// Suites measured when none are named.
pub const DEFAULT_SUITES: &[&str] = &[
    "aes128gcm16",
    "aes256gcm16",
    "aes128gcm8",
    "aes128ccm16",
    "chacha20poly1305",
    "aes128gmac",
    "aes128-sha1",
    "aes128-sha256",
    "aes256-sha512",
    "aes128ctr-sha1",
    "aes128-aesxcbc",
    "aes128-aescmac",
    "3des-sha1",
    "3des-md5",
    "des-md5",
    "blowfish192-sha1",
    "cast128-sha1",
    "twofish128-sha1",
    "camellia128-sha1",
    "null-sha1",
    "ah-md5",
    "ah-sha1",
    "ah-sha256",
    "ah-aesxcbc",
];

/// Arguments of `flowsec speed`.
#[derive(Args, Debug)]
pub struct SpeedArgs {
    /// Suites in strongSwan syntax (`aes128gcm16`, `aes128-sha1`,
    /// `3des-md5`, `ah-sha1`, …); default: the 24 suites of docs/CLI.md.
    pub suites: Vec<String>,
    /// Crypto backend: auto (fastest per algorithm), aws-lc, rustcrypto,
    /// engine (auto's algorithms on a crypto-engine thread behind a request
    /// queue, study S4's offload), or all (aws-lc and rustcrypto in turn).
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Seconds per measurement.
    #[arg(long, short = 's', default_value_t = 0.1)]
    pub seconds: f64,
    /// Packet sizes in bytes (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = SIZES.to_vec())]
    pub sizes: Vec<usize>,
    /// Skip the study S4 raw-primitive rows.
    #[arg(long)]
    pub no_s4: bool,
    /// Skip the key exchange rows (MODP, ECP, Curve25519, ML-KEM).
    #[arg(long)]
    pub no_kx: bool,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// One measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Suite or primitive name.
    pub suite: String,
    /// `seal`, `open`, `raw-seal`, `encrypt`, `hash`, `ke-start`,
    /// `ke-respond`, `ke-finish`.
    pub op: &'static str,
    /// Which backend(s) ran it.
    pub backend: String,
    /// Bytes per operation.
    pub size: usize,
    /// Throughput, 10^6 bytes per second.
    pub mb_per_s: f64,
    /// Operations per second.
    pub ops_per_s: f64,
    /// Nanoseconds per operation.
    pub ns_per_op: f64,
    /// RFC 8221 warning, if the suite uses a MUST NOT / SHOULD NOT algorithm.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

#[derive(Serialize)]
struct Report<'a> {
    seconds_per_measurement: f64,
    sizes: &'a [usize],
    rows: &'a [Row],
    summary: Vec<String>,
}

pub fn run(args: &SpeedArgs) -> Result<(), CliError> {
    if !(args.seconds > 0.0 && args.seconds <= 60.0) {
        return Err(UsageError::SpeedSeconds.into());
    }
    if let Some(&bad) = args.sizes.iter().find(|&&s| !(28..=60_000).contains(&s)) {
        return Err(UsageError::SpeedSize(bad).into());
    }
    let names: Vec<&str> = if args.suites.is_empty() {
        DEFAULT_SUITES.to_vec()
    } else {
        args.suites.iter().map(String::as_str).collect()
    };
    let mut suites = Vec::new();
    for name in &names {
        let suite = Suite::parse(name).map_err(UsageError::Suite)?;
        if let (false, Some(w)) = (args.suites.is_empty(), warning(&suite)) {
            eprintln!("flowsec: warning: {name}: {w}");
        }
        suites.push((name.to_string(), suite));
    }
    let backends: Vec<(&str, Provider)> = match args.backend.as_str() {
        "all" => vec![
            ("aws-lc", Provider::aws_lc()),
            ("rustcrypto", Provider::rustcrypto()),
        ],
        name => vec![(
            name,
            Provider::by_name(name)
                .ok_or_else(|| CliError::Usage(UsageError::SpeedBackend(name.to_string())))?,
        )],
    };
    let per = Duration::from_secs_f64(args.seconds);
    let mut rows = Vec::new();
    for (backend_name, provider) in &backends {
        for (name, suite) in &suites {
            match suite_rows(provider, name, suite, &args.sizes, per) {
                Ok(r) => rows.extend(r),
                Err(why) if args.suites.is_empty() || backends.len() > 1 => {
                    if !args.json {
                        eprintln!("flowsec speed: {name} skipped on {backend_name}: {why}");
                    }
                }
                Err(error) => {
                    return Err(CliError::Speed {
                        suite: name.clone(),
                        backend: backend_name.to_string(),
                        error: Box::new(error),
                    })
                }
            }
        }
        if !args.no_s4 {
            rows.extend(s4_rows(provider, per));
        }
        if !args.no_kx {
            rows.extend(kx::kx_rows(provider, per));
        }
    }
    let summary = summarize(&rows);
    if args.json {
        let report = Report {
            seconds_per_measurement: args.seconds,
            sizes: &args.sizes,
            rows: &rows,
            summary,
        };
        let text = serde_json::to_string_pretty(&report).map_err(CliError::Json)?;
        println!("{text}");
    } else {
        print_tables(&rows, &args.sizes, args.seconds, &backends, &summary);
    }
    Ok(())
}

/// Run `op` repeatedly for about `per`; returns nanoseconds per call: the
/// best of several slices, since a shared machine only ever makes things
/// slower (the minimum is the least disturbed estimate).
fn measure(per: Duration, mut op: impl FnMut()) -> f64 {
    measure_pair(per, &mut op, None).0
}

/// Like [`measure`], for two operations whose ratio matters: their slices
/// alternate, so that both see the same machine load.
fn measure_pair(per: Duration, a: &mut dyn FnMut(), mut b: Option<&mut dyn FnMut()>) -> (f64, f64) {
    const SLICES: u32 = 6;
    // Warm up (caches, lazily built tables).
    for _ in 0..16 {
        a();
        if let Some(b) = b.as_mut() {
            b();
        }
    }
    let slice = per / SLICES;
    let (mut best_a, mut best_b) = (f64::INFINITY, f64::INFINITY);
    let (mut batch_a, mut batch_b) = (16u64, 16u64);
    for _ in 0..SLICES {
        best_a = best_a.min(time_slice(slice, a, &mut batch_a));
        if let Some(b) = b.as_mut() {
            best_b = best_b.min(time_slice(slice, *b, &mut batch_b));
        }
    }
    (best_a, best_b)
}

/// Nanoseconds per call of `op` over about `slice`; grows `batch` so that
/// the clock is read rarely.
fn time_slice(slice: Duration, op: &mut dyn FnMut(), batch: &mut u64) -> f64 {
    let mut calls = 0u64;
    let start = Instant::now();
    loop {
        for _ in 0..*batch {
            op();
        }
        calls += *batch;
        let elapsed = start.elapsed();
        if elapsed >= slice {
            return elapsed.as_nanos() as f64 / calls as f64;
        }
        if elapsed < slice / 8 {
            *batch *= 2;
        }
    }
}

fn row(
    suite: &str,
    op: &'static str,
    backend: &str,
    size: usize,
    ns: f64,
    warning: Option<String>,
) -> Row {
    Row {
        suite: suite.to_string(),
        op,
        backend: backend.to_string(),
        size,
        mb_per_s: size as f64 * 1e3 / ns,
        ops_per_s: 1e9 / ns,
        ns_per_op: ns,
        warning,
    }
}

fn key(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(0x9d).wrapping_add(0x42))
        .collect()
}

const OUTER_SRC: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
const OUTER_DST: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));

fn sa_config(suite: &Suite) -> SaConfig {
    const SPI: u32 = 0x1000_0001;
    let c = match suite.encr {
        Some(e) => SaConfig::esp(SPI, Mode::Tunnel, OUTER_SRC, OUTER_DST)
            .with_encr(e.id, &key(e.keymat_len())),
        None => SaConfig::ah(SPI, Mode::Tunnel, OUTER_SRC, OUTER_DST),
    };
    c.with_integ(suite.integ, &key(integ_key_len(suite.integ)))
}

fn warning(suite: &Suite) -> Option<String> {
    let mut w = Vec::new();
    if let Some(e) = suite.encr {
        if encr_requirement(e.id).warn() {
            w.push(format!("{} is {}", e.id, encr_requirement(e.id)));
        }
    }
    if suite.integ != IntegId::NONE && integ_requirement(suite.integ).warn() {
        w.push(format!(
            "{} is {}",
            suite.integ,
            integ_requirement(suite.integ)
        ));
    }
    (!w.is_empty()).then(|| w.join("; "))
}

/// An inner IPv4/UDP packet header for a packet of `len` bytes.
fn inner_header(len: usize) -> [u8; 28] {
    let mut h = [0u8; 28];
    h[0] = 0x45;
    h[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    h[8] = 64;
    h[9] = 17;
    h[12..16].copy_from_slice(&[10, 1, 0, 1]);
    h[16..20].copy_from_slice(&[10, 2, 0, 1]);
    h[24..26].copy_from_slice(&((len - 20) as u16).to_be_bytes());
    h
}

fn suite_rows(
    provider: &Provider,
    name: &str,
    suite: &Suite,
    sizes: &[usize],
    per: Duration,
) -> Result<Vec<Row>, SpeedError> {
    let mut ends = Ends::new(provider, suite)?;
    let backend = backend_label(provider, suite, &ends.config);
    let warn = warning(suite);
    let mut rows = Vec::new();
    let mut buf = PacketBuf::new(256 + 65_536 + 512, 256);
    for &size in sizes {
        let mut sender = ends.sender(size)?;
        sender.seal(&mut buf).map_err(SpeedError::Seal)?;
        let raw_aead = raw_aead(provider, suite)?;
        let (seal_ns, raw_ns) = time_seals(&mut sender, &mut buf, raw_aead.as_deref(), per)?;
        if raw_aead.is_some() {
            // The raw AEAD is called inline, engine or not.
            let inline = backend
                .strip_prefix("engine(")
                .and_then(|b| b.strip_suffix(')'))
                .unwrap_or(&backend);
            rows.push(row(
                &format!("raw {name}"),
                "raw-seal",
                inline,
                size,
                raw_ns,
                None,
            ));
        }
        rows.push(row(name, "seal", &backend, size, seal_ns, warn.clone()));
        sender.seal(&mut buf).map_err(SpeedError::Seal)?;
        let sealed = buf.as_slice().to_vec();
        let open_ns = time_opens(&mut ends.receiver, &mut buf, &sealed, size, per)?;
        rows.push(row(name, "open", &backend, size, open_ns, warn.clone()));
    }
    Ok(rows)
}

/// Both ends of one suite's tunnel: the receiving SAD, and what makes a
/// fresh sending SA.
struct Ends<'a> {
    provider: &'a Provider,
    config: SaConfig,
    receiver: Sad,
}

impl<'a> Ends<'a> {
    fn new(provider: &'a Provider, suite: &Suite) -> Result<Self, SpeedError> {
        let config = sa_config(suite);
        let mut receiver_config = config.clone();
        receiver_config.replay_window = 0; // the same packet is opened again and again
        let mut receiver = Sad::new();
        receiver
            .add(
                SecurityAssociation::new(&receiver_config, provider, Duration::ZERO)
                    .map_err(SpeedError::Sa)?,
            )
            .map_err(SpeedError::Sad)?;
        Ok(Ends {
            provider,
            config,
            receiver,
        })
    }

    /// A fresh sending SA for one size, so that no run exhausts its
    /// sequence numbers (sequence numbers never go backwards).
    fn sender(&self, size: usize) -> Result<Sender, SpeedError> {
        let now = Duration::ZERO;
        let mut sad = Sad::new();
        sad.add(
            SecurityAssociation::new(&self.config, self.provider, now).map_err(SpeedError::Sa)?,
        )
        .map_err(SpeedError::Sad)?;
        let template = SaTemplate {
            protocol: self.config.protocol,
            mode: Mode::Tunnel,
            tunnel: Some((OUTER_SRC, OUTER_DST)),
            level: Level::Require,
            reqid: 0,
        };
        let flow = Flow {
            src: OUTER_SRC,
            dst: OUTER_DST,
            protocol: 17,
            src_port: 1,
            dst_port: 1,
            fragment: false,
        };
        let bundle = process::resolve(&sad, &[template], &flow, now).map_err(SpeedError::Seal)?;
        Ok(Sender {
            sad,
            bundle,
            header: inner_header(size),
            size,
        })
    }
}

/// A sending SA and the inner packet of one size it seals.
struct Sender {
    sad: Sad,
    bundle: Bundle,
    header: [u8; 28],
    size: usize,
}

impl Sender {
    /// Writes the inner packet into `buf` and seals it there.
    fn seal(&mut self, buf: &mut PacketBuf) -> Result<Egress, SealError> {
        buf.reset(256);
        // Cannot fail: the buffer holds 64 KiB and sizes are ≤ 60000.
        let _ = buf.set_len(self.size);
        buf.as_mut_slice()[..28].copy_from_slice(&self.header);
        process::outbound(&mut self.sad, &self.bundle, buf, Duration::ZERO)
    }
}

/// The suite's AEAD called directly (GMAC aside: it is no AEAD cipher to
/// compare with), for AEAD suites.
fn raw_aead(provider: &Provider, suite: &Suite) -> Result<Option<Box<dyn Aead>>, SpeedError> {
    match suite.encr {
        Some(e) if flowsec_crypto::esp::is_aead(e.id) && e.id != EncrId::NULL_AUTH_AES_GMAC => {
            provider
                .aead(e.id, &key(e.keymat_len()))
                .map(Some)
                .map_err(SpeedError::Crypto)
        }
        _ => Ok(None),
    }
}

/// ns per ESP seal, and ns per raw AEAD seal of the same size where there
/// is one (NaN otherwise).
fn time_seals(
    sender: &mut Sender,
    buf: &mut PacketBuf,
    raw_aead: Option<&dyn Aead>,
    per: Duration,
) -> Result<(f64, f64), SpeedError> {
    let size = sender.size;
    // Failures are counted, not timed as if they were work.
    let mut failures = 0u64;
    let mut seal = || {
        let r = sender.seal(buf);
        failures += u64::from(black_box(r).is_err());
    };
    // AEAD suites: the raw AEAD on the same size, timed in alternation
    // with the ESP seal so that their ratio is fair on a busy machine.
    let (seal_ns, raw_ns) = match raw_aead {
        Some(aead) => {
            let mut data = vec![0u8; size];
            let mut tag = vec![0u8; aead.tag_len()];
            let aad = [0u8; 8];
            let mut seq = 0u64;
            let mut raw = || {
                seq += 1;
                aead.seal(&seq.to_be_bytes(), &aad, &mut data, &mut tag);
                black_box(&tag);
            };
            measure_pair(per, &mut seal, Some(&mut raw))
        }
        None => (measure(per, seal), f64::NAN),
    };
    if failures > 0 {
        return Err(SpeedError::SealFailures { failures, size });
    }
    Ok((seal_ns, raw_ns))
}

/// ns per open of `sealed`, copied into `buf` each time as receiving it
/// would; first, that it opens to the `size`-byte packet sealed.
fn time_opens(
    receiver: &mut Sad,
    buf: &mut PacketBuf,
    sealed: &[u8],
    size: usize,
    per: Duration,
) -> Result<f64, SpeedError> {
    let now = Duration::ZERO;
    let mut check = PacketBuf::from_packet(sealed);
    match process::inbound(receiver, &mut check, now) {
        Ok(Inbound::Decapsulated(_)) if check.len() == size => {}
        outcome => return Err(SpeedError::SelfCheck { size, outcome }),
    }
    let mut failures = 0u64;
    let open_ns = measure(per, || {
        buf.reset(256);
        // Cannot fail: the buffer is larger than any sealed packet.
        let _ = buf.set(sealed);
        let r = process::inbound(receiver, buf, now);
        failures += u64::from(black_box(r).is_err());
    });
    if failures > 0 {
        return Err(SpeedError::OpenFailures { failures, size });
    }
    Ok(open_ns)
}

fn backend_label(provider: &Provider, suite: &Suite, config: &SaConfig) -> String {
    let mut names = Vec::new();
    if let Some(e) = suite.encr {
        names.extend(provider.encr_backend(e.id, &config.encr_key));
    }
    if suite.integ != IntegId::NONE {
        names.extend(provider.integ_backend(suite.integ, &config.integ_key));
    }
    names.dedup();
    let names = names.join("+");
    // ESP transforms on the engine thread: the label says so.
    if provider.is_engine() {
        format!("engine({names})")
    } else {
        names
    }
}

/// Study S4's raw rows: AES-128-CBC encryption and SHA-1 hashing.
fn s4_rows(provider: &Provider, per: Duration) -> Vec<Row> {
    let mut rows = Vec::new();
    let backend = provider
        .encr_backend(EncrId::AES_CBC, &key(16))
        .unwrap_or("none")
        .to_string();
    if let Ok(cbc) = provider.cipher(EncrId::AES_CBC, &key(16)) {
        for &size in S4_SIZES {
            // CBC needs whole blocks: 1500 is measured as 1504.
            let len = size.div_ceil(16) * 16;
            let mut data = vec![0u8; len];
            let iv = [7u8; 16];
            let ns = measure(per, || {
                cbc.encrypt(&iv, &mut data);
                black_box(&data);
            });
            rows.push(row("aes128-cbc", "encrypt", &backend, len, ns, None));
        }
    }
    if let Some(sha1) = provider.hash(HashAlg::Sha1) {
        let backend = provider.backend_names().join(">");
        for &size in S4_SIZES {
            let data = vec![0u8; size];
            let mut out = [0u8; 20];
            let ns = measure(per, || {
                sha1.digest(&data, &mut out);
                black_box(&out);
            });
            rows.push(row("sha1", "hash", &backend, size, ns, None));
        }
    }
    rows
}

/// The figures the acceptance criteria name: ESP AES-128-GCM-16 seal
/// against the raw AEAD at 1420 bytes, and the overhead at 64 bytes.
fn summarize(rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    let find = |suite: &str, op: &str, size: usize, backend: &str| {
        rows.iter()
            .find(|r| r.suite == suite && r.op == op && r.size == size && r.backend == backend)
    };
    let mut backends: Vec<&str> = rows
        .iter()
        .filter(|r| r.suite == "aes128gcm16")
        .map(|r| r.backend.as_str())
        .collect();
    backends.dedup();
    for b in backends {
        if let (Some(esp), Some(raw)) = (
            find("aes128gcm16", "seal", 1420, b),
            find("raw aes128gcm16", "raw-seal", 1420, b),
        ) {
            out.push(format!(
                "{b}: ESP aes128gcm16 seal at 1420 B = {:.0}% of the raw AEAD ({:.0} vs {:.0} MB/s)",
                100.0 * esp.mb_per_s / raw.mb_per_s,
                esp.mb_per_s,
                raw.mb_per_s
            ));
        }
        if let (Some(esp), Some(raw)) = (
            find("aes128gcm16", "seal", 64, b),
            find("raw aes128gcm16", "raw-seal", 64, b),
        ) {
            out.push(format!(
                "{b}: ESP aes128gcm16 seal at 64 B costs {:.0} ns per packet beyond the cipher ({:.0} vs {:.0} ns)",
                esp.ns_per_op - raw.ns_per_op,
                esp.ns_per_op,
                raw.ns_per_op
            ));
        }
    }
    out
}

fn print_tables(
    rows: &[Row],
    sizes: &[usize],
    seconds: f64,
    backends: &[(&str, Provider)],
    summary: &[String],
) {
    let names: Vec<String> = backends
        .iter()
        .map(|(n, p)| format!("{n} ({})", p.backend_names().join(" > ")))
        .collect();
    println!(
        "flowsec speed: one core, {seconds} s per measurement, backend {}",
        names.join(", ")
    );
    for (title, pick) in [
        (
            "MB/s (10^6 bytes per second, protected packet bytes)",
            (|r: &Row| r.mb_per_s) as fn(&Row) -> f64,
        ),
        ("thousands of packets per second", |r: &Row| {
            r.ops_per_s / 1e3
        }),
    ] {
        print_suite_table(rows, sizes, title, pick);
    }
    print_s4_table(rows);
    kx::print_kx_table(rows);
    if rows.iter().any(|r| r.warning.is_some()) {
        println!("\n! uses an algorithm RFC 8221 says MUST NOT or SHOULD NOT be used (kept to reproduce the studies)");
    }
    if !summary.is_empty() {
        println!();
        for line in summary {
            println!("{line}");
        }
    }
}

/// The suites' rows (a line per suite, op and backend; a column per
/// size), each cell `pick` of its row.
fn print_suite_table(rows: &[Row], sizes: &[usize], title: &str, pick: fn(&Row) -> f64) {
    println!("\n{title}");
    print!("{:<24} {:<8} {:<20}", "suite", "op", "backend");
    for s in sizes {
        print!(" {:>9}", format!("{s} B"));
    }
    println!();
    let mut keys: Vec<(&str, &str, &str)> = Vec::new();
    for r in rows.iter().filter(|r| {
        sizes.contains(&r.size) && !S4_OPS.contains(&r.op) && !kx::KX_OPS.contains(&r.op)
    }) {
        let k = (r.suite.as_str(), r.op, r.backend.as_str());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (suite, op, backend) in keys {
        let mark = rows.iter().any(|r| r.suite == suite && r.warning.is_some());
        let label = if mark {
            format!("{suite} !")
        } else {
            suite.to_string()
        };
        print!("{label:<24} {op:<8} {backend:<20}");
        for &s in sizes {
            match rows
                .iter()
                .find(|r| r.suite == suite && r.op == op && r.backend == backend && r.size == s)
            {
                Some(r) => print!(" {:>9.1}", pick(r)),
                None => print!(" {:>9}", "n/a"),
            }
        }
        println!();
    }
}

/// Study S4's raw primitives, MB/s by S4 size, where they were measured.
fn print_s4_table(rows: &[Row]) {
    let s4: Vec<&Row> = rows.iter().filter(|r| S4_OPS.contains(&r.op)).collect();
    if s4.is_empty() {
        return;
    }
    println!("\nstudy S4 raw primitives, MB/s (AES-CBC at 1500 B runs 1504 B: whole blocks)");
    print!("{:<24} {:<8} {:<20}", "primitive", "op", "backend");
    for s in S4_SIZES {
        print!(" {:>9}", format!("{s} B"));
    }
    println!();
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for r in &s4 {
        if !keys.contains(&(r.suite.as_str(), r.backend.as_str())) {
            keys.push((r.suite.as_str(), r.backend.as_str()));
        }
    }
    for (suite, backend) in keys {
        let cells: Vec<&&Row> = s4
            .iter()
            .filter(|r| r.suite == suite && r.backend == backend)
            .collect();
        print!("{suite:<24} {:<8} {backend:<20}", cells[0].op);
        for r in cells {
            print!(" {:>9.1}", r.mb_per_s);
        }
        println!();
    }
}

const S4_OPS: &[&str] = &["encrypt", "hash"];
