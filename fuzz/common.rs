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

use flowsec_crypto::{EncrId, IntegId, Provider};
use flowsec_ipsec::process::{self, Inbound};
use flowsec_ipsec::{
    Mode, PacketBuf, Protocol, ReplayWindow, SaConfig, SaId, Sad, SecurityAssociation,
    UdpEncap as EncapPorts,
};
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

/// `process::inbound` on an IP packet, with [`ESP_SAS`].
pub fn esp_inbound(data: &[u8]) {
    inbound(ESP_SAS, data);
}

/// `process::inbound` on an IP packet, with [`AH_SAS`].
pub fn ah_inbound(data: &[u8]) {
    inbound(AH_SAS, data);
}

/// `process::inbound` on an IP packet, with [`IPCOMP_SAS`].
pub fn ipcomp_inbound(data: &[u8]) {
    inbound(IPCOMP_SAS, data);
}

/// `process::inbound` on an IP packet, with [`UDP_ENCAP_SAS`] (everything
/// UDP is taken as arriving on port 4500).
pub fn udp_encap_inbound(data: &[u8]) {
    inbound(UDP_ENCAP_SAS, data);
}

/// Decapsulate `data`; if that worked, parse the inner packet and feed the
/// same bytes again (the replay path).
fn inbound(specs: &'static [SaSpec], data: &[u8]) {
    with_sad(specs, |sad| inbound_with(sad, data));
}

fn inbound_with(sad: &mut Sad, data: &[u8]) {
    let mut buf = PacketBuf::from_packet(data);
    let result = process::inbound(sad, &mut buf, NOW);
    if let Ok(Inbound::Decapsulated(applied)) = result {
        let _ = black_box(process::check_inbound(sad, None, &applied));
        ip_parse(buf.as_slice());
        let mut again = PacketBuf::from_packet(data);
        let _ = black_box(process::inbound(sad, &mut again, NOW));
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

/// Key bytes derived from the SPI, so that every SA has its own.
fn key(len: usize, spi: u32, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(spi as u8 ^ seed))
        .collect()
}

fn addr(s: &str) -> IpAddr {
    // The specs above are literals.
    s.parse().expect("address literal")
}

/// The SA configuration a spec stands for.
pub fn config(s: &SaSpec) -> SaConfig {
    let mut c = SaConfig::esp(s.spi, s.mode, addr(s.src), addr(s.dst))
        .with_encr(s.encr, &key(s.encr_key_len, s.spi, 1))
        .with_integ(s.integ, &key(s.integ_key_len, s.spi, 2));
    c.protocol = s.protocol;
    c.reqid = s.spi;
    c.esn = s.esn;
    c.replay_window = s.replay_window;
    if s.encap {
        c.encap = Some(EncapPorts {
            src_port: udp_encap::NAT_T_PORT,
            dst_port: udp_encap::NAT_T_PORT,
        });
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
            window.commit(ESN_START);
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
