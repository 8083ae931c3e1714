//! TCP encapsulation of IKE and ESP (RFC 9329): the stream prefix and the
//! 16-bit length framing, as a sans-I/O reader of a byte stream.
//!
//! ```text
//! The TCP Originator's stream starts with the prefix (§4), once:
//! +-----+-----+-----+-----+-----+-----+
//! | 'I' | 'K' | 'E' | 'T' | 'C' | 'P' |
//! +-----+-----+-----+-----+-----+-----+
//!
//! Then, in both directions, frames (§3). IKE (§3.1):
//!  0                   1                   2                   3
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |             Length            |         Non-ESP Marker        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         Non-ESP Marker        |        IKE header ...         |
//!
//! ESP (§3.2):
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |             Length            |       ESP header (SPI) ...    |
//! ```
//!
//! The Length counts itself: a frame carries at most 65533 bytes. What
//! follows the Length is exactly what a UDP payload on port 4500 holds
//! (RFC 3948), so [`crate::udp_encap::classify`] tells the frames apart.

/// The stream prefix the TCP Originator sends first (RFC 9329 §4).
pub const PREFIX: [u8; 6] = *b"IKETCP";

/// Size of the Length field.
pub const LENGTH_LEN: usize = 2;

/// The largest message one frame carries (§3: 65535 less the Length).
pub const MAX_MESSAGE: usize = u16::MAX as usize - LENGTH_LEN;

/// A deframer's buffer larger than this shrinks once it has been read.
const SHRINK_ABOVE: usize = 256 << 10;

/// Why a stream cannot be read on: each is fatal for the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamError {
    /// The stream did not begin with "IKETCP" (§4; §6.1: nothing is
    /// accepted on a connection without it).
    BadPrefix,
    /// A Length of 0 or 1 (§3.1, §3.2: "MUST be treated as fatal").
    BadLength,
}

impl core::fmt::Display for StreamError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            StreamError::BadPrefix => "the stream does not begin with IKETCP",
            StreamError::BadLength => "a frame length of 0 or 1",
        })
    }
}

/// The Length field of a frame carrying `message`; `None` past
/// [`MAX_MESSAGE`].
pub fn length_field(message: usize) -> Option<[u8; LENGTH_LEN]> {
    let n = u16::try_from(message.checked_add(LENGTH_LEN)?).ok()?;
    Some(n.to_be_bytes())
}

/// Append `message` as one frame (its Length, then the bytes) to `out`;
/// false, and nothing appended, past [`MAX_MESSAGE`].
pub fn push_frame(out: &mut Vec<u8>, message: &[u8]) -> bool {
    let Some(len) = length_field(message.len()) else {
        return false;
    };
    out.extend_from_slice(&len);
    out.extend_from_slice(message);
    true
}

/// Reads frames out of a byte stream fed in pieces of any size.
///
/// It holds at most one partial frame (under 64 KiB) between two calls of
/// [`Deframer::feed`]; the caller drains the frames of each piece with
/// [`Deframer::next`] before feeding the next one.
#[derive(Debug, Clone)]
pub struct Deframer {
    /// Bytes of the prefix still expected (6 on the Responder's side of a
    /// new stream, 0 on the Originator's).
    prefix_left: usize,
    /// Unread bytes.
    buf: Vec<u8>,
    /// Where the unread part of `buf` starts.
    at: usize,
    failed: Option<StreamError>,
    /// Empty frames (Length 2) skipped (§3: "silently ignored").
    pub empty: u64,
}

impl Deframer {
    /// The TCP Responder's reader: the stream must start with the prefix.
    pub fn responder() -> Self {
        Deframer::with_prefix(PREFIX.len())
    }

    /// The TCP Originator's reader: frames from the first byte.
    pub fn originator() -> Self {
        Deframer::with_prefix(0)
    }

    fn with_prefix(prefix_left: usize) -> Self {
        Deframer {
            prefix_left,
            buf: Vec::new(),
            at: 0,
            failed: None,
            empty: 0,
        }
    }

    /// Whether the prefix has been read (always, on the Originator's side).
    pub fn prefix_seen(&self) -> bool {
        self.prefix_left == 0
    }

    /// Bytes held: a partial frame (or prefix).
    pub fn pending(&self) -> usize {
        self.buf.len() - self.at
    }

    /// Take in the next bytes of the stream.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.at > 0 {
            self.buf.drain(..self.at);
            self.at = 0;
        }
        // A burst read at once is not kept as the buffer's size for good.
        if self.buf.capacity() > SHRINK_ABOVE && self.buf.len() + bytes.len() <= SHRINK_ABOVE / 2 {
            self.buf.shrink_to(SHRINK_ABOVE / 2);
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole frame's message (without its Length), `Ok(None)`
    /// when more bytes are needed, or why the stream is broken (and will
    /// stay so).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<&[u8]>, StreamError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        while self.prefix_left > 0 {
            let Some(&b) = self.buf.get(self.at) else {
                return Ok(None);
            };
            if b != PREFIX[PREFIX.len() - self.prefix_left] {
                return Err(*self.failed.insert(StreamError::BadPrefix));
            }
            self.at += 1;
            self.prefix_left -= 1;
        }
        loop {
            let rest = &self.buf[self.at..];
            let Some(len) = rest.get(..LENGTH_LEN) else {
                return Ok(None);
            };
            let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
            if len < LENGTH_LEN {
                return Err(*self.failed.insert(StreamError::BadLength));
            }
            if rest.len() < len {
                return Ok(None);
            }
            let start = self.at + LENGTH_LEN;
            self.at += len;
            if len == LENGTH_LEN {
                self.empty += 1;
                continue;
            }
            return Ok(Some(&self.buf[start..self.at]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(d: &mut Deframer) -> Result<Vec<Vec<u8>>, StreamError> {
        let mut out = Vec::new();
        while let Some(f) = d.next()? {
            out.push(f.to_vec());
        }
        Ok(out)
    }

    #[test]
    fn test_emit() {
        let mut out = Vec::new();
        assert!(push_frame(&mut out, &[0, 0, 0, 0, 0x21]));
        assert_eq!(out, [0x00, 0x07, 0, 0, 0, 0, 0x21]);
        assert!(!push_frame(&mut out, &vec![0; MAX_MESSAGE + 1]));
        assert_eq!(out.len(), 7);
        assert_eq!(length_field(MAX_MESSAGE), Some([0xff, 0xff]));
    }

    #[test]
    fn test_parse_byte_by_byte() {
        let mut stream = PREFIX.to_vec();
        push_frame(&mut stream, &[0, 0, 0, 0, 1, 2, 3]);
        stream.extend_from_slice(&[0x00, 0x02]); // empty: ignored
        push_frame(&mut stream, &[0xff]);
        push_frame(&mut stream, &[0x10, 0, 0, 1, 0, 0, 0, 9]);
        let mut d = Deframer::responder();
        let mut got = Vec::new();
        for b in &stream {
            d.feed(&[*b]);
            got.extend(frames(&mut d).unwrap());
        }
        assert_eq!(
            got,
            vec![
                vec![0, 0, 0, 0, 1, 2, 3],
                vec![0xff],
                vec![0x10, 0, 0, 1, 0, 0, 0, 9]
            ]
        );
        assert_eq!(d.empty, 1);
        assert_eq!(d.pending(), 0);
    }

    #[test]
    fn test_parse_all_at_once() {
        let mut stream = Vec::new();
        for n in [1usize, 100, MAX_MESSAGE] {
            push_frame(&mut stream, &vec![7; n]);
        }
        let mut d = Deframer::originator();
        d.feed(&stream);
        let got = frames(&mut d).unwrap();
        assert_eq!(
            got.iter().map(Vec::len).collect::<Vec<_>>(),
            [1, 100, MAX_MESSAGE]
        );
    }

    #[test]
    fn test_bad_prefix() {
        let mut d = Deframer::responder();
        d.feed(b"IKE");
        assert_eq!(d.next(), Ok(None));
        d.feed(b"UDP\x00\x05abc");
        assert_eq!(d.next(), Err(StreamError::BadPrefix));
        // It stays broken.
        d.feed(b"IKETCP");
        assert_eq!(d.next(), Err(StreamError::BadPrefix));
    }

    #[test]
    fn test_bad_length() {
        for len in [[0u8, 0], [0, 1]] {
            let mut d = Deframer::originator();
            d.feed(&len);
            assert_eq!(d.next(), Err(StreamError::BadLength));
        }
    }

    #[test]
    fn test_buffer_shrinks_after_a_burst() {
        let mut burst = Vec::new();
        for _ in 0..100 {
            push_frame(&mut burst, &[9; 10_000]);
        }
        let mut d = Deframer::originator();
        d.feed(&burst);
        while d.next().unwrap().is_some() {}
        d.feed(&[0, 5, 1]);
        assert!(
            d.buf.capacity() <= SHRINK_ABOVE / 2 + 64,
            "{}",
            d.buf.capacity()
        );
        assert_eq!(d.next(), Ok(None));
        d.feed(&[2, 3]);
        assert_eq!(d.next(), Ok(Some(&[1u8, 2, 3][..])));
    }

    #[test]
    fn test_partial_frame_held() {
        // A Length of 65535 then nothing: held, never more than one frame.
        let mut d = Deframer::originator();
        d.feed(&[0xff, 0xff, 1, 2, 3]);
        assert_eq!(d.next(), Ok(None));
        assert_eq!(d.pending(), 5);
    }
}
