//! [`PacketBuf`]: a caller-owned packet buffer with headroom and tailroom,
//! so that headers and trailers are added in place (wireguard-go's
//! `offset`, Linux's `skb_push`/`skb_put`).
//!
//! The buffer is allocated once (from a pool, by whoever owns the I/O) and
//! reused for every packet; nothing here allocates after construction.

use core::fmt;

/// Headroom that fits every header flowsec adds in front of a packet:
/// outer IPv6 (40) + UDP (8) + AH with the largest ICV (12 + 32, padded) +
/// ESP header and IV (8 + 16), twice for a nested tunnel, rounded up.
pub const DEFAULT_HEADROOM: usize = 256;
/// Tailroom for ESP padding (≤ 255 + 2) and ICV (≤ 32), with TFC padding
/// room to spare.
pub const DEFAULT_TAILROOM: usize = 512;

/// The buffer has no room left at the front or back for what was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoRoom;

impl fmt::Display for NoRoom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("packet buffer has no room left")
    }
}

impl std::error::Error for NoRoom {}

/// A packet in the middle of a fixed-capacity buffer.
///
/// The packet occupies `storage[head..tail]`; `head` bytes of headroom lie
/// before it and `capacity - tail` bytes of tailroom after it.
#[derive(Clone)]
pub struct PacketBuf {
    storage: Box<[u8]>,
    head: usize,
    tail: usize,
}

impl fmt::Debug for PacketBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PacketBuf")
            .field("len", &self.len())
            .field("headroom", &self.headroom())
            .field("tailroom", &self.tailroom())
            .finish()
    }
}

impl PacketBuf {
    /// An empty buffer of `capacity` bytes whose packets start `headroom`
    /// bytes in.
    pub fn new(capacity: usize, headroom: usize) -> Self {
        let headroom = headroom.min(capacity);
        PacketBuf {
            storage: vec![0; capacity].into_boxed_slice(),
            head: headroom,
            tail: headroom,
        }
    }

    /// A buffer sized for `max_packet` bytes plus the default head- and
    /// tailroom, holding a copy of `packet`.
    pub fn from_packet(packet: &[u8]) -> Self {
        let mut buf = PacketBuf::new(
            DEFAULT_HEADROOM + packet.len().max(2048) + DEFAULT_TAILROOM,
            DEFAULT_HEADROOM,
        );
        buf.tail = buf.head + packet.len();
        buf.storage[buf.head..buf.tail].copy_from_slice(packet);
        buf
    }

    /// Bytes of storage: headroom, packet and tailroom together.
    pub fn capacity(&self) -> usize {
        self.storage.len()
    }

    /// Empty the buffer and put the start of the next packet `headroom`
    /// bytes in.
    pub fn reset(&mut self, headroom: usize) {
        self.head = headroom.min(self.storage.len());
        self.tail = self.head;
    }

    /// Replace the contents with a copy of `packet` at the current head.
    pub fn set(&mut self, packet: &[u8]) -> Result<(), NoRoom> {
        if self.storage.len() - self.head < packet.len() {
            return Err(NoRoom);
        }
        self.tail = self.head + packet.len();
        self.storage[self.head..self.tail].copy_from_slice(packet);
        Ok(())
    }

    /// Set the packet length to `len` bytes from the current head (after the
    /// caller wrote them through [`spare_mut`](Self::spare_mut), e.g. from a
    /// `read` into the buffer).
    pub fn set_len(&mut self, len: usize) -> Result<(), NoRoom> {
        if self.storage.len() - self.head < len {
            return Err(NoRoom);
        }
        self.tail = self.head + len;
        Ok(())
    }

    /// Everything from the head to the end of the storage, for reading a
    /// packet into the buffer.
    pub fn spare_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.head..]
    }

    /// The packet.
    pub fn as_slice(&self) -> &[u8] {
        &self.storage[self.head..self.tail]
    }

    /// The packet, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.head..self.tail]
    }

    /// Packet length.
    pub fn len(&self) -> usize {
        self.tail - self.head
    }

    /// Whether the packet is empty.
    pub fn is_empty(&self) -> bool {
        self.tail == self.head
    }

    /// Free bytes in front of the packet.
    pub fn headroom(&self) -> usize {
        self.head
    }

    /// Free bytes after the packet.
    pub fn tailroom(&self) -> usize {
        self.storage.len() - self.tail
    }

    /// Grow the packet by `n` bytes at the front; returns the new bytes
    /// (their contents are unspecified).
    pub fn prepend(&mut self, n: usize) -> Result<&mut [u8], NoRoom> {
        if n > self.head {
            return Err(NoRoom);
        }
        self.head -= n;
        Ok(&mut self.storage[self.head..self.head + n])
    }

    /// Grow the packet by `n` bytes at the back; returns the new bytes
    /// (their contents are unspecified).
    pub fn append(&mut self, n: usize) -> Result<&mut [u8], NoRoom> {
        if n > self.tailroom() {
            return Err(NoRoom);
        }
        self.tail += n;
        Ok(&mut self.storage[self.tail - n..self.tail])
    }

    /// Drop `n` bytes from the front. Panics if `n > len()` (a caller bug:
    /// callers check lengths against parsed headers first).
    pub fn trim_front(&mut self, n: usize) {
        assert!(n <= self.len(), "trim_front past the end");
        self.head += n;
    }

    /// Drop `n` bytes from the back. Panics if `n > len()`.
    pub fn trim_back(&mut self, n: usize) {
        assert!(n <= self.len(), "trim_back past the start");
        self.tail -= n;
    }

    /// Open a gap of `n` bytes at offset `at` by moving the first `at`
    /// bytes `n` bytes towards the front (into the headroom). Used to insert
    /// an ESP/AH header after the IP header in transport mode: only the IP
    /// header moves, never the payload. Returns the gap.
    pub fn insert_gap(&mut self, at: usize, n: usize) -> Result<&mut [u8], NoRoom> {
        assert!(at <= self.len(), "insert_gap past the end");
        if n > self.head {
            return Err(NoRoom);
        }
        let old = self.head;
        if at > 0 {
            self.storage.copy_within(old..old + at, old - n);
        }
        self.head -= n;
        Ok(&mut self.storage[self.head + at..self.head + at + n])
    }

    /// Remove `n` bytes at offset `at` by moving the first `at` bytes `n`
    /// bytes towards the back; the reverse of [`insert_gap`](Self::insert_gap).
    /// Panics if `at + n > len()`.
    pub fn remove_gap(&mut self, at: usize, n: usize) {
        assert!(at + n <= self.len(), "remove_gap past the end");
        let old = self.head;
        self.storage.copy_within(old..old + at, old + n);
        self.head += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepend_append_trim() {
        let mut b = PacketBuf::new(64, 16);
        b.set(b"payload").unwrap();
        b.prepend(4).unwrap().copy_from_slice(b"HDR:");
        b.append(3).unwrap().copy_from_slice(b"END");
        assert_eq!(b.as_slice(), b"HDR:payloadEND");
        assert_eq!(b.headroom(), 12);
        b.trim_front(4);
        b.trim_back(3);
        assert_eq!(b.as_slice(), b"payload");
        assert_eq!(b.prepend(17), Err(NoRoom));
        assert!(b.append(64).is_err());
    }

    #[test]
    fn gaps_move_only_the_front() {
        let mut b = PacketBuf::new(64, 8);
        b.set(b"IPHDRpayload").unwrap();
        b.insert_gap(5, 3).unwrap().copy_from_slice(b"ESP");
        assert_eq!(b.as_slice(), b"IPHDRESPpayload");
        b.remove_gap(5, 3);
        assert_eq!(b.as_slice(), b"IPHDRpayload");
        assert_eq!(b.insert_gap(5, 9), Err(NoRoom));
    }
}
