//! IKE message fragmentation (RFC 7383): a protected message too large for
//! one datagram goes as Encrypted Fragment payloads, each protected on
//! its own (crypto/sk/fragment.rs); received fragments are verified one by
//! one and put back together, within bounds.
//!
//! ```text
//!  send:    inner payloads ─► pieces of fragment_room bytes ─► SKF 1/n … n/n (each sealed)
//!  receive: SKF ─► verified, decrypted ─► Reassembly (one per direction of the IKE SA)
//!             ─► all n here ─► the inner payload chain, processed as an SK message
//! ```
//!
//! Bounds (§2.6: a receiver keeps what it can afford): at most
//! [`MAX_FRAGMENTS`] fragments and [`MAX_REASSEMBLED`] bytes per message
//! (with at most 1000 half-open IKE SAs: 10 MB),
//! one message per direction at a time (a new message ID, or a larger
//! Total Fragments after the sender made its fragments smaller, §2.5.2,
//! starts again); what does not fit is dropped and counted.

use flowsec_wire::ike::{Header, PayloadType};
use zeroize::Zeroizing;

use crate::crypto::sk::{Fragment, SkCrypto};
use crate::random::Random;

/// Most fragments of one message: 128 fragments of 576-byte datagrams
/// still carry a chain of RSA certificates.
pub const MAX_FRAGMENTS: u16 = 128;
/// Most bytes of inner payloads one reassembled message may have:
/// strongSwan's `charon.max_packet` (10000), which bounds what one
/// half-open IKE SA can make us hold before anyone authenticated.
pub const MAX_REASSEMBLED: usize = 10_000;

/// Cut `inner` (the message's inner payload chain, first of type
/// `first`) into fragments of at most `room` bytes each (IKE header
/// included), each sealed with `out`.
pub(crate) fn split(
    out: &SkCrypto,
    header: &Header,
    first: PayloadType,
    inner: &[u8],
    room: usize,
    rng: &mut dyn Random,
) -> Vec<Vec<u8>> {
    let most = inner.len().div_ceil(usize::from(MAX_FRAGMENTS)).max(1);
    let piece = out.fragment_room(room).max(most);
    let pieces: Vec<&[u8]> = if inner.is_empty() {
        vec![&[]]
    } else {
        inner.chunks(piece).collect()
    };
    let total = pieces.len() as u16;
    pieces
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let n = i as u16 + 1;
            let first = if n == 1 { first } else { PayloadType::NONE };
            out.seal_fragment(header, first, (n, total), p, rng)
        })
        .collect()
}

/// What adding a fragment came to.
pub enum Added {
    /// Kept; more are missing.
    Incomplete,
    /// The message is whole: its first inner payload type, the chain, and
    /// the SHA-256 of its first fragment as received.
    Complete {
        /// The type of the chain's first payload (fragment 1's Next Payload).
        first: PayloadType,
        /// The inner payload chain, the fragments' pieces in order.
        inner: Zeroizing<Vec<u8>>,
        /// SHA-256 of fragment 1 as received.
        digest: [u8; 32],
    },
    /// Already here (a retransmission): nothing changes.
    Duplicate,
    /// Not kept: more fragments or bytes than [`MAX_FRAGMENTS`] /
    /// [`MAX_REASSEMBLED`] (what was held is let go), or a Total Fragments
    /// below the one being reassembled (§2.6: an older retransmission).
    Refused,
}

/// One message being put back together.
#[derive(Default)]
pub struct Reassembly {
    /// Its message ID.
    mid: u32,
    total: u16,
    first: Option<(PayloadType, [u8; 32])>,
    pieces: Vec<Option<Zeroizing<Vec<u8>>>>,
    bytes: usize,
}

impl Reassembly {
    /// Add fragment `f` of message `mid` (`digest`: of its bytes as
    /// received); `slot` holds the message of this direction being
    /// reassembled, if any.
    pub fn add(slot: &mut Option<Reassembly>, mid: u32, f: Fragment, digest: [u8; 32]) -> Added {
        if f.total > MAX_FRAGMENTS {
            return Added::Refused;
        }
        let fresh = match slot {
            Some(r) if r.mid == mid && r.total == f.total => false,
            // §2.6: fewer fragments than before: an old retransmission.
            Some(r) if r.mid == mid && f.total < r.total => return Added::Refused,
            _ => true,
        };
        if fresh {
            *slot = Some(Reassembly {
                mid,
                total: f.total,
                first: None,
                pieces: (0..f.total).map(|_| None).collect(),
                bytes: 0,
            });
        }
        let Some(r) = slot.as_mut() else {
            return Added::Incomplete;
        };
        let at = usize::from(f.number - 1);
        if r.pieces[at].is_some() {
            return Added::Duplicate;
        }
        if r.bytes + f.inner.len() > MAX_REASSEMBLED {
            *slot = None;
            return Added::Refused;
        }
        r.bytes += f.inner.len();
        if f.number == 1 {
            r.first = Some((f.first, digest));
        }
        r.pieces[at] = Some(f.inner);
        if r.pieces.iter().any(Option::is_none) {
            return Added::Incomplete;
        }
        let Some(r) = slot.take() else {
            return Added::Incomplete;
        };
        let mut inner = Zeroizing::new(Vec::with_capacity(r.bytes));
        for p in r.pieces.into_iter().flatten() {
            inner.extend_from_slice(&p);
        }
        let (first, digest) = r.first.unwrap_or((PayloadType::NONE, [0; 32]));
        Added::Complete {
            first,
            inner,
            digest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frag(number: u16, total: u16, data: &[u8]) -> Fragment {
        Fragment {
            number,
            total,
            first: if number == 1 {
                PayloadType::NOTIFY
            } else {
                PayloadType::NONE
            },
            inner: Zeroizing::new(data.to_vec()),
        }
    }

    #[test]
    fn fragments_in_any_order_make_the_message_once() {
        let mut slot = None;
        assert!(matches!(
            Reassembly::add(&mut slot, 1, frag(3, 3, b"c"), [3; 32]),
            Added::Incomplete
        ));
        assert!(matches!(
            Reassembly::add(&mut slot, 1, frag(1, 3, b"a"), [1; 32]),
            Added::Incomplete
        ));
        assert!(matches!(
            Reassembly::add(&mut slot, 1, frag(1, 3, b"a"), [1; 32]),
            Added::Duplicate
        ));
        match Reassembly::add(&mut slot, 1, frag(2, 3, b"b"), [2; 32]) {
            Added::Complete {
                first,
                inner,
                digest,
            } => {
                assert_eq!((first, &inner[..]), (PayloadType::NOTIFY, &b"abc"[..]));
                assert_eq!(digest, [1; 32], "the first fragment's");
            }
            _ => panic!("not complete"),
        }
        assert!(slot.is_none());
    }

    #[test]
    fn smaller_fragments_start_again_and_older_ones_are_stale() {
        let mut slot = None;
        let _ = Reassembly::add(&mut slot, 1, frag(1, 2, b"ab"), [0; 32]);
        // The sender went to smaller fragments (§2.5.2): start over.
        assert!(matches!(
            Reassembly::add(&mut slot, 1, frag(1, 4, b"a"), [0; 32]),
            Added::Incomplete
        ));
        assert!(matches!(
            Reassembly::add(&mut slot, 1, frag(2, 2, b"cd"), [0; 32]),
            Added::Refused
        ));
        // Another message ID replaces the one in progress.
        assert!(matches!(
            Reassembly::add(&mut slot, 2, frag(1, 2, b"x"), [0; 32]),
            Added::Incomplete
        ));
    }

    #[test]
    fn bounds_hold() {
        let mut slot = None;
        assert!(matches!(
            Reassembly::add(&mut slot, 1, frag(1, MAX_FRAGMENTS + 1, b"a"), [0; 32]),
            Added::Refused
        ));
        let big = vec![0u8; MAX_REASSEMBLED / 2 + 1];
        let _ = Reassembly::add(&mut slot, 1, frag(1, 3, &big), [0; 32]);
        assert!(matches!(
            Reassembly::add(&mut slot, 1, frag(2, 3, &big), [0; 32]),
            Added::Refused
        ));
        assert!(slot.is_none(), "what was held is let go");
    }
}
