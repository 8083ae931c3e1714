//! Steering inbound packets to the worker that owns their SA (ARCHITECTURE.md
//! "Workers"): classic BPF programs the kernel runs on each packet before
//! it reaches a socket. Worker `k` of `n` owns the inbound SAs whose SPI is
//! `k` modulo `n`, so one SA's replay window is only ever touched by one
//! thread and needs no lock.
//!
//! - Raw ESP/AH sockets each see every packet of their protocol; each
//!   worker's socket carries a filter that accepts only its own SPIs.
//! - The UDP 4500 sockets form one `SO_REUSEPORT` group, and one program
//!   for the group returns the index of the socket (bind order = worker
//!   index) for the SPI in the first word of the payload. IKE (non-ESP
//!   marker 0) and NAT-keepalives (one 0xff byte) go to worker 0.
//!
//! - Raw ESP/AH is taken once per packet by a packet-socket group
//!   (PACKET_FANOUT, one `AF_PACKET` socket per worker and family): each
//!   socket's filter keeps unfragmented ESP and AH ([`packet_filter`]),
//!   and the group's program ([`fanout_program`]) returns the worker of
//!   the SPI. The kernel's own copy of those packets is dropped by an
//!   nftables rule (`crate::fanout`); the raw sockets above then see only
//!   the datagrams the kernel reassembled from fragments.
//!
//! Packets too short to hold an SPI go to worker 0, which counts them as
//! truncated: the kernel never drops anything silently on our behalf.
//!
//! The programs are plain data, checked here by a small interpreter with
//! the kernel's semantics, so that no test needs root.

use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ip::IpVersion;
use flowsec_wire::ipv6;

/// One classic BPF instruction (`struct sock_filter`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

// Opcodes from linux/filter.h (classes, sizes, modes, operations).
const LD: u16 = 0x00;
const LDX: u16 = 0x01;
const ALU: u16 = 0x04;
const JMP: u16 = 0x05;
const RET: u16 = 0x06;
const W: u16 = 0x00;
const B: u16 = 0x10;
const ABS: u16 = 0x20;
const IND: u16 = 0x40;
const H: u16 = 0x08;
const LEN: u16 = 0x80;
const MSH: u16 = 0xa0;
const SUB: u16 = 0x10;
const MOD: u16 = 0x90;
const AND: u16 = 0x50;
const JA: u16 = 0x00;
const JEQ: u16 = 0x10;
const JGE: u16 = 0x30;
const K: u16 = 0x00;
/// `ldx #k` (mode 0x00).
const IMM: u16 = 0x00;
const X: u16 = 0x08;
const A: u16 = 0x10;

const fn insn(code: u16, jt: u8, jf: u8, k: u32) -> Insn {
    Insn { code, jt, jf, k }
}

/// `ld #pkttype` reads the packet type (linux/filter.h SKF_AD_OFF +
/// SKF_AD_PKTTYPE) as an absolute word load.
const AD_PKTTYPE: u32 = 0xffff_f000 + 4;
/// linux/if_packet.h PACKET_OTHERHOST: to another host's link address
/// (a promiscuous interface), which IP drops.
const PACKET_OTHERHOST: u32 = 3;

/// What a socket filter returns to keep a whole packet.
const ACCEPT: u32 = u32::MAX;
const DROP: u32 = 0;

/// Where the SPI sits in what a raw socket's filter sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawKind {
    /// IPv4: the filter sees the IP header (IHL words), then ESP or AH.
    V4Esp,
    /// IPv4 AH: the SPI is the second word of AH.
    V4Ah,
    /// IPv6: the filter sees what follows the IPv6 header.
    V6Esp,
    /// IPv6 AH.
    V6Ah,
}

impl RawKind {
    fn spi_offset(self) -> u32 {
        match self {
            RawKind::V4Esp | RawKind::V6Esp => 0,
            RawKind::V4Ah | RawKind::V6Ah => 4,
        }
    }
}

/// The worker `spi` belongs to, as the programs below compute it.
#[cfg(test)]
fn owner_of_spi(spi: u32, workers: usize) -> usize {
    (spi % workers.max(1) as u32) as usize
}

/// The filter of worker `index` of `workers` on a raw socket of `kind`.
pub fn raw_filter(kind: RawKind, workers: usize, index: usize) -> Vec<Insn> {
    let n = workers.max(1) as u32;
    let me = index as u32;
    let short = if index == 0 { ACCEPT } else { DROP };
    let header = match kind {
        // X = 4 * IHL, the IPv4 header length.
        RawKind::V4Esp | RawKind::V4Ah => insn(LDX | B | MSH, 0, 0, 0),
        // X = 0: the filter already starts after the IPv6 header.
        RawKind::V6Esp | RawKind::V6Ah => insn(LDX | W | IMM, 0, 0, 0),
    };
    let need = kind.spi_offset() + 4;
    vec![
        header,
        // A = length - header: the bytes of ESP/AH.
        insn(LD | W | LEN, 0, 0, 0),
        insn(ALU | SUB | X, 0, 0, 0),
        insn(JMP | JGE | K, 1, 0, need),
        insn(RET | K, 0, 0, short),
        insn(LD | W | IND, 0, 0, kind.spi_offset()),
        insn(ALU | MOD | K, 0, 0, n),
        insn(JMP | JEQ | K, 0, 1, me),
        insn(RET | K, 0, 0, ACCEPT),
        insn(RET | K, 0, 0, DROP),
    ]
}

/// The filter of a packet socket of the raw ESP/AH group of `version`: it
/// sees the IP packet (a `SOCK_DGRAM` packet socket) and keeps ESP and AH
/// that follow the IP header directly, unfragmented (IPv4: no MF, offset
/// 0; IPv6: the first next header is ESP or AH, so no Fragment header),
/// not sent to another host's link address. Exactly what the nftables
/// rule of `crate::fanout` takes from the kernel: the rest (fragments,
/// IPv6 extension headers) the kernel reassembles and hands to the raw
/// sockets.
pub fn packet_filter(version: IpVersion) -> Vec<Insn> {
    let (proto_at, tail) = match version {
        IpVersion::V4 => (
            9,
            vec![
                // Flags and fragment offset: MF or any offset is a fragment.
                insn(LD | H | ABS, 0, 0, 6),
                insn(ALU | AND | K, 0, 0, 0x3fff),
                insn(JMP | JEQ | K, 0, 1, 0),
                insn(RET | K, 0, 0, ACCEPT),
                insn(RET | K, 0, 0, DROP),
            ],
        ),
        IpVersion::V6 => (
            6,
            vec![insn(RET | K, 0, 0, ACCEPT), insn(RET | K, 0, 0, DROP)],
        ),
    };
    let mut prog = vec![
        insn(LD | W | ABS, 0, 0, AD_PKTTYPE),
        insn(
            JMP | JEQ | K,
            (3 + tail.len() - 1) as u8,
            0,
            PACKET_OTHERHOST,
        ),
        insn(LD | B | ABS, 0, 0, proto_at),
        insn(JMP | JEQ | K, 1, 0, u32::from(IpProtocol::ESP.0)),
        insn(
            JMP | JEQ | K,
            0,
            (tail.len() - 1) as u8,
            u32::from(IpProtocol::AH.0),
        ),
    ];
    prog.extend(tail);
    prog
}

/// The program of the raw ESP/AH packet-socket group of `workers` sockets
/// (PACKET_FANOUT_CBPF): it sees the IP packet and returns the index of
/// the socket (join order = worker index) for the SPI, which is the first
/// word of ESP or the second of AH.
pub fn fanout_program(version: IpVersion, workers: usize) -> Vec<Insn> {
    let n = workers.max(1) as u32;
    let (header, proto_at) = match version {
        // X = 4 * IHL.
        IpVersion::V4 => (insn(LDX | B | MSH, 0, 0, 0), 9),
        IpVersion::V6 => (insn(LDX | W | IMM, 0, 0, ipv6::HEADER_LEN as u32), 6),
    };
    vec![
        header,
        insn(LD | B | ABS, 0, 0, proto_at),
        insn(JMP | JEQ | K, 0, 2, u32::from(IpProtocol::AH.0)),
        insn(LD | W | IND, 0, 0, RawKind::V4Ah.spi_offset()),
        insn(JMP | JA, 0, 0, 1),
        insn(LD | W | IND, 0, 0, RawKind::V4Esp.spi_offset()),
        insn(ALU | MOD | K, 0, 0, n),
        insn(RET | A, 0, 0, 0),
    ]
}

/// The program of the UDP 4500 reuseport group of `workers` sockets: it
/// sees the UDP payload and returns the index of the socket to use.
pub fn reuseport_program(workers: usize) -> Vec<Insn> {
    let n = workers.max(1) as u32;
    vec![
        insn(LD | W | LEN, 0, 0, 0),
        insn(JMP | JGE | K, 1, 0, 4),
        insn(RET | K, 0, 0, 0),
        insn(LD | W | ABS, 0, 0, 0),
        insn(ALU | MOD | K, 0, 0, n),
        insn(RET | A, 0, 0, 0),
    ]
}

/// Run `prog` on `packet` as the kernel would (for the opcodes used
/// here), as received by a host (packet type PACKET_HOST, 0); an
/// out-of-bounds load ends the program returning 0.
#[cfg(test)]
fn run(prog: &[Insn], packet: &[u8]) -> u32 {
    run_as(prog, packet, 0)
}

/// [`run`] for a packet of link-layer type `pkttype` (the `ld #pkttype`
/// extension).
#[cfg(test)]
fn run_as(prog: &[Insn], packet: &[u8], pkttype: u32) -> u32 {
    let load = |at: u32, size: usize| -> Option<u32> {
        let at = at as usize;
        let b = packet.get(at..at.checked_add(size)?)?;
        Some(b.iter().fold(0u32, |v, &x| v << 8 | u32::from(x)))
    };
    let (mut a, mut x, mut pc) = (0u32, 0u32, 0usize);
    loop {
        let i = prog[pc];
        pc += 1;
        let loaded = match i.code {
            c if c == LD | W | ABS && i.k == AD_PKTTYPE => Some(pkttype),
            c if c == LD | W | ABS => load(i.k, 4),
            c if c == LD | H | ABS => load(i.k, 2),
            c if c == LD | B | ABS => load(i.k, 1),
            c if c == LD | W | IND => load(x.wrapping_add(i.k), 4),
            c if c == LD | W | LEN => Some(packet.len() as u32),
            _ => None,
        };
        if let Some(v) = loaded {
            a = v;
            continue;
        }
        match i.code {
            c if c == LDX | B | MSH => match packet.get(i.k as usize) {
                Some(b) => x = 4 * u32::from(b & 0xf),
                None => return 0,
            },
            c if c == LDX | W | IMM => x = i.k,
            c if c & 0x07 == LD => return 0,
            c if c == ALU | SUB | X => a = a.wrapping_sub(x),
            c if c == ALU | MOD | K => a %= i.k,
            c if c == ALU | AND | K => a &= i.k,
            c if c == JMP | JA => pc += i.k as usize,
            c if c == JMP | JGE | K || c == JMP | JEQ | K => {
                let taken = if c == JMP | JGE | K {
                    a >= i.k
                } else {
                    a == i.k
                };
                pc += usize::from(if taken { i.jt } else { i.jf });
            }
            c if c == RET | K => return i.k,
            c if c == RET | A => return a,
            other => panic!("opcode {other:#x} not modelled"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4_with(ihl_words: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0u8; usize::from(ihl_words) * 4];
        p[0] = 0x40 | ihl_words;
        p.extend_from_slice(payload);
        p
    }

    #[test]
    fn raw_filters_accept_each_spi_at_exactly_one_worker() {
        for workers in 1..=5 {
            for spi in [0u32, 1, 2, 0x1001, 0xdead_beef, u32::MAX] {
                let esp = [&spi.to_be_bytes()[..], &[0, 0, 0, 1, 9, 9, 9, 9]].concat();
                let ah = [&[50, 4, 0, 0][..], &spi.to_be_bytes(), &[0; 16]].concat();
                let cases = [
                    (RawKind::V4Esp, ipv4_with(5, &esp)),
                    (RawKind::V4Esp, ipv4_with(7, &esp)),
                    (RawKind::V4Ah, ipv4_with(5, &ah)),
                    (RawKind::V6Esp, esp.clone()),
                    (RawKind::V6Ah, ah.clone()),
                ];
                for (kind, packet) in cases {
                    let takers: Vec<usize> = (0..workers)
                        .filter(|&k| run(&raw_filter(kind, workers, k), &packet) == ACCEPT)
                        .collect();
                    assert_eq!(
                        takers,
                        vec![owner_of_spi(spi, workers)],
                        "{kind:?} {spi:#x}"
                    );
                }
            }
        }
    }

    #[test]
    fn short_and_garbage_packets_go_to_worker_zero_only() {
        for workers in 1..=3 {
            let cases = [
                (RawKind::V4Esp, ipv4_with(5, &[1, 2, 3])),
                (RawKind::V4Ah, ipv4_with(5, &[51, 4, 0, 0, 1])),
                (RawKind::V4Esp, ipv4_with(15, &[1, 2, 3])),
                (RawKind::V4Esp, vec![]),
                (RawKind::V6Esp, vec![1]),
                (RawKind::V6Ah, vec![0; 7]),
            ];
            for (kind, packet) in cases {
                let takers: Vec<usize> = (0..workers)
                    .filter(|&k| run(&raw_filter(kind, workers, k), &packet) == ACCEPT)
                    .collect();
                // An empty packet cannot even hold the IHL: the kernel drops it.
                let expected = if packet.is_empty() { vec![] } else { vec![0] };
                assert_eq!(takers, expected, "{kind:?} {packet:?}");
            }
        }
    }

    #[test]
    fn reuseport_program_picks_the_spi_owner() {
        for workers in 1..=4 {
            let prog = reuseport_program(workers);
            for spi in [1u32, 2, 3, 0x1001, u32::MAX] {
                let packet = [&spi.to_be_bytes()[..], &[0; 12]].concat();
                assert_eq!(run(&prog, &packet) as usize, owner_of_spi(spi, workers));
            }
            // Keepalive, IKE (non-ESP marker), empty.
            assert_eq!(run(&prog, &[0xff]), 0);
            assert_eq!(run(&prog, &[0, 0, 0, 0, 1, 2, 3]), 0);
            assert_eq!(run(&prog, &[]), 0);
        }
    }

    /// An IPv4 packet of protocol `proto` with flags/fragment-offset
    /// `frag` and `payload`; IPv6 with first next header `proto`.
    fn ip(version: IpVersion, proto: u8, frag: u16, payload: &[u8]) -> Vec<u8> {
        let mut p = match version {
            IpVersion::V4 => {
                let mut h = ipv4_with(5, &[]);
                h[6..8].copy_from_slice(&frag.to_be_bytes());
                h[9] = proto;
                h
            }
            IpVersion::V6 => {
                let mut h = vec![0u8; ipv6::HEADER_LEN];
                h[0] = 0x60;
                h[6] = proto;
                h
            }
        };
        p.extend_from_slice(payload);
        p
    }

    #[test]
    fn fanout_picks_the_spi_owner_for_esp_and_ah() {
        for version in [IpVersion::V4, IpVersion::V6] {
            for workers in 1..=5 {
                let prog = fanout_program(version, workers);
                for spi in [0u32, 1, 2, 0x1001, 0xdead_beef, u32::MAX] {
                    let esp = [&spi.to_be_bytes()[..], &[0, 0, 0, 1]].concat();
                    let ah = [&[4, 4, 0, 0][..], &spi.to_be_bytes(), &[0; 12]].concat();
                    let owner = owner_of_spi(spi, workers) as u32;
                    assert_eq!(run(&prog, &ip(version, 50, 0, &esp)), owner);
                    assert_eq!(run(&prog, &ip(version, 51, 0, &ah)), owner);
                }
                // Too short for an SPI: worker 0, which counts it.
                assert_eq!(run(&prog, &ip(version, 50, 0, &[7, 7])), 0);
            }
        }
        // IPv4 options move the SPI: the header length is read.
        let esp = [&5u32.to_be_bytes()[..], &[0; 8]].concat();
        let mut p = ipv4_with(7, &esp);
        p[9] = 50;
        assert_eq!(run(&fanout_program(IpVersion::V4, 3), &p), 2);
    }

    /// The socket filter keeps exactly what the nftables rule of
    /// `crate::fanout` drops: unfragmented ESP/AH right after the IP header.
    #[test]
    fn packet_filter_keeps_unfragmented_esp_and_ah_only() {
        let esp = [0u8, 0, 0x10, 0, 0, 0, 0, 1];
        for version in [IpVersion::V4, IpVersion::V6] {
            let f = packet_filter(version);
            let keep = |p: &[u8], pkttype| run_as(&f, p, pkttype) == ACCEPT;
            assert!(keep(&ip(version, 50, 0, &esp), 0), "{version:?} ESP");
            assert!(keep(&ip(version, 51, 0, &esp), 0), "{version:?} AH");
            // UDP, TCP, ICMP, a Fragment or other extension header first.
            for other in [17u8, 6, 1, 58, 44, 0, 43] {
                assert!(
                    !keep(&ip(version, other, 0, &esp), 0),
                    "{version:?} {other}"
                );
            }
            // Broadcast, multicast and loopback types are kept; another
            // host's link address is not.
            for pkttype in [1, 2] {
                assert!(keep(&ip(version, 50, 0, &esp), pkttype));
            }
            assert!(!keep(&ip(version, 50, 0, &esp), PACKET_OTHERHOST));
            assert!(!keep(&[], 0));
        }
        let f = packet_filter(IpVersion::V4);
        // DF alone is not a fragment; MF, or any offset, is.
        assert_eq!(run(&f, &ip(IpVersion::V4, 50, 0x4000, &esp)), ACCEPT);
        for frag in [0x2000u16, 0x0001, 0x2010, 0x1fff, 0x4001] {
            assert_eq!(
                run(&f, &ip(IpVersion::V4, 50, frag, &esp)),
                DROP,
                "{frag:#x}"
            );
        }
    }
}
