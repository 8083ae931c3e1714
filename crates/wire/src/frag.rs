//! Fragmenting a whole IP packet to fit an MTU: IPv4 (RFC 791 §3.2,
//! "Fragmentation and Reassembly") and IPv6 source fragmentation (RFC 8200
//! §4.5). An IPsec implementation fragments *after* ESP/AH processing
//! (RFC 4303 §3.3.4, RFC 4302 §3.3.4), so what is split here is a sealed
//! packet: its ESP or AH header is the first thing in the fragmentable
//! part.

use crate::iana::IpProtocol;
use crate::ipv4::Ipv4Packet;
use crate::ipv6::{self, Ipv6Packet};
use crate::ipv6ext::{ipv6_header_chain, Ipv6FragmentHeader};
use crate::{Error, Result};

/// Length of the IPv6 Fragment header.
pub const IPV6_FRAG_LEN: usize = 8;

/// Split the IPv4 packet `packet` into fragments of at most `mtu` bytes,
/// each handed to `emit` (a scratch buffer, reused). Returns how many.
/// Every check runs before the first fragment: on error nothing was
/// emitted.
///
/// Errors: [`Error::Truncated`]/[`Error::BadLength`] for a bad header;
/// [`Error::Malformed`] if the packet has DF set (it must not be
/// fragmented), is itself a fragment, carries options (which options a
/// fragment copies is per option, RFC 791 §3.1: not done here), or if the
/// MTU leaves no room for 8 bytes of data.
pub fn fragment_ipv4(packet: &[u8], mtu: usize, mut emit: impl FnMut(&[u8])) -> Result<usize> {
    let p = Ipv4Packet::new_checked(packet)?;
    let hl = p.header_len();
    let total = usize::from(p.total_len());
    if p.dont_frag() || p.is_fragment() || hl != 20 {
        return Err(Error::Malformed);
    }
    // Data per fragment: a multiple of 8 (the offset's unit).
    let chunk = mtu.saturating_sub(hl) & !7;
    if chunk == 0 {
        return Err(Error::Malformed);
    }
    let data = &packet[hl..total];
    let mut scratch = Vec::with_capacity(hl + chunk);
    let mut count = 0;
    for (i, piece) in data.chunks(chunk).enumerate() {
        scratch.clear();
        scratch.extend_from_slice(&packet[..hl]);
        scratch.extend_from_slice(piece);
        let mut f = Ipv4Packet::new_unchecked(&mut scratch[..]);
        f.set_total_len((hl + piece.len()) as u16);
        f.set_frag_offset((i * chunk) as u16);
        f.set_more_frags((i + 1) * chunk < data.len());
        f.fill_checksum();
        emit(&scratch);
        count += 1;
    }
    Ok(count)
}

/// Split the IPv6 packet `packet` into fragments of at most `mtu` bytes
/// with identification `ident`, each handed to `emit`. The unfragmentable
/// part is the fixed header and the Hop-by-Hop and Routing headers (and
/// Destination Options before a Routing header): everything before where
/// transport-mode ESP/AH sits (RFC 8200 §4.5). As with IPv4, on error
/// nothing was emitted.
///
/// Errors: a bad header chain; [`Error::Malformed`] if the packet is
/// already a fragment or the MTU leaves no room for 8 bytes of data.
pub fn fragment_ipv6(
    packet: &[u8],
    mtu: usize,
    ident: u32,
    mut emit: impl FnMut(&[u8]),
) -> Result<usize> {
    let chain = ipv6_header_chain(packet)?;
    if chain.has_fragment() {
        return Err(Error::Malformed);
    }
    let (unfrag, field) = (chain.ipsec_insert_offset(), chain.ipsec_next_header_field());
    let next = IpProtocol(packet[field]);
    let data = &packet[unfrag..chain.packet_len()];
    let chunk = mtu.saturating_sub(unfrag + IPV6_FRAG_LEN) & !7;
    if chunk == 0 {
        return Err(Error::Malformed);
    }
    let mut scratch = Vec::with_capacity(unfrag + IPV6_FRAG_LEN + chunk);
    let mut count = 0;
    for (i, piece) in data.chunks(chunk).enumerate() {
        scratch.clear();
        scratch.extend_from_slice(&packet[..unfrag]);
        scratch[field] = IpProtocol::IPV6_FRAG.0;
        scratch.extend_from_slice(&[0; IPV6_FRAG_LEN]);
        {
            let mut h = Ipv6FragmentHeader::new_unchecked(&mut scratch[unfrag..]);
            h.set_next_header(next);
            h.set_reserved(0);
            h.set_frag_offset((i * chunk) as u16);
            h.set_more_frags((i + 1) * chunk < data.len());
            h.set_ident(ident);
        }
        scratch.extend_from_slice(piece);
        let payload = scratch.len() - ipv6::HEADER_LEN;
        Ipv6Packet::new_unchecked(&mut scratch[..]).set_payload_len(payload as u16);
        emit(&scratch);
        count += 1;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(len: usize) -> Vec<u8> {
        let mut p = vec![0u8; len];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        p[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
        p[8] = 64;
        p[9] = 50; // ESP
        p[12..16].copy_from_slice(&[192, 0, 2, 1]);
        p[16..20].copy_from_slice(&[192, 0, 2, 2]);
        for (i, b) in p[20..].iter_mut().enumerate() {
            *b = i as u8;
        }
        Ipv4Packet::new_unchecked(&mut p[..]).fill_checksum();
        p
    }

    #[test]
    fn ipv4_fragments_fit_and_put_back_the_data() {
        let p = v4(4200);
        let mut frags = Vec::new();
        let n = fragment_ipv4(&p, 1400, |f| frags.push(f.to_vec())).unwrap();
        assert_eq!(n, 4);
        let mut data = Vec::new();
        for (i, f) in frags.iter().enumerate() {
            let h = Ipv4Packet::new_checked(&f[..]).unwrap();
            assert!(f.len() <= 1400 && h.verify_checksum());
            assert_eq!(usize::from(h.frag_offset()), data.len());
            assert_eq!(h.more_frags(), i < 3);
            assert_eq!(h.ident(), 0x1234);
            if i < 3 {
                assert_eq!(h.payload().len() % 8, 0);
            }
            data.extend_from_slice(h.payload());
        }
        assert_eq!(data, p[20..]);
        // DF, options, an MTU with no room: refused.
        let mut df = v4(3000);
        Ipv4Packet::new_unchecked(&mut df[..]).set_dont_frag(true);
        let mut emitted = 0;
        assert_eq!(
            fragment_ipv4(&df, 1400, |_| emitted += 1),
            Err(Error::Malformed)
        );
        assert_eq!(emitted, 0);
        assert_eq!(fragment_ipv4(&p, 27, |_| {}), Err(Error::Malformed));
        // Small enough already: one "fragment", the packet itself.
        let small = v4(1000);
        let mut out = Vec::new();
        assert_eq!(fragment_ipv4(&small, 1400, |f| out = f.to_vec()), Ok(1));
        assert_eq!(out, small);
    }

    #[test]
    fn ipv6_fragments_carry_a_fragment_header_after_the_unfragmentable_part() {
        let len = 40 + 8 + 3000; // with a Hop-by-Hop header
        let mut p = vec![0u8; len];
        p[0] = 0x60;
        p[4..6].copy_from_slice(&((len - 40) as u16).to_be_bytes());
        p[6] = 0; // Hop-by-Hop
        p[7] = 64;
        p[40] = 50; // then ESP
        p[41] = 0;
        p[42] = 1; // PadN, 4 bytes
        p[43] = 4;
        for (i, b) in p[48..].iter_mut().enumerate() {
            *b = (i * 7) as u8;
        }
        let mut frags = Vec::new();
        let n = fragment_ipv6(&p, 1280, 0xabcd, |f| frags.push(f.to_vec())).unwrap();
        assert_eq!(n, 3);
        let mut data = Vec::new();
        for (i, f) in frags.iter().enumerate() {
            assert!(f.len() <= 1280);
            let chain = ipv6_header_chain(f).unwrap();
            assert!(chain.has_fragment());
            assert_eq!(f[40], 44, "Hop-by-Hop names the Fragment header");
            let h = Ipv6FragmentHeader::new_checked(&f[48..]).unwrap();
            assert_eq!(h.next_header(), IpProtocol(50));
            assert_eq!((h.ident(), h.more_frags()), (0xabcd, i < 2));
            assert_eq!(usize::from(h.frag_offset()), data.len());
            assert_eq!(
                usize::from(Ipv6Packet::new_checked(&f[..]).unwrap().payload_len()),
                f.len() - 40
            );
            data.extend_from_slice(&f[56..]);
        }
        assert_eq!(data, p[48..]);
    }
}
