//! Security associations (RFC 4301 §4.4.2): what an SA is configured with
//! ([`SaConfig`]) and the live SA ([`SecurityAssociation`]) with its
//! transform, sequence counter, replay window, lifetime and counters.

use core::fmt;
use core::time::Duration;
use std::net::IpAddr;

use flowsec_crypto::policy::{encr_requirement, integ_requirement, Requirement};
use flowsec_crypto::{CryptoError, EncrId, EspTransform, IntegId, Integrity, Provider};
use flowsec_wire::iana::{IpProtocol, IpcompId};
use zeroize::Zeroizing;

use crate::ipcomp::Deflate;
use crate::lifetime::{Lifetime, SaState, Usage};
use crate::replay::{BadWindowSize, ReplayWindow};
use crate::tunnel::OuterHeader;
use crate::DropReason;

/// The IPsec protocol an SA implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    /// Encapsulating Security Payload, RFC 4303.
    Esp,
    /// Authentication Header, RFC 4302.
    Ah,
    /// IP Payload Compression, RFC 3173 (its "SPI" is the 16-bit CPI).
    IpComp,
}

impl Protocol {
    /// The IP protocol number of its header.
    pub fn ip_protocol(self) -> IpProtocol {
        match self {
            Protocol::Esp => IpProtocol::ESP,
            Protocol::Ah => IpProtocol::AH,
            Protocol::IpComp => IpProtocol::IPCOMP,
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Esp => "esp",
            Protocol::Ah => "ah",
            Protocol::IpComp => "ipcomp",
        })
    }
}

/// Tunnel or transport mode (RFC 4301 §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The IPsec header goes between the IP header and its payload.
    Transport,
    /// The whole packet is carried inside a new outer IP header.
    Tunnel,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Transport => "transport",
            Mode::Tunnel => "tunnel",
        })
    }
}

/// What carries an encapsulated ESP SA's packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum EncapTransport {
    /// UDP datagrams (RFC 3948).
    #[default]
    Udp,
    /// Frames of a TCP stream, plain or inside TLS (RFC 9329): the stream
    /// between the SA's addresses and these ports.
    Tcp,
}

/// Encapsulation of ESP outside IP: the ports of the outer UDP header
/// (RFC 3948), or of the TCP connection that carries it (RFC 9329).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpEncap {
    /// Source port (ours), usually 4500 (0 for a TCP connection we
    /// originate: any port of ours).
    pub src_port: u16,
    /// Destination port (the peer's), usually 4500.
    pub dst_port: u16,
    /// UDP or a TCP stream.
    pub transport: EncapTransport,
}

impl UdpEncap {
    /// ESP in UDP between these ports.
    pub fn udp(src_port: u16, dst_port: u16) -> Self {
        UdpEncap {
            src_port,
            dst_port,
            transport: EncapTransport::Udp,
        }
    }

    /// ESP in a TCP stream between these ports.
    pub fn tcp(src_port: u16, dst_port: u16) -> Self {
        UdpEncap {
            src_port,
            dst_port,
            transport: EncapTransport::Tcp,
        }
    }
}

/// The identity of an SA on receipt: (protocol, SPI, destination).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SaId {
    /// ESP, AH or IPComp.
    pub protocol: Protocol,
    /// SPI (or CPI for IPComp).
    pub spi: u32,
    /// Destination address.
    pub dst: IpAddr,
}

impl fmt::Display for SaId {
    /// `esp SPI 0x00001001 to 192.0.2.2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} SPI {:#010x} to {}",
            self.protocol, self.spi, self.dst
        )
    }
}

/// Everything needed to create an SA, as manual keying (setkey) or IKE
/// gives it. Keys are zeroized when this is dropped.
#[derive(Clone)]
pub struct SaConfig {
    /// ESP, AH or IPComp.
    pub protocol: Protocol,
    /// SPI, or the CPI for IPComp.
    pub spi: u32,
    /// Tunnel or transport.
    pub mode: Mode,
    /// Source address (outer source in tunnel mode).
    pub src: IpAddr,
    /// Destination address (outer destination in tunnel mode).
    pub dst: IpAddr,
    /// UDP encapsulation (ESP only).
    pub encap: Option<UdpEncap>,
    /// ESP encryption (or combined-mode) algorithm; `NULL` for AH/IPComp.
    pub encr: EncrId,
    /// Encryption key material (with salt/nonce for GCM, CCM, CTR, ChaCha).
    pub encr_key: Zeroizing<Vec<u8>>,
    /// Integrity algorithm (ESP with a non-AEAD cipher, or AH).
    pub integ: IntegId,
    /// Integrity key.
    pub integ_key: Zeroizing<Vec<u8>>,
    /// IPComp algorithm (IPComp only).
    pub ipcomp: IpcompId,
    /// Anti-replay window in packets; 0 disables the check.
    pub replay_window: u32,
    /// Extended (64-bit) sequence numbers.
    pub esn: bool,
    /// Soft and hard lifetime.
    pub lifetime: Lifetime,
    /// Pad the payload of tunnel-mode ESP to at least this many bytes
    /// (traffic flow confidentiality, RFC 4303 §2.7); 0 for none.
    pub tfc_pad_to: u16,
    /// The request id that ties the SA to policies (setkey `-u`).
    pub reqid: u32,
    /// An outbound per-resource SA (RFC 9611 §2): only worker `cpu`
    /// (modulo the number of workers) seals with it, in the flow-parallel
    /// mode; `None` for the policy's ordinary (fallback) SA. Like Linux's
    /// `XFRMA_SA_PCPU`.
    pub cpu: Option<u32>,
}

impl fmt::Debug for SaConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the keys.
        f.debug_struct("SaConfig")
            .field("protocol", &self.protocol)
            .field("spi", &format_args!("{:#010x}", self.spi))
            .field("mode", &self.mode)
            .field("src", &self.src)
            .field("dst", &self.dst)
            .field("encap", &self.encap)
            .field("encr", &self.encr)
            .field("integ", &self.integ)
            .field("replay_window", &self.replay_window)
            .field("esn", &self.esn)
            .field("cpu", &self.cpu)
            .finish_non_exhaustive()
    }
}

impl SaConfig {
    /// (protocol, SPI, destination): what names the SA it makes.
    pub fn id(&self) -> SaId {
        SaId {
            protocol: self.protocol,
            spi: self.spi,
            dst: self.dst,
        }
    }

    /// An ESP SA with no keys yet: fill in algorithms and keys.
    pub fn esp(spi: u32, mode: Mode, src: IpAddr, dst: IpAddr) -> Self {
        SaConfig {
            protocol: Protocol::Esp,
            spi,
            mode,
            src,
            dst,
            encap: None,
            encr: EncrId::NULL,
            encr_key: Zeroizing::new(Vec::new()),
            integ: IntegId::NONE,
            integ_key: Zeroizing::new(Vec::new()),
            ipcomp: IpcompId::DEFLATE,
            replay_window: 64,
            esn: false,
            lifetime: Lifetime::default(),
            tfc_pad_to: 0,
            reqid: 0,
            cpu: None,
        }
    }

    /// An AH SA with no key yet: fill in the integrity algorithm and key.
    pub fn ah(spi: u32, mode: Mode, src: IpAddr, dst: IpAddr) -> Self {
        SaConfig {
            protocol: Protocol::Ah,
            ..SaConfig::esp(spi, mode, src, dst)
        }
    }

    /// An IPComp SA (DEFLATE) with CPI `cpi`.
    pub fn ipcomp(cpi: u16, mode: Mode, src: IpAddr, dst: IpAddr) -> Self {
        SaConfig {
            protocol: Protocol::IpComp,
            ..SaConfig::esp(u32::from(cpi), mode, src, dst)
        }
    }

    /// Set the encryption algorithm and key.
    pub fn with_encr(mut self, encr: EncrId, key: &[u8]) -> Self {
        self.encr = encr;
        self.encr_key = Zeroizing::new(key.to_vec());
        self
    }

    /// Set the integrity algorithm and key.
    pub fn with_integ(mut self, integ: IntegId, key: &[u8]) -> Self {
        self.integ = integ;
        self.integ_key = Zeroizing::new(key.to_vec());
        self
    }

    /// The RFC 8221 warnings that apply to this SA's algorithms.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.protocol == Protocol::Esp && encr_requirement(self.encr).warn() {
            out.push(format!(
                "{}: encryption {} is {}",
                self.spi_display(),
                self.encr,
                encr_requirement(self.encr)
            ));
        }
        if self.integ != IntegId::NONE && integ_requirement(self.integ).warn() {
            out.push(format!(
                "{}: integrity {} is {}",
                self.spi_display(),
                self.integ,
                integ_requirement(self.integ)
            ));
        }
        if self.protocol == Protocol::Esp
            && self.integ == IntegId::NONE
            && !flowsec_crypto::esp::is_aead(self.encr)
        {
            let level = Requirement::MustNot;
            out.push(format!(
                "{}: ESP encryption without integrity is {level}, and has no anti-replay",
                self.spi_display()
            ));
        }
        out
    }

    /// Whether packets of this SA carry an ICV (AH, an AEAD, or ESP with an
    /// integrity algorithm).
    pub fn has_integrity(&self) -> bool {
        match self.protocol {
            Protocol::Ah => true,
            Protocol::Esp => self.integ != IntegId::NONE || flowsec_crypto::esp::is_aead(self.encr),
            Protocol::IpComp => false,
        }
    }

    fn spi_display(&self) -> String {
        format!("{} SPI {:#x}", self.protocol, self.spi)
    }
}

/// Why an SA could not be created from its [`SaConfig`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SaError {
    /// The algorithms or keys were refused.
    Crypto(CryptoError),
    /// The replay window size is out of range.
    Window(BadWindowSize),
    /// Options that do not apply to the protocol (e.g. UDP encapsulation of
    /// AH, an encryption algorithm on AH, an integrity-less AH).
    Inconsistent(&'static str),
    /// The IPComp algorithm is not supported (only DEFLATE is).
    UnsupportedIpcomp(IpcompId),
}

impl fmt::Display for SaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SaError::Crypto(e) => e.fmt(f),
            SaError::Window(e) => e.fmt(f),
            SaError::Inconsistent(why) => f.write_str(why),
            SaError::UnsupportedIpcomp(id) => write!(f, "IPComp algorithm {id} not supported"),
        }
    }
}

impl std::error::Error for SaError {}

impl From<CryptoError> for SaError {
    fn from(e: CryptoError) -> Self {
        SaError::Crypto(e)
    }
}

/// Without ESN, where an SA's sequence counter counts as a soft limit:
/// 2^32 - 2^28, leaving 268 million packets (minutes at line rate) for the
/// rekey before the counter stops at 2^32 - 1.
pub const SEQ_SOFT_NO_ESN: u64 = 0xF000_0000;

/// Advance an outbound sequence counter: refuses to wrap without ESN
/// (RFC 4303 §3.3.3: the SA must be rekeyed) and never wraps with it.
/// A free function so that it can run while the transform is borrowed.
/// `ceiling`: the last sequence number this SA may use now (see
/// [`SecurityAssociation::set_seq_ceiling`]).
pub(crate) fn next_seq(seq: &mut u64, esn: bool, ceiling: u64) -> Result<u64, crate::DropReason> {
    let limit = if esn { u64::MAX } else { u64::from(u32::MAX) };
    if *seq >= limit {
        return Err(crate::DropReason::SeqExhausted);
    }
    if *seq >= ceiling {
        return Err(crate::DropReason::SeqUnreserved);
    }
    *seq += 1;
    Ok(*seq)
}

pub(crate) enum Transform {
    Esp(Box<dyn EspTransform>),
    Ah(Box<dyn Integrity>),
    IpComp(Box<Deflate>),
}

/// Per-SA counters, as `flowsec ctl sas` shows them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SaStats {
    /// Packets refused by the replay window.
    pub replay_drops: u64,
    /// Packets whose ICV did not verify.
    pub auth_failures: u64,
    /// Other packets dropped by this SA (padding, length, expiry).
    pub other_drops: u64,
    /// IPComp: packets sent uncompressed because compressing did not help.
    pub ipcomp_uncompressed: u64,
}

impl SaStats {
    /// Count a packet this SA refused.
    pub(crate) fn count(&mut self, reason: crate::DropReason) {
        use crate::DropReason::*;
        match reason {
            Replayed | TooOld | SeqZero => self.replay_drops += 1,
            AuthFailed => self.auth_failures += 1,
            // Traffic-flow-confidentiality dummies are dropped by design.
            DummyPacket => {}
            _ => self.other_drops += 1,
        }
    }
}

/// Where an SA's packets travel: its outer source and destination, and
/// the UDP encapsulation if it has one (what a MOBIKE update changes,
/// RFC 4555 §3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Endpoints {
    /// The outer source (ours for an outbound SA).
    pub src: IpAddr,
    /// The outer destination (part of the SA's id).
    pub dst: IpAddr,
    /// ESP in UDP with these ports, or raw.
    pub encap: Option<UdpEncap>,
}

/// A live SA.
pub struct SecurityAssociation {
    pub(crate) id: SaId,
    pub(crate) mode: Mode,
    pub(crate) src: IpAddr,
    pub(crate) encap: Option<UdpEncap>,
    pub(crate) encr: EncrId,
    pub(crate) integ: IntegId,
    pub(crate) reqid: u32,
    pub(crate) cpu: Option<u32>,
    pub(crate) esn: bool,
    pub(crate) tfc_pad_to: u16,
    pub(crate) lifetime: Lifetime,
    pub(crate) transform: Transform,
    /// Tunnel mode: the outer header template.
    pub(crate) outer: Option<OuterHeader>,
    /// The last sequence number sent (outbound).
    pub(crate) seq: u64,
    /// The last sequence number it may send for now (`u64::MAX`: no
    /// ceiling).
    pub(crate) seq_ceiling: u64,
    pub(crate) replay: ReplayWindow,
    pub(crate) usage: Usage,
    pub(crate) stats: SaStats,
    /// Parallel crypto (`crate::assigned`): the sequence number of the
    /// one packet this copy is about to seal or open, which the SA's owner
    /// assigned (outbound) or checked against its replay window
    /// (inbound). This copy's own counter, window and usage stay as they
    /// are: the owner keeps them. Taken by the ESP step that uses it.
    pub(crate) assigned: Option<u64>,
}

impl fmt::Debug for SecurityAssociation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecurityAssociation")
            .field("id", &self.id)
            .field("mode", &self.mode)
            .field("encr", &self.encr)
            .field("integ", &self.integ)
            .field("seq", &self.seq)
            .field("usage", &self.usage)
            .finish_non_exhaustive()
    }
}

impl SecurityAssociation {
    /// [`DropReason::SaExpired`] once the SA passed its hard lifetime
    /// (time, bytes or packets, RFC 4301 §4.4.2.1): it neither seals nor
    /// opens another packet.
    pub(crate) fn check_lifetime(&self, now: Duration) -> Result<(), DropReason> {
        match self.usage.expired(&self.lifetime, now) {
            true => Err(DropReason::SaExpired),
            false => Ok(()),
        }
    }

    /// Build an SA added at `now`; keys are taken from `config` into the
    /// transform (the config's copies are zeroized when it is dropped).
    pub fn new(config: &SaConfig, provider: &Provider, now: Duration) -> Result<Self, SaError> {
        let transform = match config.protocol {
            Protocol::Esp => Transform::Esp(provider.esp(
                config.encr,
                &config.encr_key,
                config.integ,
                &config.integ_key,
            )?),
            Protocol::Ah => {
                if config.encr != EncrId::NULL || !config.encr_key.is_empty() {
                    return Err(SaError::Inconsistent("AH takes no encryption algorithm"));
                }
                if config.integ == IntegId::NONE {
                    return Err(SaError::Inconsistent("AH needs an integrity algorithm"));
                }
                Transform::Ah(provider.integrity(config.integ, &config.integ_key)?)
            }
            Protocol::IpComp => {
                if config.ipcomp != IpcompId::DEFLATE {
                    return Err(SaError::UnsupportedIpcomp(config.ipcomp));
                }
                if config.spi > u32::from(u16::MAX) {
                    return Err(SaError::Inconsistent("IPComp CPI must fit in 16 bits"));
                }
                Transform::IpComp(Box::new(Deflate::new()))
            }
        };
        if config.encap.is_some() && config.protocol != Protocol::Esp {
            return Err(SaError::Inconsistent("only ESP can be UDP-encapsulated"));
        }
        if config.protocol == Protocol::Ah && config.tfc_pad_to != 0 {
            return Err(SaError::Inconsistent("TFC padding is an ESP feature"));
        }
        // Anti-replay needs integrity (RFC 4303 §3.4.3): without an ICV a
        // forged sequence number would be committed and move the window.
        let window = if config.protocol == Protocol::IpComp || !config.has_integrity() {
            0
        } else {
            config.replay_window
        };
        Ok(SecurityAssociation {
            id: config.id(),
            mode: config.mode,
            src: config.src,
            encap: config.encap,
            encr: config.encr,
            integ: config.integ,
            reqid: config.reqid,
            cpu: config.cpu,
            esn: config.esn,
            tfc_pad_to: config.tfc_pad_to,
            lifetime: config.lifetime,
            transform,
            outer: match config.mode {
                Mode::Tunnel => Some(OuterHeader::new(config.src, config.dst).ok_or(
                    SaError::Inconsistent("tunnel endpoints of different address families"),
                )?),
                Mode::Transport => None,
            },
            seq: 0,
            seq_ceiling: u64::MAX,
            replay: ReplayWindow::new(window, config.esn).map_err(SaError::Window)?,
            usage: Usage::new(now),
            stats: SaStats::default(),
            assigned: None,
        })
    }

    /// (protocol, SPI, destination).
    pub fn id(&self) -> SaId {
        self.id
    }
    /// Tunnel or transport.
    pub fn mode(&self) -> Mode {
        self.mode
    }
    /// Source address.
    pub fn src(&self) -> IpAddr {
        self.src
    }
    /// Destination address.
    pub fn dst(&self) -> IpAddr {
        self.id.dst
    }
    /// UDP encapsulation, if any.
    pub fn encap(&self) -> Option<UdpEncap> {
        self.encap
    }

    /// Move the UDP encapsulation to new ports: a NAT in front of the peer
    /// rebound it (RFC 7296 §2.23). Sequence numbers, replay window and
    /// counters stay; only an SA that is encapsulated already changes.
    pub fn set_encap_ports(&mut self, encap: UdpEncap) {
        if self.encap.is_some() {
            self.encap = Some(encap);
        }
    }
    /// Move the SA to new outer addresses (a MOBIKE update, RFC 4555
    /// §3.5): `src` → `dst`, ESP in UDP with `encap` or raw, as NAT
    /// detection on the new path says. Its keys, sequence numbers, replay
    /// window and counters stay. Refused, with nothing changed, for
    /// endpoints of mixed families or UDP encapsulation of anything but
    /// ESP. The id changes with `dst`: a [`crate::Sad`] holds it under
    /// the old one, so move it there with [`crate::Sad::move_sa`].
    pub fn set_endpoints(&mut self, to: Endpoints) -> Result<(), SaError> {
        let Endpoints { src, dst, encap } = to;
        if encap.is_some() && self.id.protocol != Protocol::Esp {
            return Err(SaError::Inconsistent("only ESP can be UDP-encapsulated"));
        }
        let outer = match self.mode {
            Mode::Tunnel => Some(OuterHeader::new(src, dst).ok_or(SaError::Inconsistent(
                "tunnel endpoints of different address families",
            ))?),
            Mode::Transport => None,
        };
        self.outer = outer;
        self.src = src;
        self.id.dst = dst;
        self.encap = encap;
        Ok(())
    }
    /// Encryption algorithm.
    pub fn encr(&self) -> EncrId {
        self.encr
    }
    /// Integrity algorithm.
    pub fn integ(&self) -> IntegId {
        self.integ
    }
    /// Request id.
    pub fn reqid(&self) -> u32 {
        self.reqid
    }
    /// The worker a per-resource SA belongs to (see [`SaConfig::cpu`]).
    pub fn cpu(&self) -> Option<u32> {
        self.cpu
    }
    /// Whether ESN is on.
    pub fn esn(&self) -> bool {
        self.esn
    }
    /// The last sequence number sent.
    pub fn seq(&self) -> u64 {
        self.seq
    }
    /// The receive window.
    pub fn replay_window(&self) -> &ReplayWindow {
        &self.replay
    }
    /// The receive window, mutably: for moving replay state between SAs or
    /// processes (and for tests that start near 2^32).
    pub fn replay_window_mut(&mut self) -> &mut ReplayWindow {
        &mut self.replay
    }
    /// Bytes, packets, and times.
    pub fn usage(&self) -> &Usage {
        &self.usage
    }
    /// Drop counters.
    pub fn stats(&self) -> &SaStats {
        &self.stats
    }
    /// The SA's state at `now`: by its lifetime, and without ESN dying
    /// once its sequence number passes [`SEQ_SOFT_NO_ESN`], so that it is
    /// replaced before the counter runs out (RFC 4303 §3.3.3: it must not
    /// wrap; at 2^32 - 1 it stops, `seq_exhausted`).
    pub fn state(&self, now: Duration) -> SaState {
        let by_lifetime = self.usage.state(&self.lifetime, now);
        if !self.esn && self.seq >= SEQ_SOFT_NO_ESN && by_lifetime == SaState::Mature {
            return SaState::Dying;
        }
        by_lifetime
    }
    /// When the state next changes by time alone.
    pub fn next_deadline(&self) -> Option<Duration> {
        self.usage.next_deadline(&self.lifetime)
    }

    /// Let the SA send up to sequence number `ceiling` and no further (a
    /// packet past it is dropped, `seq_unreserved`): a manual SA may use
    /// only the sequence numbers already recorded as used in the state
    /// directory, so that a restart never reuses a counter-mode nonce.
    pub fn set_seq_ceiling(&mut self, ceiling: u64) {
        self.seq_ceiling = ceiling;
    }

    /// The ceiling set by [`Self::set_seq_ceiling`].
    pub fn seq_ceiling(&self) -> u64 {
        self.seq_ceiling
    }

    /// Move the outbound sequence counter forward to `seq` (the next packet
    /// carries `seq + 1`): for state transfer, and tests near 2^32. Never
    /// backwards: a repeated sequence number would repeat the AES-GCM and
    /// ChaCha20 nonce (the IV is the sequence number).
    pub fn skip_seq_to(&mut self, seq: u64) -> Result<(), SaError> {
        if seq < self.seq {
            return Err(SaError::Inconsistent("sequence numbers only move forward"));
        }
        self.seq = seq;
        Ok(())
    }
}
