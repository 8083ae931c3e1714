//! The fuzz targets (fuzz/common.rs) on stable Rust: every file of the
//! committed corpus goes through the same function libFuzzer calls, so a
//! crash once found and committed stays a regression test without nightly.
//!
//! The seed packets under fuzz/seeds/ are written by the ignored test
//! `generate_fuzz_seeds` (see fuzz/README.md): valid packets sealed by
//! `process::outbound` for every SA of the targets' SADs, which the fuzzer
//! then mutates past the ICV check's front door.

use std::fs;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use flowsec_crypto::Provider;
use flowsec_ipsec::process::{self, Inbound};
use flowsec_ipsec::spd::{Level, SaTemplate};
use flowsec_ipsec::{DropReason, Flow, Mode, PacketBuf, Sad, SecurityAssociation};
use flowsec_wire::udp_encap::{NAT_KEEPALIVE, NAT_T_PORT, NON_ESP_MARKER};
use flowsec_wire::{IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr, UdpPacket, UdpRepr};

#[path = "../../../fuzz/common.rs"]
mod common;

use common::{
    SaSpec, AH_SAS, DECRYPTED_CASES, DECRYPTED_SAS, ESN_START, ESP_SAS, IPCOMP_SAS, NOW,
    UDP_ENCAP_SAS,
};

type Target = fn(&[u8]);

const TARGETS: &[(&str, Target)] = &[
    ("ip_parse", common::ip_parse),
    ("esp_inbound", common::esp_inbound),
    ("ah_inbound", common::ah_inbound),
    ("ipcomp_inbound", common::ipcomp_inbound),
    ("udp_encap_inbound", common::udp_encap_inbound),
    ("esp_decrypted", common::esp_decrypted),
    ("ike_message", common::ike_message),
    ("vici_packet", common::vici_packet),
];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files directly under `dir` (none if it does not exist), skipping
/// libFuzzer's hidden temporaries.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    out.sort();
    out
}

#[test]
fn replay_fuzz_corpus() {
    for (name, target) in TARGETS {
        let mut n = 0;
        for kind in ["corpus", "seeds", "artifacts"] {
            for path in files(&fuzz_dir().join(kind).join(name)) {
                let data = fs::read(&path).unwrap();
                eprintln!("{}", path.display());
                target(&data);
                n += 1;
            }
        }
        assert!(n > 0, "no corpus for {name}: run generate_fuzz_seeds");
    }
}

/// The `valid-*` seeds decapsulate with the targets' SADs (a change to the
/// SA specs or to sealing would otherwise quietly leave the fuzzer in
/// front of the ICV check).
#[test]
fn valid_seeds_decapsulate() {
    for (name, specs) in [
        ("esp_inbound", ESP_SAS),
        ("ah_inbound", AH_SAS),
        ("ipcomp_inbound", IPCOMP_SAS),
        ("udp_encap_inbound", UDP_ENCAP_SAS),
    ] {
        let mut n = 0;
        for path in files(&fuzz_dir().join("seeds").join(name)) {
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            if !file.starts_with("valid-") {
                continue;
            }
            let mut sad = common::sad(specs);
            let mut buf = PacketBuf::from_packet(&fs::read(&path).unwrap());
            let r = process::inbound_packet(&mut sad, &mut buf, NOW);
            assert!(
                matches!(r, Ok(Inbound::Decapsulated(_))),
                "{name}/{file}: {r:?}"
            );
            n += 1;
        }
        assert!(n > 0, "no valid seeds for {name}");
    }
}

/// The `valid-*` seeds of esp_decrypted, sealed as the target seals them,
/// decapsulate and satisfy their case's policy; the others are refused for
/// the reason their name gives.
#[test]
fn esp_decrypted_seeds_open() {
    let mut n = 0;
    for path in files(&fuzz_dir().join("seeds/esp_decrypted")) {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let (case, packet) = common::esp_decrypted_packet(&fs::read(&path).unwrap()).unwrap();
        let mut sad = common::sad(DECRYPTED_SAS);
        let mut buf = PacketBuf::from_packet(&packet);
        let r = process::inbound_packet(&mut sad, &mut buf, NOW);
        let want = match file.split('-').next().unwrap() {
            "valid" => {
                let Ok(Inbound::Decapsulated(applied)) = r else {
                    panic!("esp_decrypted/{file}: {r:?}");
                };
                let policy = case.policy();
                assert_eq!(
                    process::check_inbound(&sad, Some(&policy), &applied),
                    Ok(()),
                    "esp_decrypted/{file}: policy"
                );
                assert_eq!(applied.len(), case.bundle.len(), "esp_decrypted/{file}");
                n += 1;
                continue;
            }
            "dummy" => DropReason::DummyPacket,
            "badpad" => DropReason::BadPadding,
            other => panic!("esp_decrypted/{file}: unknown seed kind {other}"),
        };
        assert_eq!(r, Err(want), "esp_decrypted/{file}");
    }
    assert!(n > 0, "no valid seeds for esp_decrypted");
}

/// Writes fuzz/seeds/<target>/: `cargo test -p flowsec-ipsec --test
/// fuzz_corpus -- --ignored generate_fuzz_seeds`. IVs are random, so the
/// bytes differ from run to run; the packets are equally valid.
#[test]
#[ignore = "writes fuzz/seeds; run by hand"]
fn generate_fuzz_seeds() {
    let mut all = Vec::new();
    for (target, seeds) in [
        ("esp_inbound", esp_seeds()),
        ("ah_inbound", ah_seeds()),
        ("ipcomp_inbound", ipcomp_seeds()),
        ("udp_encap_inbound", udp_encap_seeds()),
        ("ip_parse", plain_seeds()),
    ] {
        write_seeds(target, &seeds);
        all.extend(seeds.into_iter().map(|(n, b)| (format!("{target}-{n}"), b)));
    }
    // Plaintexts, not packets: ip_parse does not get these.
    write_seeds("esp_decrypted", &esp_decrypted_seeds());
    // ip_parse also gets every sealed packet: its parsers see them first.
    let dir = fuzz_dir().join("seeds").join("ip_parse");
    for (name, bytes) in all {
        if name.starts_with("ip_parse-") {
            continue;
        }
        fs::write(dir.join(name), bytes).unwrap();
    }
}

/// Writes only fuzz/seeds/esp_decrypted/ (deterministic: no IVs in them):
/// `cargo test -p flowsec-ipsec --test fuzz_corpus -- --ignored
/// generate_esp_decrypted_seeds`.
#[test]
#[ignore = "writes fuzz/seeds; run by hand"]
fn generate_esp_decrypted_seeds() {
    write_seeds("esp_decrypted", &esp_decrypted_seeds());
}

fn write_seeds(target: &str, seeds: &Seeds) {
    let dir = fuzz_dir().join("seeds").join(target);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in seeds {
        fs::write(dir.join(name), bytes).unwrap();
    }
}

// ---------------------------------------------------------------------------
// Seeds
// ---------------------------------------------------------------------------

type Seeds = Vec<(String, Vec<u8>)>;

const INNER4: (&str, &str) = ("10.1.0.1", "10.2.0.1");
const INNER6: (&str, &str) = ("fd01::1", "fd02::1");

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn text(len: usize) -> Vec<u8> {
    b"compress me, a payload that deflates well. "
        .iter()
        .copied()
        .cycle()
        .take(len)
        .collect()
}

/// An IPv4 or IPv6 packet (by the addresses) from `src` to `dst` carrying a
/// UDP datagram `sport → dport` with `payload`, checksums filled.
fn udp(src: &str, dst: &str, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let (s, d) = (ip(src), ip(dst));
    let repr = UdpRepr {
        src_port: sport,
        dst_port: dport,
        payload_len: payload.len(),
    };
    let mut dgram = vec![0; 8 + payload.len()];
    dgram[8..].copy_from_slice(payload);
    let mut u = UdpPacket::new_unchecked(&mut dgram[..]);
    repr.emit(&mut u);
    u.fill_checksum(&s, &d);
    ip_packet(s, d, IpProtocol::UDP, &dgram)
}

fn ip_packet(s: IpAddr, d: IpAddr, next_header: IpProtocol, payload: &[u8]) -> Vec<u8> {
    let mut out = match (s, d) {
        (IpAddr::V4(src_addr), IpAddr::V4(dst_addr)) => {
            let repr = Ipv4Repr {
                src_addr,
                dst_addr,
                next_header,
                payload_len: payload.len(),
                hop_limit: 64,
                dscp_ecn: 0,
                dont_frag: true,
            };
            let mut h = vec![0; repr.buffer_len()];
            repr.emit(&mut Ipv4Packet::new_unchecked(&mut h[..]));
            h
        }
        (IpAddr::V6(src_addr), IpAddr::V6(dst_addr)) => {
            let repr = Ipv6Repr {
                src_addr,
                dst_addr,
                next_header,
                payload_len: payload.len(),
                hop_limit: 64,
                traffic_class: 0,
                flow_label: 0x12345,
            };
            let mut h = vec![0; repr.buffer_len()];
            repr.emit(&mut Ipv6Packet::new_unchecked(&mut h[..]));
            h
        }
        _ => panic!("mixed families"),
    };
    out.extend_from_slice(payload);
    out
}

/// IPv4 with options: Router Alert (immutable for AH), Record Route
/// (mutable: zeroed in the ICV), NOP.
fn udp4_with_options(src: &str, dst: &str, payload: &[u8]) -> Vec<u8> {
    let plain = udp(src, dst, 1234, 5678, payload);
    let options = [148, 4, 0, 0, 7, 7, 4, 10, 0, 0, 1, 1];
    let mut p = plain[..20].to_vec();
    p.extend_from_slice(&options);
    p.extend_from_slice(&plain[20..]);
    let mut v = Ipv4Packet::new_unchecked(&mut p[..]);
    v.set_header_len(20 + options.len());
    v.set_total_len((plain.len() + options.len()) as u16);
    v.fill_checksum();
    p
}

/// IPv6 with Hop-by-Hop (one option that may change en route), a Routing
/// header with no segments left, and Destination Options, then UDP.
fn udp6_with_extensions(src: &str, dst: &str, payload: &[u8]) -> Vec<u8> {
    let plain = udp(src, dst, 1234, 5678, payload);
    let hop_by_hop = [43, 0, 0x3e, 4, 1, 2, 3, 4];
    let routing = [60, 0, 4, 0, 0, 0, 0, 0];
    let dest_opts = [17, 0, 1, 4, 0, 0, 0, 0];
    let mut ext = Vec::new();
    ext.extend_from_slice(&hop_by_hop);
    ext.extend_from_slice(&routing);
    ext.extend_from_slice(&dest_opts);
    ext.extend_from_slice(&plain[40..]);
    ip_packet(ip(src), ip(dst), IpProtocol::HOPOPT, &ext)
}

/// IPv6 whose only extension header is a (first) Fragment header.
fn udp6_fragment(src: &str, dst: &str) -> Vec<u8> {
    let plain = udp(src, dst, 1234, 5678, b"first fragment");
    let mut ext = vec![17, 0, 0, 1, 0xde, 0xad, 0xbe, 0xef];
    ext.extend_from_slice(&plain[40..]);
    ip_packet(ip(src), ip(dst), IpProtocol::IPV6_FRAG, &ext)
}

/// `count` packets of `inner` sealed by the bundle `spis` (innermost
/// first), with a sender SAD built from the same specs.
fn seal(specs: &[SaSpec], spis: &[u32], inner: &[u8], count: usize) -> Vec<Vec<u8>> {
    let provider = Provider::fastest();
    let mut sad = Sad::new();
    let mut templates = Vec::new();
    for &spi in spis {
        let s = specs.iter().find(|s| s.spi == spi).unwrap();
        let mut sa = SecurityAssociation::new(&common::config(s), &provider, NOW).unwrap();
        if s.esn {
            sa.skip_seq_to(ESN_START).unwrap();
        }
        sad.add(sa).unwrap();
        templates.push(SaTemplate {
            protocol: s.protocol,
            mode: s.mode,
            tunnel: (s.mode == Mode::Tunnel).then(|| (ip(s.src), ip(s.dst))),
            level: Level::Require,
            reqid: s.spi,
        });
    }
    let (src, dst) = match inner[0] >> 4 {
        4 => {
            let p = Ipv4Packet::new_checked(inner).unwrap();
            (p.src_addr().into(), p.dst_addr().into())
        }
        _ => {
            let p = Ipv6Packet::new_checked(inner).unwrap();
            (p.src_addr().into(), p.dst_addr().into())
        }
    };
    let flow = Flow {
        src,
        dst,
        protocol: 17,
        src_port: 1234,
        dst_port: 5678,
        fragment: false,
    };
    let bundle = process::resolve(&sad, &templates, &flow, NOW).unwrap();
    (0..count)
        .map(|_| {
            let mut buf = PacketBuf::from_packet(inner);
            let egress = process::outbound(&mut sad, &bundle, &mut buf, NOW).unwrap();
            egress.to_packet(buf.as_slice()).unwrap()
        })
        .collect()
}

/// Inner packets an SA can carry: for tunnel mode both families inside,
/// for transport mode the SA's own addresses.
fn inners(s: &SaSpec) -> Vec<(&'static str, Vec<u8>)> {
    match s.mode {
        Mode::Tunnel => vec![
            (
                "in4",
                udp(INNER4.0, INNER4.1, 1234, 5678, b"sixteen byte msg"),
            ),
            ("in6", udp(INNER6.0, INNER6.1, 1234, 5678, b"")),
        ],
        Mode::Transport if s.src.contains(':') => vec![
            ("udp", udp(s.src, s.dst, 1234, 5678, &text(32))),
            ("ext", udp6_with_extensions(s.src, s.dst, b"ext")),
        ],
        Mode::Transport => vec![
            ("udp", udp(s.src, s.dst, 1234, 5678, &text(32))),
            ("opts", udp4_with_options(s.src, s.dst, b"opts")),
        ],
    }
}

/// One or two valid packets for each inner packet of each SA alone (three
/// for ESN SAs: they cross 2^32).
fn single_sa_seeds(specs: &[SaSpec], out: &mut Seeds) {
    for s in specs {
        for (what, inner) in inners(s) {
            let count = if s.esn { 3 } else { 2 };
            for (i, p) in seal(specs, &[s.spi], &inner, count).into_iter().enumerate() {
                out.push((format!("valid-{:x}-{what}-{i}", s.spi), p));
            }
        }
    }
}

fn esp_seeds() -> Seeds {
    let mut out = Seeds::new();
    single_sa_seeds(ESP_SAS, &mut out);
    let big = udp(INNER4.0, INNER4.1, 1234, 5678, &text(1400));
    for p in seal(ESP_SAS, &[0x100], &big, 1) {
        out.push(("valid-100-big".into(), p));
    }
    out
}

fn ah_seeds() -> Seeds {
    let mut out = Seeds::new();
    single_sa_seeds(AH_SAS, &mut out);
    let opts = udp4_with_options("192.0.2.1", "192.0.2.2", b"esp+ah");
    for p in seal(AH_SAS, &[0x205, 0x200], &opts, 1) {
        out.push(("valid-esp-ah-v4".into(), p));
    }
    let ext = udp6_with_extensions("2001:db8::1", "2001:db8::2", b"esp+ah");
    for p in seal(AH_SAS, &[0x206, 0x201], &ext, 1) {
        out.push(("valid-esp-ah-v6".into(), p));
    }
    out
}

fn ipcomp_seeds() -> Seeds {
    let mut out = Seeds::new();
    let mut add = |name: &str, spis: &[u32], inner: Vec<u8>| {
        for (i, p) in seal(IPCOMP_SAS, spis, &inner, 1).into_iter().enumerate() {
            out.push((format!("valid-{name}-{i}"), p));
        }
    };
    add(
        "ipcomp-tun-in4",
        &[0x300],
        udp(INNER4.0, INNER4.1, 1, 2, &text(600)),
    );
    add(
        "ipcomp-tun-in6",
        &[0x300],
        udp(INNER6.0, INNER6.1, 1, 2, &text(200)),
    );
    let v6 = ("2001:db8::1", "2001:db8::2");
    add(
        "ipcomp-tra-v6",
        &[0x301],
        udp(v6.0, v6.1, 1, 2, &text(1000)),
    );
    add(
        "ipcomp-tra-v6-ext",
        &[0x301],
        udp6_with_extensions(v6.0, v6.1, &text(300)),
    );
    add(
        "ipcomp-esp-ah-tun",
        &[0x302, 0x303, 0x304],
        udp(INNER4.0, INNER4.1, 1, 2, &text(1400)),
    );
    add(
        "ipcomp-esp-tun",
        &[0x302, 0x303],
        udp(INNER6.0, INNER6.1, 1, 2, &text(500)),
    );
    let v4 = ("192.0.2.1", "192.0.2.4");
    add(
        "ipcomp-esp-tra",
        &[0x305, 0x306],
        udp(v4.0, v4.1, 1, 2, &text(900)),
    );
    add(
        "ipcomp-esp-tra-opts",
        &[0x305, 0x306],
        udp4_with_options(v4.0, v4.1, &text(400)),
    );
    // Too short to compress: IPComp leaves it and only ESP applies.
    add(
        "ipcomp-esp-tun-small",
        &[0x302, 0x303],
        udp(INNER4.0, INNER4.1, 1, 2, b"tiny"),
    );
    out
}

fn udp_encap_seeds() -> Seeds {
    let mut out = Seeds::new();
    single_sa_seeds(UDP_ENCAP_SAS, &mut out);
    let ike = {
        // Non-ESP marker, then an IKE_SA_INIT header with no payloads.
        let mut m = NON_ESP_MARKER.to_vec();
        m.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]); // initiator SPI
        m.extend_from_slice(&[0; 8]); // responder SPI
        m.extend_from_slice(&[0, 0x20, 34, 0x08, 0, 0, 0, 0, 0, 0, 0, 28]);
        m
    };
    for (fam, src, dst) in [
        ("v4", "192.0.2.1", "192.0.2.2"),
        ("v6", "2001:db8::1", "2001:db8::2"),
    ] {
        let p = |payload: &[u8]| udp(src, dst, NAT_T_PORT, NAT_T_PORT, payload);
        out.push((format!("keepalive-{fam}"), p(&[NAT_KEEPALIVE])));
        out.push((format!("ike-{fam}"), p(&ike)));
        out.push((format!("short-{fam}"), p(&[0, 0, 0, 1])));
        out.push((
            format!("unknown-spi-{fam}"),
            p(&[0xde, 0xad, 0, 1, 0, 0, 0, 1, 9, 9, 9, 9]),
        ));
    }
    out
}

/// Plain packets for ip_parse (the sealed ones are added too).
fn plain_seeds() -> Seeds {
    vec![
        ("udp4".into(), udp("192.0.2.1", "192.0.2.2", 1, 2, b"hello")),
        (
            "udp4-opts".into(),
            udp4_with_options("192.0.2.1", "192.0.2.2", b"hello"),
        ),
        (
            "udp6".into(),
            udp("2001:db8::1", "2001:db8::2", 1, 2, b"hi"),
        ),
        (
            "udp6-ext".into(),
            udp6_with_extensions("2001:db8::1", "2001:db8::2", b"hi"),
        ),
        (
            "udp6-frag".into(),
            udp6_fragment("2001:db8::1", "2001:db8::2"),
        ),
    ]
}

/// The selector byte of the case sealed by `spi` with these `extensions`
/// and `bundle`.
fn selector(spi: u32, extensions: bool, bundle: &[u32]) -> u8 {
    let i = DECRYPTED_CASES
        .iter()
        .position(|c| c.spi == spi && c.extensions == extensions && c.bundle == bundle)
        .unwrap();
    u8::try_from(i).unwrap()
}

/// An esp_decrypted input: selector, `payload`, default padding to 4
/// bytes, Pad Length, `next_header`.
fn esp_plaintext(selector: u8, payload: &[u8], next_header: u8) -> Vec<u8> {
    let pad = (4 - (payload.len() + 2) % 4) % 4;
    let mut out = vec![selector];
    out.extend_from_slice(payload);
    out.extend(1..=pad as u8);
    out.extend_from_slice(&[pad as u8, next_header]);
    out
}

/// An IPComp header and DEFLATE payload of `inner` (its bytes after
/// `ip_len` bytes of IP header), as IPComp SA `cpi` of DECRYPTED_SAS alone
/// sends it.
fn ipcomp_payload(cpi: u32, inner: &[u8], ip_len: usize) -> Vec<u8> {
    let sealed = seal(DECRYPTED_SAS, &[cpi], inner, 1).remove(0);
    let nh_field = if ip_len == 20 { 9 } else { 6 };
    assert_eq!(sealed[nh_field], IpProtocol::IPCOMP.0, "compressed");
    sealed[ip_len..].to_vec()
}

/// esp_decrypted: well-formed plaintexts for each kind of SA (`valid-*`),
/// a TFC dummy packet and bad padding.
fn esp_decrypted_seeds() -> Seeds {
    let (v4, v6) = (("192.0.2.1", "192.0.2.2"), ("2001:db8::1", "2001:db8::2"));
    let in4 = udp(INNER4.0, INNER4.1, 1234, 5678, b"sixteen byte msg");
    let in6 = udp(INNER6.0, INNER6.1, 1234, 5678, b"inner v6");
    // Transport mode: the UDP datagram after the IP header.
    let udp4 = udp(v4.0, v4.1, 1234, 5678, &text(33))[20..].to_vec();
    let udp6 = udp(v6.0, v6.1, 1234, 5678, &text(31))[40..].to_vec();
    let big4 = udp(INNER4.0, INNER4.1, 1, 2, &text(600));
    let comp_tun = ipcomp_payload(0x506, &big4, 20);
    let comp4 = ipcomp_payload(0x50a, &udp(v4.0, v4.1, 1, 2, &text(500)), 20);
    let comp6 = ipcomp_payload(0x508, &udp(v6.0, v6.1, 1, 2, &text(700)), 40);
    let (ipv4, ipv6, udp_nh, ipcomp) = (4, 41, 17, IpProtocol::IPCOMP.0);
    // (name, (ESP SPI, outer extensions, policy bundle), payload, next header)
    type Case<'a> = (&'a str, (u32, bool, &'a [u32]), &'a [u8], u8);
    let cases: &[Case] = &[
        ("valid-tun4-in4", (0x500, false, &[0x500]), &in4, ipv4),
        ("valid-tun4-in6", (0x500, false, &[0x500]), &in6, ipv6),
        ("valid-tun6-in6", (0x501, false, &[0x501]), &in6, ipv6),
        ("valid-tun6-in4", (0x501, false, &[0x501]), &in4, ipv4),
        ("valid-tra4", (0x502, false, &[0x502]), &udp4, udp_nh),
        ("valid-tra4-opts", (0x502, true, &[0x502]), &udp4, udp_nh),
        ("valid-tra6", (0x503, false, &[0x503]), &udp6, udp_nh),
        ("valid-tra6-ext", (0x503, true, &[0x503]), &udp6, udp_nh),
        ("valid-encap-tun4", (0x504, false, &[0x504]), &in4, ipv4),
        ("valid-encap-tra6", (0x505, true, &[0x505]), &udp6, udp_nh),
        ("valid-esn-tun4", (0x50b, false, &[0x50b]), &in4, ipv4),
        ("valid-esn-tun4-2", (0x50b, true, &[0x50b]), &in6, ipv6),
        (
            "valid-ipcomp-tun",
            (0x507, false, &[0x506, 0x507]),
            &comp_tun,
            ipcomp,
        ),
        (
            "valid-ipcomp-tra4",
            (0x502, true, &[0x50a, 0x502]),
            &comp4,
            ipcomp,
        ),
        (
            "valid-ipcomp-tra6",
            (0x503, true, &[0x508, 0x503]),
            &comp6,
            ipcomp,
        ),
        (
            "valid-esn-ipcomp-tra6",
            (0x50c, true, &[0x508, 0x50c]),
            &comp6,
            ipcomp,
        ),
        ("dummy-nh59", (0x500, false, &[0x500]), b"dummy packet", 59),
    ];
    let mut out = Seeds::new();
    for &(name, (spi, extensions, bundle), payload, next_header) in cases {
        let sel = selector(spi, extensions, bundle);
        out.push((name.into(), esp_plaintext(sel, payload, next_header)));
    }
    let mut bad = esp_plaintext(selector(0x501, false, &[0x501]), &in4, ipv4);
    let n = bad.len();
    assert!(bad[n - 2] > 0, "has padding");
    bad[n - 3] ^= 0xff;
    out.push(("badpad-tun6".into(), bad));
    out
}
