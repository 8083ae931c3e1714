//! The anti-replay window of RFC 4303 §3.4.3 and Appendix A (also used by
//! AH, RFC 4302 §3.4.3), with Extended Sequence Numbers.
//!
//! A [`ReplayWindow`] rejects sequence numbers it has already accepted and
//! those that fall to the left of its window. Use it in two steps, as the RFC
//! requires: [`check`](ReplayWindow::check) *before* verifying the ICV
//! (cheap rejection, and it reconstructs the high 32 bits with ESN), then
//! [`commit`](ReplayWindow::commit) only *after* the ICV verified, so that a
//! forged packet can never move the window.
//!
//! The window is a ring of bits over sequence numbers (as in Linux's
//! `xfrm_replay_advance_esn` and wireguard-go's `replay.Filter`): advancing by
//! `d` clears `d` bits, so a check or commit is O(1) except for large jumps.
//! Storage is a fixed array (no allocation), sized for the largest window.

use core::fmt;

/// Smallest configurable window (RFC 4303 §3.4.3: "a minimum window size of
/// 32 packets MUST be supported").
pub const MIN_WINDOW: u32 = 32;
/// Largest configurable window (implementation limit, as Linux's
/// `XFRMA_REPLAY_ESN_VAL` default maximum of 4096).
pub const MAX_WINDOW: u32 = 4096;

const WORD_BITS: u64 = 64;
/// One word more than the largest window, so that the word holding the
/// current top never overlaps the oldest word still inside the window.
const RING_WORDS: usize = (MAX_WINDOW as usize / 64) + 1;
const RING_BITS: u64 = RING_WORDS as u64 * WORD_BITS;

/// Why a sequence number was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplayError {
    /// Already received (a duplicate or a replay).
    Replayed,
    /// To the left of the window: too old to tell, so refused.
    TooOld,
    /// Sequence number zero is never sent (RFC 4303 §3.3.3: the first packet
    /// carries 1).
    Zero,
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReplayError::Replayed => "sequence number already received",
            ReplayError::TooOld => "sequence number left of the replay window",
            ReplayError::Zero => "sequence number zero",
        })
    }
}

/// A window size outside [`MIN_WINDOW`]..=[`MAX_WINDOW`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadWindowSize(pub u32);

impl fmt::Display for BadWindowSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "replay window {} outside {MIN_WINDOW}..={MAX_WINDOW} (or 0 to disable)",
            self.0
        )
    }
}

impl std::error::Error for BadWindowSize {}

/// Receiver-side anti-replay state for one SA.
///
/// A window of size 0 is *disabled*: every non-zero sequence number is
/// accepted (RFC 4303 §3.4.3 lets the receiver turn anti-replay off, and
/// setkey SAs without `-r` have it off), but the highest one is still
/// tracked so that ESN reconstruction works.
#[derive(Clone)]
pub struct ReplayWindow {
    size: u32,
    esn: bool,
    /// Highest sequence number committed so far (0: none yet).
    top: u64,
    ring: [u64; RING_WORDS],
}

impl fmt::Debug for ReplayWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplayWindow")
            .field("size", &self.size)
            .field("esn", &self.esn)
            .field("top", &self.top)
            .finish_non_exhaustive()
    }
}

impl ReplayWindow {
    /// A window of `size` packets (0 disables replay checks), with or
    /// without Extended Sequence Numbers.
    pub fn new(size: u32, esn: bool) -> Result<Self, BadWindowSize> {
        if size != 0 && !(MIN_WINDOW..=MAX_WINDOW).contains(&size) {
            return Err(BadWindowSize(size));
        }
        Ok(ReplayWindow {
            size,
            esn,
            top: 0,
            ring: [0; RING_WORDS],
        })
    }

    /// The configured size (0: disabled).
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Whether ESN is on.
    pub fn esn(&self) -> bool {
        self.esn
    }

    /// The highest sequence number committed so far.
    pub fn top(&self) -> u64 {
        self.top
    }

    /// Reconstruct the full sequence number of a packet carrying `seq_low`
    /// and check it against the window, without changing anything.
    pub fn check(&self, seq_low: u32) -> Result<u64, ReplayError> {
        let seq = if self.esn {
            self.reconstruct(seq_low)?
        } else {
            u64::from(seq_low)
        };
        if seq == 0 {
            return Err(ReplayError::Zero);
        }
        if self.size == 0 || seq > self.top {
            return Ok(seq);
        }
        if self.top - seq >= u64::from(self.size) {
            return Err(ReplayError::TooOld);
        }
        let (word, bit) = Self::position(seq);
        if self.ring[word] & bit != 0 {
            return Err(ReplayError::Replayed);
        }
        Ok(seq)
    }

    /// Record `seq` (as returned by [`check`](Self::check)) as received.
    /// Call only after the packet's ICV verified. The window is checked
    /// again, so that a duplicate that passed `check` while its twin was
    /// being verified (or a commit that comes late, after the window moved)
    /// is refused rather than recorded in the wrong lap of the ring.
    pub fn commit(&mut self, seq: u64) -> Result<(), ReplayError> {
        if seq == 0 {
            return Err(ReplayError::Zero);
        }
        if seq > self.top {
            self.advance(seq);
        } else if self.size != 0 && self.top - seq >= u64::from(self.size) {
            return Err(ReplayError::TooOld);
        }
        if self.size != 0 {
            let (word, bit) = Self::position(seq);
            if self.ring[word] & bit != 0 {
                return Err(ReplayError::Replayed);
            }
            self.ring[word] |= bit;
        }
        Ok(())
    }

    /// RFC 4303 Appendix A.2.2: choose the high 32 bits so that the
    /// sequence number falls in (or right of) the window. `W` here is the
    /// window size, or 2^31 when the window is disabled so that
    /// reconstruction still tolerates loss.
    fn reconstruct(&self, seq_low: u32) -> Result<u64, ReplayError> {
        let w = if self.size == 0 {
            1u32 << 31
        } else {
            self.size
        };
        let th = (self.top >> 32) as u32;
        let tl = self.top as u32;
        let bottom = tl.wrapping_sub(w).wrapping_add(1);
        let seq_high = if tl >= w - 1 {
            // Case A: the window lies within one sub-space.
            if seq_low >= bottom {
                th
            } else {
                th.checked_add(1).ok_or(ReplayError::TooOld)?
            }
        } else {
            // Case B: the window spans two sub-spaces.
            if seq_low >= bottom {
                th.checked_sub(1).ok_or(ReplayError::TooOld)?
            } else {
                th
            }
        };
        Ok((u64::from(seq_high) << 32) | u64::from(seq_low))
    }

    fn advance(&mut self, seq: u64) {
        if self.size != 0 {
            let diff = seq - self.top;
            if diff >= RING_BITS {
                self.ring = [0; RING_WORDS];
            } else {
                // Clear every word entered between the old top and `seq`.
                let old_word = (self.top / WORD_BITS) % RING_WORDS as u64;
                let words = (seq / WORD_BITS) - (self.top / WORD_BITS);
                for i in 1..=words.min(RING_WORDS as u64) {
                    self.ring[((old_word + i) % RING_WORDS as u64) as usize] = 0;
                }
            }
        }
        self.top = seq;
    }

    fn position(seq: u64) -> (usize, u64) {
        let word = ((seq / WORD_BITS) % RING_WORDS as u64) as usize;
        (word, 1u64 << (seq % WORD_BITS))
    }
}

#[cfg(test)]
mod tests;
