//! The bodies of the fuzz targets, and the fixed SADs they decapsulate
//! with.
//!
//! Each `fuzz_targets/<name>.rs` is one `fuzz_target!` calling the function
//! of the same name here; `crates/ipsec/tests/fuzz_corpus.rs` includes this
//! file too (`#[path]`) to replay the committed corpus on stable Rust and to
//! write the seed packets. A target checks nothing but that the code under
//! it returns: no panic, no hang, no unbounded allocation (libFuzzer's
//! `-rss_limit_mb` / `-malloc_limit_mb` / `-timeout` catch the last two).
//!
//! Every input starts from the same SAD state (the replay windows are reset,
//! see [`with_sad`]) so that a run does not depend on the inputs before it:
//! the seed packets, sealed by `process::outbound` with the same
//! configurations, then always open.
#![allow(dead_code)]

use std::cell::RefCell;
use std::hint::black_box;
use std::net::IpAddr;
use std::time::Duration;

use flowsec_crypto::{EncrId, EspTransform, IntegId, Provider};
use flowsec_ipsec::process::{self, Inbound};
use flowsec_ipsec::spd::{IpPrefix, Level, SaTemplate};
use flowsec_ipsec::{
    Action, Direction, Mode, PacketBuf, Policy, Protocol, ReplayWindow, SaConfig, SaId, Sad,
    SecurityAssociation, Selector, UdpEncap as EncapPorts,
};
use flowsec_wire::ike;
use flowsec_wire::ipv6ext::{Ipv6FragmentRepr, Ipv6OptionsHeader, Ipv6RoutingHeader};
use flowsec_wire::udp_encap::{self, UdpEncap};
use flowsec_wire::{
    checksum, ipv6_header_chain, version_of, AhPacket, AhRepr, EspPacket, EspRepr, EspTrailer,
    IpCompPacket, IpCompRepr, IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6FragmentHeader, Ipv6Packet,
    Ipv6Repr, UdpPacket, UdpRepr,
};

/// The time every packet is processed (and every SA added) at.
pub const NOW: Duration = Duration::from_secs(1000);

/// The ESN SAs' receive windows start here, and their senders' counters
/// too, so that three packets cross 2^32.
pub const ESN_START: u64 = u32::MAX as u64 - 2;

// ---------------------------------------------------------------------------
// Targets
// ---------------------------------------------------------------------------

/// Every IPv4/IPv6 view, getter, setter and `Repr` (parse, then emit what
/// was parsed), the IPv6 header chain and each extension header in it, and
/// UDP, ESP, AH, IPComp and the UDP-encapsulation classifier on the payload.
pub fn ip_parse(data: &[u8]) {
    let _ = black_box(version_of(data));
    black_box(checksum::data(data));
    ipv4(data);
    ipv6(data);
}

/// `process::inbound_packet` on an IP packet, with [`ESP_SAS`].
pub fn esp_inbound(data: &[u8]) {
    inbound(ESP_SAS, data);
}

/// `process::inbound_packet` on an IP packet, with [`AH_SAS`].
pub fn ah_inbound(data: &[u8]) {
    inbound(AH_SAS, data);
}

/// `process::inbound_packet` on an IP packet, with [`IPCOMP_SAS`].
pub fn ipcomp_inbound(data: &[u8]) {
    inbound(IPCOMP_SAS, data);
}

/// `process::inbound_packet` on an IP packet, with [`UDP_ENCAP_SAS`] (everything
/// UDP is taken as arriving on port 4500).
pub fn udp_encap_inbound(data: &[u8]) {
    inbound(UDP_ENCAP_SAS, data);
}

/// `process::inbound_packet` on an ESP packet sealed here around the input, so
/// that the fuzzer's bytes are what the receiver finds after the ICV check:
/// the first byte picks one of [`DECRYPTED_CASES`] (an SA of
/// [`DECRYPTED_SAS`], outer header, sequence number), the rest is the ESP
/// plaintext as it is (payload, padding, Pad Length, Next Header; cut to a
/// multiple of the block length). What decapsulates goes through
/// `check_inbound` with the case's policy, then `ip_parse`.
pub fn esp_decrypted(data: &[u8]) {
    let Some((case, packet)) = esp_decrypted_packet(data) else {
        return;
    };
    with_sad(DECRYPTED_SAS, |sad| {
        let mut buf = PacketBuf::from_packet(&packet);
        if let Ok(Inbound::Decapsulated(applied)) = process::inbound_packet(sad, &mut buf, NOW) {
            let policy = case.policy();
            let _ = black_box(process::check_inbound(sad, Some(&policy), &applied));
            ip_parse(buf.as_slice());
        }
    });
}

/// IKE: `ike::Header::parse` and `ike::Message::parse` on the input, and
/// `ike::parse_payloads` on the input after its first byte, which picks the
/// first payload's type (so every payload type's parser is reached). What
/// parses is emitted and parsed again: the same message or chain must come
/// back (the header's Length aside: a re-emitted transform's unknown
/// attributes shrink to one placeholder).
pub fn ike_message(data: &[u8]) {
    if let Ok(h) = ike::Header::parse(data) {
        let mut again = data.to_vec();
        h.emit(&mut again);
        assert_eq!(ike::Header::parse(&again), Ok(h));
    }
    if let Ok(m) = ike::Message::parse(data) {
        let again = ike::Message::parse(&m.emit()).expect("re-emitted message parses");
        assert_eq!(again.payloads, m.payloads);
        let header = ike::Header {
            length: again.header.length,
            ..m.header
        };
        assert_eq!(again.header, header);
    }
    if let Some((&first, chain)) = data.split_first() {
        let first = ike::PayloadType(first);
        if let Ok(p) = ike::parse_payloads(first, chain) {
            let again = ike::emit_payloads(&p);
            assert_eq!(ike::parse_payloads(ike::first_type(&p), &again), Ok(p));
        }
    }
}

/// `flowsec_wire::vici` (what a vici client sends flowsec's daemon): the
/// input as a byte stream of frames (`frame_len`, then `Packet::parse` on
/// each whole one, as the daemon's client reader does), and the input as
/// one packet. What parses is emitted and parsed again and must come back
/// equal; a frame's announced length never exceeds `MAX_FRAME`.
pub fn vici_packet(data: &[u8]) {
    use flowsec_wire::vici::{frame_len, Packet, LENGTH_LEN, MAX_FRAME};
    let roundtrip = |p: Packet| {
        if let Ok(frame) = p.emit() {
            assert_eq!(Packet::parse(&frame[LENGTH_LEN..]).as_ref(), Ok(&p));
        }
    };
    if let Ok(p) = Packet::parse(data) {
        roundtrip(p);
    }
    let mut rest = data;
    while let Some(len) = frame_len(rest) {
        let Ok(len) = len else { break };
        assert!(len <= MAX_FRAME);
        let Some(body) = rest.get(LENGTH_LEN..LENGTH_LEN + len) else {
            break;
        };
        if let Ok(p) = Packet::parse(body) {
            roundtrip(p);
        }
        rest = &rest[LENGTH_LEN + len..];
    }
}

/// Decapsulate `data`; if that worked, parse the inner packet and feed the
/// same bytes again (the replay path).
fn inbound(specs: &'static [SaSpec], data: &[u8]) {
    with_sad(specs, |sad| inbound_with(sad, data));
}

fn inbound_with(sad: &mut Sad, data: &[u8]) {
    let mut buf = PacketBuf::from_packet(data);
    let result = process::inbound_packet(sad, &mut buf, NOW);
    if let Ok(Inbound::Decapsulated(applied)) = result {
        let _ = black_box(process::check_inbound(sad, None, &applied));
        ip_parse(buf.as_slice());
        let mut again = PacketBuf::from_packet(data);
        let _ = black_box(process::inbound_packet(sad, &mut again, NOW));
    }
}

// ---------------------------------------------------------------------------
// SAs
// ---------------------------------------------------------------------------

/// One SA of a fixed SAD; the same spec builds the sender's SA for seeds.
#[derive(Debug, Clone, Copy)]
pub struct SaSpec {
    pub protocol: Protocol,
    /// SPI, or CPI for IPComp; also the reqid, so that seed bundles pick
    /// exactly this SA.
    pub spi: u32,
    pub mode: Mode,
    pub src: &'static str,
    pub dst: &'static str,
    pub encr: EncrId,
    pub encr_key_len: usize,
    pub integ: IntegId,
    pub integ_key_len: usize,
    /// UDP encapsulation on 4500/4500.
    pub encap: bool,
    pub esn: bool,
    pub replay_window: u32,
}

const V4_A: &str = "192.0.2.1";
const V4_B: &str = "192.0.2.2";
const V4_C: &str = "192.0.2.3";
const V4_D: &str = "192.0.2.4";
const V6_A: &str = "2001:db8::1";
const V6_B: &str = "2001:db8::2";

const fn esp(
    spi: u32,
    mode: Mode,
    (src, dst): (&'static str, &'static str),
    (encr, encr_key_len): (EncrId, usize),
    (integ, integ_key_len): (IntegId, usize),
) -> SaSpec {
    SaSpec {
        protocol: Protocol::Esp,
        spi,
        mode,
        src,
        dst,
        encr,
        encr_key_len,
        integ,
        integ_key_len,
        encap: false,
        esn: false,
        replay_window: 64,
    }
}

const fn ah(
    spi: u32,
    mode: Mode,
    ends: (&'static str, &'static str),
    integ: (IntegId, usize),
) -> SaSpec {
    let mut s = esp(spi, mode, ends, NULL, integ);
    s.protocol = Protocol::Ah;
    s
}

const fn ipcomp(cpi: u32, mode: Mode, ends: (&'static str, &'static str)) -> SaSpec {
    let mut s = esp(cpi, mode, ends, NULL, NO_INTEG);
    s.protocol = Protocol::IpComp;
    s
}

const fn encap(mut s: SaSpec) -> SaSpec {
    s.encap = true;
    s
}

const fn esn(mut s: SaSpec, replay_window: u32) -> SaSpec {
    s.esn = true;
    s.replay_window = replay_window;
    s
}

const fn window(mut s: SaSpec, replay_window: u32) -> SaSpec {
    s.replay_window = replay_window;
    s
}

const GCM: (EncrId, usize) = (EncrId::AES_GCM_16, 20);
const CBC: (EncrId, usize) = (EncrId::AES_CBC, 16);
const CHACHA: (EncrId, usize) = (EncrId::CHACHA20_POLY1305, 36);
const GMAC: (EncrId, usize) = (EncrId::NULL_AUTH_AES_GMAC, 20);
const NULL: (EncrId, usize) = (EncrId::NULL, 0);
const SHA1: (IntegId, usize) = (IntegId::HMAC_SHA1_96, 20);
const SHA256: (IntegId, usize) = (IntegId::HMAC_SHA2_256_128, 32);
const NO_INTEG: (IntegId, usize) = (IntegId::NONE, 0);
const V4: (&str, &str) = (V4_A, V4_B);
const V6: (&str, &str) = (V6_A, V6_B);
const TUN: Mode = Mode::Tunnel;
const TRA: Mode = Mode::Transport;

/// ESP: every cipher family, both modes and families, one UDP-encapsulated,
/// one without anti-replay, two with ESN.
pub const ESP_SAS: &[SaSpec] = &[
    esp(0x100, TUN, V4, GCM, NO_INTEG),
    esp(0x101, TRA, V6, GCM, NO_INTEG),
    esp(0x102, TUN, V6, CBC, SHA1),
    esp(0x103, TRA, V4, CBC, SHA1),
    esp(0x104, TUN, V4, CHACHA, NO_INTEG),
    window(esp(0x105, TRA, V4, NULL, SHA256), 0),
    esp(0x106, TUN, V6, NULL, SHA256),
    esp(0x107, TUN, V4, GMAC, NO_INTEG),
    encap(esp(0x108, TUN, V4, GCM, NO_INTEG)),
    esn(esp(0x109, TUN, V4, CBC, SHA1), 128),
    esn(esp(0x10a, TRA, V6, NULL, SHA256), 64),
];

/// AH: HMAC-SHA1-96 and HMAC-SHA2-256-128 in both modes and families, one
/// with ESN, and ESP+AH transport bundles.
pub const AH_SAS: &[SaSpec] = &[
    ah(0x200, TRA, V4, SHA1),
    ah(0x201, TRA, V6, SHA256),
    ah(0x202, TUN, V4, SHA256),
    ah(0x203, TUN, V6, SHA1),
    esn(ah(0x204, TRA, (V4_A, V4_C), SHA256), 64),
    esp(0x205, TRA, V4, CBC, SHA1),
    esp(0x206, TRA, V6, GCM, NO_INTEG),
];

/// IPComp alone (tunnel v4, transport v6), under ESP and AH in tunnel
/// mode, and under ESP in transport mode.
pub const IPCOMP_SAS: &[SaSpec] = &[
    ipcomp(0x300, TUN, V4),
    ipcomp(0x301, TRA, V6),
    ipcomp(0x302, TUN, (V4_A, V4_C)),
    esp(0x303, TUN, (V4_A, V4_C), GCM, NO_INTEG),
    ah(0x304, TUN, (V4_A, V4_C), SHA256),
    ipcomp(0x305, TRA, (V4_A, V4_D)),
    esp(0x306, TRA, (V4_A, V4_D), CBC, SHA1),
];

/// UDP-encapsulated ESP (RFC 3948) over IPv4 and IPv6.
pub const UDP_ENCAP_SAS: &[SaSpec] = &[
    encap(esp(0x400, TUN, V4, GCM, NO_INTEG)),
    encap(esp(0x401, TRA, V6, CBC, SHA1)),
    encap(esp(0x402, TUN, V6, CHACHA, NO_INTEG)),
    esn(encap(esp(0x403, TRA, V4, NULL, SHA256)), 64),
];

/// ESP with the suites whose block length is 4 (any plaintext that is a
/// multiple of 4 seals): tunnel and transport, v4 and v6, UDP-encapsulated
/// tunnel v4 and transport v6, two with ESN; and IPComp SAs that an IPComp
/// header inside ESP names (tunnel to 192.0.2.3, transport to both B's).
pub const DECRYPTED_SAS: &[SaSpec] = &[
    esp(0x500, TUN, V4, GCM, NO_INTEG),
    esp(0x501, TUN, V6, NULL, SHA256),
    esp(0x502, TRA, V4, NULL, SHA256),
    esp(0x503, TRA, V6, GCM, NO_INTEG),
    encap(esp(0x504, TUN, V4, GCM, NO_INTEG)),
    encap(esp(0x505, TRA, V6, NULL, SHA256)),
    ipcomp(0x506, TUN, (V4_A, V4_C)),
    esp(0x507, TUN, (V4_A, V4_C), NULL, SHA256),
    ipcomp(0x508, TRA, V6),
    ipcomp(0x50a, TRA, V4),
    esn(esp(0x50b, TUN, V4, NULL, SHA256), 64),
    esn(esp(0x50c, TRA, V6, GCM, NO_INTEG), 64),
];

/// How [`esp_decrypted`] wraps its plaintext.
#[derive(Debug, Clone, Copy)]
pub struct DecryptedCase {
    /// The ESP SA (in [`DECRYPTED_SAS`]) that seals it.
    pub spi: u32,
    /// IPv4 options / IPv6 Hop-by-Hop, Routing and Destination Options
    /// headers in the outer header, in front of ESP (or UDP).
    pub extensions: bool,
    /// The full sequence number (ESN SAs' windows stand at [`ESN_START`]).
    pub seq: u64,
    /// The inbound policy's bundle (reqids = SPIs, innermost first); IPComp
    /// steps are `use`, as IPComp may be left out of small packets.
    pub bundle: &'static [u32],
}

const fn case(spi: u32, extensions: bool, seq: u64, bundle: &'static [u32]) -> DecryptedCase {
    DecryptedCase {
        spi,
        extensions,
        seq,
        bundle,
    }
}

/// Indexed by the first input byte (modulo the length).
pub const DECRYPTED_CASES: &[DecryptedCase] = &[
    case(0x500, false, 1, &[0x500]),
    case(0x501, false, 1, &[0x501]),
    case(0x502, false, 1, &[0x502]),
    case(0x502, true, 7, &[0x502]),
    case(0x503, false, 1, &[0x503]),
    case(0x503, true, 9, &[0x503]),
    case(0x504, false, 1, &[0x504]),
    case(0x505, true, 1, &[0x505]),
    case(0x507, false, 1, &[0x506, 0x507]),
    case(0x502, true, 2, &[0x50a, 0x502]),
    case(0x503, true, 2, &[0x508, 0x503]),
    case(0x50b, false, ESN_START + 1, &[0x50b]),
    case(0x50b, true, ESN_START + 4, &[0x50b]),
    case(0x50c, true, ESN_START + 3, &[0x508, 0x50c]),
];

impl DecryptedCase {
    /// The inbound policy the decapsulated packet is checked against.
    pub fn policy(&self) -> Policy {
        let templates = self
            .bundle
            .iter()
            .map(|&spi| {
                let s = spec(DECRYPTED_SAS, spi);
                SaTemplate {
                    protocol: s.protocol,
                    mode: s.mode,
                    tunnel: (s.mode == Mode::Tunnel).then(|| (addr(s.src), addr(s.dst))),
                    level: match s.protocol {
                        Protocol::IpComp => Level::Use,
                        _ => Level::Require,
                    },
                    reqid: s.spi,
                }
            })
            .collect();
        let any = |a: &str| IpPrefix::new(addr(a), 0).expect("/0 prefix");
        let family = spec(DECRYPTED_SAS, self.spi).src;
        Policy {
            direction: Direction::In,
            selector: Selector::between(any(family), any(family)),
            action: Action::Protect(templates),
            priority: 0,
        }
    }
}

/// The spec with SPI (CPI) `spi`.
pub fn spec(specs: &'static [SaSpec], spi: u32) -> &'static SaSpec {
    specs
        .iter()
        .find(|s| s.spi == spi)
        .expect("SPI of a fixed case")
}

/// Key bytes derived from the SPI, so that every SA has its own.
fn key(len: usize, spi: u32, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(spi as u8 ^ seed))
        .collect()
}

/// The spec's keys: its SA and [`esp_transform`] take them from here.
fn encr_key(s: &SaSpec) -> Vec<u8> {
    key(s.encr_key_len, s.spi, 1)
}

fn integ_key(s: &SaSpec) -> Vec<u8> {
    key(s.integ_key_len, s.spi, 2)
}

/// A sender's ESP transform with the keys of the spec's SA.
pub fn esp_transform(s: &SaSpec) -> Box<dyn EspTransform> {
    let provider = Provider::fastest();
    // The specs are fixed and valid; a failure is a bug in this file.
    provider
        .esp(s.encr, &encr_key(s), s.integ, &integ_key(s))
        .expect("valid ESP spec")
}

fn addr(s: &str) -> IpAddr {
    // The specs above are literals.
    s.parse().expect("address literal")
}

/// The SA configuration a spec stands for.
pub fn config(s: &SaSpec) -> SaConfig {
    let mut c = SaConfig::esp(s.spi, s.mode, addr(s.src), addr(s.dst))
        .with_encr(s.encr, &encr_key(s))
        .with_integ(s.integ, &integ_key(s));
    c.protocol = s.protocol;
    c.reqid = s.spi;
    c.esn = s.esn;
    c.replay_window = s.replay_window;
    if s.encap {
        c.encap = Some(EncapPorts::udp(
            udp_encap::NAT_T_PORT,
            udp_encap::NAT_T_PORT,
        ));
    }
    c
}

/// A receiver's SAD with one SA per spec; ESN windows start at
/// [`ESN_START`].
pub fn sad(specs: &[SaSpec]) -> Sad {
    let provider = Provider::fastest();
    let mut sad = Sad::new();
    for s in specs {
        // The specs are fixed and valid; a failure is a bug in this file.
        let sa = SecurityAssociation::new(&config(s), &provider, NOW).expect("valid SA spec");
        sad.add(sa).expect("distinct SA ids");
    }
    reset_replay(&mut sad, specs);
    sad
}

/// Give every SA of `sad` (built from `specs`) a fresh receive window.
fn reset_replay(sad: &mut Sad, specs: &[SaSpec]) {
    for s in specs {
        let id = SaId {
            protocol: s.protocol,
            spi: s.spi,
            dst: addr(s.dst),
        };
        let sa = sad.lookup(&id).and_then(|h| sad.get_mut(h));
        let window = sa.expect("SA of the spec").replay_window_mut();
        *window = ReplayWindow::new(s.replay_window, s.esn).expect("valid window size");
        if s.esn {
            window
                .commit(ESN_START)
                .expect("a fresh window takes its first number");
        }
    }
}

/// Run `f` on this thread's SAD for `specs`, its replay windows reset.
///
/// Building the SAs (key schedules, DEFLATE state) costs more than most
/// packets; reusing them is the same as rebuilding because nothing else in
/// an SA decides a packet's fate: lifetimes are unlimited, sequence
/// counters are outbound only and the DEFLATE state is reset per packet.
fn with_sad(specs: &'static [SaSpec], f: impl FnOnce(&mut Sad)) {
    thread_local! {
        static CACHE: RefCell<Vec<(usize, Sad)>> = const { RefCell::new(Vec::new()) };
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        let key = specs.as_ptr() as usize;
        let i = match cache.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                cache.push((key, sad(specs)));
                cache.len() - 1
            }
        };
        let sad = &mut cache[i].1;
        reset_replay(sad, specs);
        f(sad);
    });
}

// ---------------------------------------------------------------------------
// esp_decrypted: sealing the fuzzer's plaintext
// ---------------------------------------------------------------------------

/// IPv4 options in front of ESP: Router Alert, Record Route, NOPs.
const OUTER_V4_OPTIONS: [u8; 12] = [148, 4, 0, 0, 7, 7, 4, 10, 0, 0, 1, 1];

/// The case [`esp_decrypted`] picks for `data`, and the outer packet it
/// seals `data`'s plaintext into: outer IP header (with options or
/// extension headers), UDP header for an encapsulated SA, ESP header with
/// the case's SPI and sequence number, IV, plaintext, ICV. `None` for an
/// empty input.
pub fn esp_decrypted_packet(data: &[u8]) -> Option<(&'static DecryptedCase, Vec<u8>)> {
    let (&selector, plaintext) = data.split_first()?;
    let case = &DECRYPTED_CASES[usize::from(selector) % DECRYPTED_CASES.len()];
    let s = spec(DECRYPTED_SAS, case.spi);
    let packet = with_esp_transform(s, |xf| {
        let (iv_len, icv_len) = (xf.iv_len(), xf.icv_len());
        // The largest plaintext that still fits an IP packet, cut to whole
        // cipher blocks.
        let room = usize::from(u16::MAX) - 40 - 24 - 8 - 8 - iv_len - icv_len;
        let len = plaintext.len().min(room);
        let len = len - len % xf.block_len();
        let mut esp = Vec::with_capacity(8 + iv_len + len + icv_len);
        esp.extend_from_slice(&case.spi.to_be_bytes());
        esp.extend_from_slice(&(case.seq as u32).to_be_bytes());
        esp.resize(8 + iv_len, 0);
        esp.extend_from_slice(&plaintext[..len]);
        esp.resize(esp.len() + icv_len, 0);
        // The lengths come from the transform itself.
        xf.seal(case.seq, s.esn, &mut esp).expect("whole blocks");
        esp
    });
    Some((case, outer_packet(s, case.extensions, &packet)))
}

/// Run `f` on this thread's sender transform for `s` (an ESP spec of
/// [`DECRYPTED_SAS`]), built once: key schedules cost more than a packet.
fn with_esp_transform<R>(s: &'static SaSpec, f: impl FnOnce(&dyn EspTransform) -> R) -> R {
    thread_local! {
        static CACHE: RefCell<Vec<(u32, Box<dyn EspTransform>)>> =
            const { RefCell::new(Vec::new()) };
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        let i = match cache.iter().position(|(spi, _)| *spi == s.spi) {
            Some(i) => i,
            None => {
                cache.push((s.spi, esp_transform(s)));
                cache.len() - 1
            }
        };
        f(cache[i].1.as_ref())
    })
}

/// `esp` behind the spec's outer header (and a UDP header if it is
/// encapsulated); with `extensions`, IPv4 options or IPv6 Hop-by-Hop,
/// Routing and Destination Options headers come first.
fn outer_packet(s: &SaSpec, extensions: bool, esp: &[u8]) -> Vec<u8> {
    let (src, dst) = (addr(s.src), addr(s.dst));
    let mut l4 = Vec::with_capacity(8 + esp.len());
    let protocol = if s.encap {
        let udp_len = (8 + esp.len()) as u16;
        let port = udp_encap::NAT_T_PORT.to_be_bytes();
        l4.extend_from_slice(&port);
        l4.extend_from_slice(&port);
        l4.extend_from_slice(&udp_len.to_be_bytes());
        l4.extend_from_slice(&[0, 0]);
        l4.extend_from_slice(esp);
        if src.is_ipv6() {
            // RFC 3948 §2.1: zero over IPv4; IPv6 needs one.
            UdpPacket::new_unchecked(&mut l4[..]).fill_checksum(&src, &dst);
        }
        IpProtocol::UDP
    } else {
        l4.extend_from_slice(esp);
        IpProtocol::ESP
    };
    match (src, dst) {
        (IpAddr::V4(src_addr), IpAddr::V4(dst_addr)) => {
            let options: &[u8] = if extensions { &OUTER_V4_OPTIONS } else { &[] };
            let repr = Ipv4Repr {
                src_addr,
                dst_addr,
                next_header: protocol,
                payload_len: l4.len(),
                hop_limit: 64,
                dscp_ecn: 0,
                dont_frag: false,
            };
            let mut p = vec![0; repr.buffer_len()];
            repr.emit(&mut Ipv4Packet::new_unchecked(&mut p[..]));
            p.extend_from_slice(options);
            p.extend_from_slice(&l4);
            let mut v = Ipv4Packet::new_unchecked(&mut p[..]);
            v.set_header_len(20 + options.len());
            v.set_total_len((20 + options.len() + l4.len()) as u16);
            v.fill_checksum();
            p
        }
        (IpAddr::V6(src_addr), IpAddr::V6(dst_addr)) => {
            let mut ext = Vec::with_capacity(24 + l4.len());
            let next_header = if extensions {
                // Hop-by-Hop (PadN), Routing (type 4, no segments left),
                // Destination Options (PadN): all in front of ESP.
                ext.extend_from_slice(&[43, 0, 1, 4, 0, 0, 0, 0]);
                ext.extend_from_slice(&[60, 0, 4, 0, 0, 0, 0, 0]);
                ext.extend_from_slice(&[protocol.0, 0, 1, 4, 0, 0, 0, 0]);
                IpProtocol::HOPOPT
            } else {
                protocol
            };
            ext.extend_from_slice(&l4);
            let repr = Ipv6Repr {
                src_addr,
                dst_addr,
                next_header,
                payload_len: ext.len(),
                hop_limit: 64,
                traffic_class: 0,
                flow_label: 0,
            };
            let mut p = vec![0; repr.buffer_len()];
            repr.emit(&mut Ipv6Packet::new_unchecked(&mut p[..]));
            p.extend_from_slice(&ext);
            p
        }
        _ => unreachable!("the specs do not mix families"),
    }
}

// ---------------------------------------------------------------------------
// ip_parse helpers
// ---------------------------------------------------------------------------

fn ipv4(b: &[u8]) {
    let Ok(p) = Ipv4Packet::new_checked(b) else {
        return;
    };
    black_box((p.version(), p.header_len(), p.dscp_ecn(), p.tos()));
    black_box((p.total_len(), p.ident(), p.dont_frag(), p.more_frags()));
    black_box((p.frag_offset(), p.is_fragment(), p.ttl(), p.hop_limit()));
    black_box((p.next_header(), p.checksum(), p.verify_checksum()));
    black_box((p.options(), p.payload()));
    if let Ok(repr) = Ipv4Repr::parse(&p) {
        let mut hdr = vec![0; repr.buffer_len()];
        repr.emit(&mut Ipv4Packet::new_unchecked(&mut hdr[..]));
    }
    let (src, dst) = (IpAddr::from(p.src_addr()), IpAddr::from(p.dst_addr()));
    transport(p.payload(), &src, &dst, false);

    let mut copy = b.to_vec();
    let mut m = Ipv4Packet::new_unchecked(&mut copy[..]);
    m.fill_checksum();
    m.options_mut().fill(1);
    m.payload_mut().fill(2);
    m.set_frag_offset(p.frag_offset());
    m.set_more_frags(true);
    m.set_hop_limit(0);
}

fn ipv6(b: &[u8]) {
    if let Ok(p) = Ipv6Packet::new_checked(b) {
        black_box((p.version(), p.traffic_class(), p.flow_label()));
        black_box((p.payload_len(), p.next_header(), p.hop_limit()));
        black_box((p.payload(), p.packet()));
        if let Ok(repr) = Ipv6Repr::parse(&p) {
            let mut hdr = vec![0; repr.buffer_len()];
            repr.emit(&mut Ipv6Packet::new_unchecked(&mut hdr[..]));
        }
        let mut copy = b.to_vec();
        let mut m = Ipv6Packet::new_unchecked(&mut copy[..]);
        m.payload_mut().fill(1);
        m.set_flow_label(p.flow_label());
    }
    let Ok(chain) = ipv6_header_chain(b) else {
        return;
    };
    black_box((chain.upper_protocol(), chain.ipsec_next_header()));
    black_box((chain.has_fragment(), chain.packet_len()));
    // Index with the chain's offsets as `process::inbound` does: an offset
    // outside the packet is a bug in the chain walk.
    black_box(b[chain.ipsec_next_header_field()]);
    black_box(b[chain.upper_next_header_field()]);
    black_box(&b[chain.ipsec_insert_offset()..chain.packet_len()]);
    for h in chain.headers() {
        extension(h.protocol, &b[h.offset..h.offset + h.len]);
    }
    let p = Ipv6Packet::new_unchecked(b);
    let (src, dst) = (IpAddr::from(p.src_addr()), IpAddr::from(p.dst_addr()));
    transport(
        &b[chain.upper_offset()..chain.packet_len()],
        &src,
        &dst,
        true,
    );
}

fn extension(protocol: IpProtocol, h: &[u8]) {
    match protocol {
        IpProtocol::IPV6_FRAG => {
            if let Ok(f) = Ipv6FragmentHeader::new_checked(h) {
                black_box((f.next_header(), f.reserved(), f.frag_offset()));
                black_box((f.more_frags(), f.ident()));
                if let Ok(repr) = Ipv6FragmentRepr::parse(&f) {
                    let mut out = vec![0; repr.buffer_len()];
                    repr.emit(&mut Ipv6FragmentHeader::new_unchecked(&mut out[..]));
                }
            }
        }
        IpProtocol::IPV6_ROUTE => {
            if let Ok(r) = Ipv6RoutingHeader::new_checked(h) {
                black_box((r.next_header(), r.header_len(), r.byte_len()));
                black_box((r.routing_type(), r.segments_left(), r.data()));
            }
        }
        _ => {
            if let Ok(o) = Ipv6OptionsHeader::new_checked(h) {
                black_box((o.next_header(), o.header_len(), o.byte_len()));
                for option in o.options() {
                    black_box(option);
                }
                let mut copy = h.to_vec();
                if let Ok(mut m) = Ipv6OptionsHeader::new_checked(&mut copy[..]) {
                    m.zero_mutable_options();
                }
            }
        }
    }
}

/// Every upper-layer format on the bytes after the IP header (whatever the
/// Next Header says: a wrong guess must not panic either).
fn transport(b: &[u8], src: &IpAddr, dst: &IpAddr, ipv6: bool) {
    if let Ok(u) = UdpPacket::new_checked(b) {
        black_box((u.src_port(), u.dst_port(), u.len(), u.is_empty()));
        black_box((u.checksum(), u.verify_checksum(src, dst)));
        if let Ok(repr) = UdpRepr::parse(&u, src, dst) {
            let mut hdr = vec![0; repr.buffer_len()];
            repr.emit(&mut UdpPacket::new_unchecked(&mut hdr[..]));
        }
        classify(u.payload());
        let mut copy = b.to_vec();
        if let Ok(mut m) = UdpPacket::new_checked(&mut copy[..]) {
            m.fill_checksum(src, dst);
            m.payload_mut().fill(0);
        }
    }
    if let Ok(e) = EspPacket::new_checked(b) {
        black_box((e.spi(), e.seq_number(), e.payload()));
        if let Ok(repr) = EspRepr::parse(&e) {
            let mut hdr = vec![0; repr.buffer_len()];
            repr.emit(&mut EspPacket::new_unchecked(&mut hdr[..]));
        }
    }
    if let Ok((_, t)) = EspTrailer::parse(b) {
        let mut out = vec![0; t.buffer_len()];
        t.emit(&mut out);
    }
    if let Ok(a) = AhPacket::new_checked(b) {
        black_box((a.next_header(), a.payload_len(), a.header_len()));
        black_box((a.icv_len(), a.reserved(), a.spi(), a.seq_number()));
        black_box((a.icv(), a.payload()));
        if let Ok(repr) = AhRepr::parse(&a, ipv6) {
            let mut hdr = vec![0; repr.buffer_len(ipv6)];
            repr.emit(&mut AhPacket::new_unchecked(&mut hdr[..]), ipv6);
        }
        let mut copy = b.to_vec();
        if let Ok(mut m) = AhPacket::new_checked(&mut copy[..]) {
            m.icv_mut().fill(0);
            m.payload_mut().fill(0);
        }
    }
    if let Ok(c) = IpCompPacket::new_checked(b) {
        black_box((c.next_header(), c.flags(), c.cpi()));
        black_box((c.transform(), c.payload()));
        if let Ok(repr) = IpCompRepr::parse(&c) {
            let mut hdr = vec![0; repr.buffer_len()];
            repr.emit(&mut IpCompPacket::new_unchecked(&mut hdr[..]));
        }
    }
    classify(b);
}

fn classify(payload: &[u8]) {
    if let Ok(UdpEncap::Esp(esp) | UdpEncap::Ike(esp)) = udp_encap::classify(payload) {
        let _ = black_box(EspPacket::new_checked(esp).map(|e| e.spi()));
    }
}
