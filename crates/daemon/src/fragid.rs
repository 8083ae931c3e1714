//! IPv6 Fragment header identifications (RFC 8200 §4.5), unpredictable as
//! RFC 7739 §5 asks: an observer who sees one must not be able to guess
//! the next (predictable IDs let an off-path attacker inject fragments
//! into a datagram, or count the traffic a host sends). Each one is drawn
//! from the operating system's generator, 32 at a time, so the data path
//! makes one getrandom(2) call per 32 fragmented datagrams.

/// A source of random fragment identifications. The default value draws
/// its first batch on first use.
#[derive(Default)]
pub struct FragmentIds {
    batch: [u32; BATCH],
    /// How many of `batch` are still unused (from the front).
    left: usize,
}

/// Identifications drawn per getrandom(2).
const BATCH: usize = 32;

impl FragmentIds {
    /// The next identification.
    pub fn next(&mut self) -> u32 {
        if self.left == 0 {
            let mut bytes = [0u8; BATCH * 4];
            getrandom::fill(&mut bytes).expect("getrandom(2) failed");
            for (id, b) in self.batch.iter_mut().zip(bytes.chunks_exact(4)) {
                *id = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
            }
            self.left = BATCH;
        }
        self.left -= 1;
        self.batch[self.left]
    }
}

/// Split the IPv4 or IPv6 packet `packet` into fragments of at most `mtu`
/// bytes, each handed to `emit` ([`flowsec_wire::frag`]; an IPv6 one gets
/// an identification from `ids`). On error nothing was emitted.
pub fn split(
    packet: &[u8],
    mtu: usize,
    ids: &mut FragmentIds,
    emit: impl FnMut(&[u8]),
) -> flowsec_wire::Result<usize> {
    match flowsec_wire::version_of(packet)? {
        flowsec_wire::IpVersion::V4 => flowsec_wire::frag::fragment_ipv4(packet, mtu, emit),
        flowsec_wire::IpVersion::V6 => {
            flowsec_wire::frag::fragment_ipv6(packet, mtu, ids.next(), emit)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Not a counter: consecutive identifications do not follow one another,
    /// and two sources do not agree.
    #[test]
    fn identifications_are_not_predictable() {
        let (mut a, mut b) = (FragmentIds::default(), FragmentIds::default());
        let xs: Vec<u32> = (0..200).map(|_| a.next()).collect();
        let ys: Vec<u32> = (0..200).map(|_| b.next()).collect();
        assert_ne!(xs, ys);
        let steps = xs
            .windows(2)
            .filter(|w| w[1].wrapping_sub(w[0]) < 16)
            .count();
        assert!(steps < 3, "{steps} near-consecutive identifications");
        let distinct: std::collections::BTreeSet<_> = xs.iter().collect();
        assert!(distinct.len() > 195);
    }
}
