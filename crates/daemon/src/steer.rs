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
//! Packets too short to hold an SPI go to worker 0, which counts them as
//! truncated: the kernel never drops anything silently on our behalf.
//!
//! The programs are plain data, checked here by a small interpreter with
//! the kernel's semantics, so that no test needs root.

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
const LEN: u16 = 0x80;
const MSH: u16 = 0xa0;
const SUB: u16 = 0x10;
const MOD: u16 = 0x90;
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
/// here); an out-of-bounds load ends the program returning 0.
#[cfg(test)]
fn run(prog: &[Insn], packet: &[u8]) -> u32 {
    let word = |at: u32| -> Option<u32> {
        let at = at as usize;
        packet
            .get(at..at.checked_add(4)?)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (mut a, mut x, mut pc) = (0u32, 0u32, 0usize);
    loop {
        let i = prog[pc];
        pc += 1;
        match i.code {
            c if c == LDX | B | MSH => match packet.get(i.k as usize) {
                Some(b) => x = 4 * u32::from(b & 0xf),
                None => return 0,
            },
            c if c == LDX | W | IMM => x = i.k,
            c if c == LD | W | LEN => a = packet.len() as u32,
            c if c == LD | W | ABS => match word(i.k) {
                Some(w) => a = w,
                None => return 0,
            },
            c if c == LD | W | IND => match word(x.wrapping_add(i.k)) {
                Some(w) => a = w,
                None => return 0,
            },
            c if c == ALU | SUB | X => a = a.wrapping_sub(x),
            c if c == ALU | MOD | K => a %= i.k,
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
}
