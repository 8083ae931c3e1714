//! IP Payload Compression (RFC 3173) with DEFLATE (RFC 2394).
//!
//! Each packet is compressed on its own (the history is reset per packet,
//! RFC 3173 §2.1), so that loss and reordering cost nothing. The compressor,
//! decompressor and a 64 KiB scratch buffer are allocated once per SA.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Next Header  |     Flags     | Compression Parameter Index   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use core::time::Duration;

use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ipcomp::{IpCompPacket, IpCompRepr, HEADER_LEN};
use miniz_oxide::deflate::core::{
    compress, create_comp_flags_from_zip_params, CompressorOxide, TDEFLFlush, TDEFLStatus,
};
use miniz_oxide::inflate::core::{decompress, inflate_flags, DecompressorOxide};
use miniz_oxide::inflate::TINFLStatus;

use crate::buf::PacketBuf;
use crate::layout::{self, Layout};
use crate::sa::{SecurityAssociation, Transform};
use crate::DropReason;

/// Payloads shorter than this are sent uncompressed: DEFLATE cannot win on
/// them (the threshold Linux uses for deflate, `ipcomp_deflate` 90 bytes).
pub const MIN_COMPRESS_LEN: usize = 90;

/// The largest decompressed payload (an IP packet cannot be larger).
pub const MAX_PAYLOAD: usize = 65_535;

/// DEFLATE level 6 (zlib's default), raw stream (negative window bits: no
/// zlib header, as RFC 2394 §2 requires), default strategy.
const LEVEL: i32 = 6;
const RAW_WINDOW_BITS: i32 = -15;

/// Per-SA DEFLATE state.
pub(crate) struct Deflate {
    compressor: Box<CompressorOxide>,
    decompressor: Box<DecompressorOxide>,
    scratch: Box<[u8]>,
}

impl Deflate {
    pub(crate) fn new() -> Self {
        let flags = create_comp_flags_from_zip_params(LEVEL, RAW_WINDOW_BITS, 0);
        Deflate {
            compressor: Box::new(CompressorOxide::new(flags)),
            decompressor: Box::default(),
            scratch: vec![0; MAX_PAYLOAD].into_boxed_slice(),
        }
    }

    /// Compress `payload`; returns the compressed bytes if they are smaller
    /// than the payload by more than the IPComp header (RFC 3173 §2.2:
    /// otherwise the payload is sent as it is).
    pub(crate) fn compress(&mut self, payload: &[u8]) -> Option<&[u8]> {
        if payload.len() < MIN_COMPRESS_LEN {
            return None;
        }
        self.compressor.reset();
        let limit = payload
            .len()
            .saturating_sub(HEADER_LEN + 1)
            .min(self.scratch.len());
        let (status, consumed, written) = compress(
            &mut self.compressor,
            payload,
            &mut self.scratch[..limit],
            TDEFLFlush::Finish,
        );
        (status == TDEFLStatus::Done && consumed == payload.len()).then(|| &self.scratch[..written])
    }

    /// Inflate `compressed`, refusing output longer than `max`.
    pub(crate) fn decompress(&mut self, compressed: &[u8], max: usize) -> Option<&[u8]> {
        self.decompressor.init();
        let out = &mut self.scratch[..max.min(MAX_PAYLOAD)];
        let (status, _, written) = decompress(
            &mut self.decompressor,
            compressed,
            out,
            0,
            inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF,
        );
        (status == TINFLStatus::Done).then(|| &self.scratch[..written])
    }
}

/// Compress the payload at `lay.at` and put an IPComp header in front of
/// it, or leave it untouched when compression does not help.
pub(crate) fn encapsulate(
    sa: &mut SecurityAssociation,
    buf: &mut PacketBuf,
    lay: &Layout,
    now: Duration,
) -> Result<(), DropReason> {
    sa.check_lifetime(now)?;
    let Transform::IpComp(deflate) = &mut sa.transform else {
        unreachable!("ipcomp on a non-IPComp SA")
    };
    let payload_len = buf.len() - lay.at;
    let next_header = lay.next_header(buf.as_slice());
    sa.usage.record(payload_len, now);
    match deflate.compress(&buf.as_slice()[lay.at..]) {
        // RFC 3173 §2.2: sent as it is, without an IPComp header.
        None => sa.stats.ipcomp_uncompressed += 1,
        Some(compressed) => {
            buf.trim_back(payload_len);
            // Cannot fail: the compressed form is shorter than what was trimmed.
            let out = buf
                .append(HEADER_LEN + compressed.len())
                .map_err(|_| DropReason::NoRoom)?;
            let mut header = IpCompPacket::new_unchecked(out);
            IpCompRepr {
                next_header,
                // A CPI is 16 bits (RFC 3173 §3.3); the SAD keeps it as an SPI.
                cpi: sa.id.spi as u16,
            }
            .emit(&mut header);
            header.payload_mut().copy_from_slice(compressed);
            lay.set_next_header(buf.as_mut_slice(), IpProtocol::IPCOMP);
        }
    }
    // Also when nothing was compressed: a tunnel's new outer header still
    // needs its length and checksum.
    layout::finish(buf.as_mut_slice(), lay)
}

/// Inflate the IPComp payload at `lay.at`; returns its next header.
pub(crate) fn decapsulate(
    sa: &mut SecurityAssociation,
    buf: &mut PacketBuf,
    lay: &Layout,
    now: Duration,
) -> Result<IpProtocol, DropReason> {
    sa.check_lifetime(now)?;
    let Transform::IpComp(deflate) = &mut sa.transform else {
        unreachable!("ipcomp on a non-IPComp SA")
    };
    let packet = buf.as_slice();
    let next_header = IpCompPacket::new_checked(&packet[lay.at..])
        .map_err(|_| DropReason::Truncated)?
        .next_header();
    let max = MAX_PAYLOAD.saturating_sub(lay.at);
    let plain = deflate
        .decompress(&packet[lay.at + HEADER_LEN..], max)
        .ok_or(DropReason::DecompressFailed)?;
    let compressed_len = packet.len() - lay.at;
    buf.trim_back(compressed_len);
    buf.append(plain.len())
        .map_err(|_| DropReason::NoRoom)?
        .copy_from_slice(plain);
    let payload_len = plain.len();
    let packet = buf.as_mut_slice();
    lay.set_next_header(packet, next_header);
    layout::finish(packet, lay)?;
    sa.usage.record(payload_len, now);
    Ok(next_header)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let mut d = Deflate::new();
        let text: Vec<u8> = b"The quick brown fox jumps over the lazy dog. ".repeat(30);
        let packed = d.compress(&text).expect("compressible").to_vec();
        assert!(packed.len() < text.len() / 4);
        assert_eq!(d.decompress(&packed, MAX_PAYLOAD).unwrap(), &text[..]);
        // Output limit enforced (no decompression bombs).
        assert!(d.decompress(&packed, 100).is_none());
        // Garbage is refused, not panicked on.
        assert!(d.decompress(&[0xff; 40], MAX_PAYLOAD).is_none());
        // Incompressible data is not compressed.
        let mut x = 1u32;
        let noise: Vec<u8> = (0..1400)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        assert!(d.compress(&noise).is_none());
        assert!(d.compress(&text[..50]).is_none(), "below the threshold");
    }
}
