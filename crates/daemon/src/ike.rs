//! IKEv2 on the control thread (ARCHITECTURE.md "IKE": Diffie-Hellman and
//! key derivation never run on a worker). The sans-I/O core
//! ([`flowsec_ike::Ike`]) gets the datagrams of UDP port 500 (its own
//! sockets here) and of port 4500 (worker 0's socket of the reuseport
//! group gets them, the kernel steers non-ESP-marker datagrams there, and
//! hands them over through a channel), and installs what it negotiated
//! through [`PlaneKernel`]: SAs and policies become the same changes a
//! setkey file makes, applied by every worker between two batches.
//!
//! ```text
//! UDP 500  ─────────────────────────────┐
//! UDP 4500 ─► worker 0 ─► IkeSink ─► channel ─► Ike::handle ─► Kernel calls ─► changes ─► workers
//!                                                   └► datagrams ─► UDP 500 / 4500 (+ non-ESP marker)
//! ```

use core::fmt;
use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;

use flowsec_ike::{Ike, Kernel, SaUsage, Transport, IKE_PORT, NAT_T_PORT};
use flowsec_ipsec::{Direction, Policy, Protocol, SaConfig, SaId, Selector, UdpEndpoints};
use flowsec_wire::udp_encap::NON_ESP_MARKER;

use crate::apply::{without_keys, Change, Model};
use crate::sys;

/// Receive buffer of the port-500 sockets.
const RECV_BUFFER: usize = 4 << 20;
/// IKE datagrams waiting between worker 0 and the control thread; more
/// are dropped (counted by the core's retransmissions, not here).
const QUEUE: usize = 256;
/// The largest IKE message read (RFC 7296 §2: at least 1280 must be
/// accepted; strongSwan's default `max_packet` is 10000).
const MAX_MESSAGE: usize = 10_000;

/// Why IKE could not be set up.
#[derive(Debug)]
#[non_exhaustive]
pub enum IkeSetupError {
    /// UDP port 500 over IPv4 could not be opened.
    Port(std::io::Error),
    /// The port's socket could not be marked to bypass the tunnel.
    Mark(std::io::Error),
    /// The workers' wake-up eventfd could not be made.
    Eventfd(std::io::Error),
}

impl fmt::Display for IkeSetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IkeSetupError::Port(e) => {
                write!(
                    f,
                    "UDP port {IKE_PORT}: {e} (is another IKE daemon running?)"
                )
            }
            IkeSetupError::Mark(e) => write!(f, "SO_MARK: {e}"),
            IkeSetupError::Eventfd(e) => write!(f, "eventfd: {e}"),
        }
    }
}

impl std::error::Error for IkeSetupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            IkeSetupError::Port(e) | IkeSetupError::Mark(e) | IkeSetupError::Eventfd(e) => Some(e),
        }
    }
}

/// What the workers tell the control thread.
pub(crate) enum IkeIn {
    /// A received IKE message, the non-ESP marker stripped.
    Message {
        transport: Transport,
        local: SocketAddr,
        remote: SocketAddr,
        data: Vec<u8>,
    },
    /// Traffic hit the (trap) policy of `reqid` and found no SA.
    Acquire { reqid: u32 },
    /// A TCP connection we originated is open again (RFC 9329 §6.1).
    Reconnected {
        local: SocketAddr,
        remote: SocketAddr,
    },
}

/// The workers' end: hands IKE messages that arrived on port 4500, and
/// acquires (traffic for a trap policy without SA), to the control thread.
#[derive(Clone)]
pub struct IkeSink {
    tx: SyncSender<IkeIn>,
    wake: Arc<OwnedFd>,
}

impl IkeSink {
    /// A sink and the control thread's end of it, for tests.
    #[cfg(test)]
    pub(crate) fn for_tests() -> (IkeSink, Receiver<IkeIn>) {
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        let wake = Arc::new(sys::eventfd().expect("eventfd"));
        (IkeSink { tx, wake }, rx)
    }

    /// An IKE message that arrived on port 4500 behind the non-ESP marker
    /// (RFC 3948 §2.2; the core took the marker off): pass it on, unless it
    /// is empty or larger than any IKE message may be.
    pub fn message(&self, ike: &[u8], from: &UdpEndpoints) {
        if ike.is_empty() || ike.len() > MAX_MESSAGE {
            return;
        }
        self.message_on(Transport::Udp, from.local, from.remote, ike);
    }

    /// An IKE message that arrived over `transport`: over a stream,
    /// `local` and `remote` name the connection (`crate::stream`).
    pub fn message_on(
        &self,
        transport: Transport,
        local: SocketAddr,
        remote: SocketAddr,
        ike: &[u8],
    ) {
        if ike.is_empty() || ike.len() > MAX_MESSAGE {
            return;
        }
        self.send(IkeIn::Message {
            transport,
            local,
            remote,
            data: ike.to_vec(),
        });
    }

    /// The TCP connection from `local` (port 0: ours) to `remote` that
    /// this host originated is open again after it broke.
    pub fn reconnected(&self, local: SocketAddr, remote: SocketAddr) {
        self.send(IkeIn::Reconnected { local, remote });
    }

    /// Traffic for the policy of `reqid` found no SA: ask IKE for one
    /// (the caller limits how often).
    pub fn acquire(&self, reqid: u32) {
        self.send(IkeIn::Acquire { reqid });
    }

    fn send(&self, msg: IkeIn) {
        match self.tx.try_send(msg) {
            Ok(()) => sys::wake(self.wake.as_raw_fd()),
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {}
        }
    }
}

/// The control thread's IKE: the core and its sockets.
pub struct IkePlane {
    /// The core.
    pub ike: Ike,
    /// UDP port 500, IPv4 and IPv6 (where the host has it).
    sock500: Vec<(OwnedFd, bool)>,
    /// Sockets of the 4500 groups to send from (duplicates of worker 0's).
    send4500: [Option<OwnedFd>; 2],
    rx: Receiver<IkeIn>,
    wake: Arc<OwnedFd>,
    /// IKE over TCP and TLS (RFC 9329), when a connection or
    /// `--tcp-listen` asks for it.
    pub stream: Option<crate::stream::StreamSink>,
    /// The TCP ports the stream thread listens on.
    pub tcp_ports: Vec<u16>,
    /// SPIs handed out and not yet installed or released.
    pub spis: BTreeSet<u32>,
    buf: Vec<u8>,
}

impl IkePlane {
    /// Open port 500 and the channel from the workers; `send4500` are
    /// duplicates of worker 0's sockets of the 4500 groups (v4, v6).
    pub fn open(
        ike: Ike,
        send4500: [Option<OwnedFd>; 2],
    ) -> Result<(IkePlane, IkeSink), IkeSetupError> {
        let mut sock500 = Vec::new();
        for v6 in [false, true] {
            // No UDP GRO: a train of equal-sized IKE_SA_INITs would be
            // coalesced past the message buffer and cut off.
            match sys::udp_encap_socket(IKE_PORT, false, v6, false) {
                Ok(fd) => {
                    sys::set_mark(fd.as_raw_fd(), crate::routes::BYPASS_MARK)
                        .map_err(IkeSetupError::Mark)?;
                    // Room for a burst of IKE_SA_INIT (a flood is met with
                    // cookies, not with a full buffer).
                    let _ = sys::set_recv_buffer(fd.as_raw_fd(), RECV_BUFFER);
                    sock500.push((fd, v6));
                }
                Err(e) if !v6 => return Err(IkeSetupError::Port(e)),
                Err(e) => tracing::warn!(
                    target: "net",
                    "UDP port {IKE_PORT} over IPv6: {e}: IKE over IPv4 only"
                ),
            }
        }
        if send4500[0].is_none() {
            tracing::warn!(target: "net", "no UDP port {NAT_T_PORT}: IKE cannot float to it, no NAT traversal");
        }
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        let wake = Arc::new(sys::eventfd().map_err(IkeSetupError::Eventfd)?);
        let sink = IkeSink {
            tx,
            wake: Arc::clone(&wake),
        };
        Ok((
            IkePlane {
                ike,
                sock500,
                send4500,
                rx,
                wake,
                stream: None,
                tcp_ports: Vec::new(),
                spis: BTreeSet::new(),
                buf: vec![0; MAX_MESSAGE + 64],
            },
            sink,
        ))
    }

    /// The descriptors to poll for readability.
    pub fn fds(&self) -> Vec<RawFd> {
        let mut v = vec![self.wake.as_raw_fd()];
        v.extend(self.sock500.iter().map(|(fd, _)| fd.as_raw_fd()));
        v
    }

    /// Everything that arrived, through the core.
    pub fn receive(&mut self, now: std::time::Duration, k: &mut PlaneKernel<'_>) {
        sys::clear_wake(self.wake.as_raw_fd());
        while let Ok(m) = self.rx.try_recv() {
            match m {
                IkeIn::Message {
                    transport,
                    local,
                    remote,
                    data,
                } => self.ike.handle_on(now, transport, local, remote, &data, k),
                IkeIn::Acquire { reqid } => self.ike.acquire(now, reqid, k),
                IkeIn::Reconnected { local, remote } => self.ike.reconnected(now, local, remote, k),
            }
        }
        for i in 0..self.sock500.len() {
            let fd = self.sock500[i].0.as_raw_fd();
            for _ in 0..64 {
                let Ok(Some(d)) = sys::recv_datagram(fd, &mut self.buf) else {
                    break;
                };
                let local = SocketAddr::new(d.dst, IKE_PORT);
                // One datagram (no GRO on this socket).
                let data = self.buf[..d.len].to_vec();
                self.ike.handle(now, local, d.src, &data, k);
            }
        }
    }

    /// Send what the core queued: from port 500, or from 4500 with the
    /// non-ESP marker (RFC 3948 §2.2).
    pub fn transmit(&mut self) {
        while let Some(d) = self.ike.poll_transmit() {
            if d.transport.is_stream() {
                match &self.stream {
                    Some(s) => s.ike(d.transport, d.local, d.remote, d.data),
                    None => {
                        tracing::warn!(target: "net", "no TCP for {}: IKE message dropped", d.remote)
                    }
                }
                continue;
            }
            let v6 = d.remote.is_ipv6();
            let sent = if d.local.port() == NAT_T_PORT {
                let Some(fd) = &self.send4500[usize::from(v6)] else {
                    continue;
                };
                // IKE behind the non-ESP marker; a NAT-keepalive as it is.
                let mut framed = if d.is_keepalive() {
                    Vec::new()
                } else {
                    NON_ESP_MARKER.to_vec()
                };
                framed.extend_from_slice(&d.data);
                sys::send_udp(fd.as_raw_fd(), &framed, 0, d.remote, d.local.ip(), 0)
            } else {
                let Some((fd, _)) = self.sock500.iter().find(|(_, is_v6)| *is_v6 == v6) else {
                    continue;
                };
                sys::send_udp(fd.as_raw_fd(), &d.data, 0, d.remote, d.local.ip(), 0)
            };
            if let Err(e) = sent {
                tracing::warn!(target: "net", "sending IKE to {}: {e}", d.remote);
            }
        }
        // Each IkeEvent displays as its log line (the e2e tests read them).
        for logged in self.ike.take_logged() {
            crate::log::ike_event(&logged);
        }
    }
}

/// [`Kernel`] over the control plane's model: each call changes the model
/// at once (so the next call sees it) and queues the change for the
/// workers, which the caller applies with [`PlaneKernel::finish`].
pub struct PlaneKernel<'a> {
    model: &'a mut Model,
    spis: &'a mut BTreeSet<u32>,
    /// The workers, whose inbound SAs are those with SPI ≡ index.
    workers: u32,
    changes: Vec<Change>,
    spd_changed: bool,
    /// Virtual IPs given to us (true) or gone (false), in order.
    vips: Vec<(IpAddr, bool)>,
}

impl<'a> PlaneKernel<'a> {
    /// The kernel interface over `model`, collecting changes; `spis` are
    /// the SPIs handed out but not installed yet; `workers`, how many
    /// workers steer inbound SAs (SPI mod workers).
    pub fn new(model: &'a mut Model, spis: &'a mut BTreeSet<u32>, workers: usize) -> Self {
        PlaneKernel {
            model,
            spis,
            workers: workers.max(1) as u32,
            changes: Vec::new(),
            spd_changed: false,
            vips: Vec::new(),
        }
    }

    /// The changes for the workers, in order (the SPD last, whole).
    pub fn finish(mut self) -> (Vec<Change>, Vec<(IpAddr, bool)>) {
        if self.spd_changed {
            self.changes.push(Change::Spd(self.model.spd.clone()));
        }
        (self.changes, self.vips)
    }
}

impl Kernel for PlaneKernel<'_> {
    fn alloc_spi(&mut self, protocol: Protocol) -> u32 {
        self.alloc_spi_on(protocol, None)
    }

    /// For resource `cpu`, an SPI the workers' steering sends to worker
    /// `cpu` (SPI ≡ cpu mod workers; ARCHITECTURE.md "Workers").
    fn alloc_spi_on(&mut self, protocol: Protocol, cpu: Option<u32>) -> u32 {
        let w = self.workers;
        let steered = |s: &u32| cpu.is_none_or(|c| *s % w == c % w);
        let used: BTreeSet<u32> = self
            .model
            .sas
            .keys()
            .filter(|id| id.protocol == protocol)
            .map(|id| id.spi)
            .chain(self.spis.iter().copied())
            .collect();
        let mut b = [0u8; 4];
        getrandom_fill(&mut b);
        let r = u32::from_be_bytes(b);
        let spi = match protocol {
            // A CPI (RFC 3173 §3.3): 256 up to the private-use range, as
            // strongSwan (0x100..=0xefff); a walk from a random start, so
            // a full range answers 0 (no IPComp) instead of spinning.
            Protocol::IpComp => {
                const FIRST: u32 = 0x100;
                const COUNT: u32 = 0xf000 - FIRST;
                (0..COUNT)
                    .map(|k| FIRST + (r + k) % COUNT)
                    .find(|c| !used.contains(c))
                    .unwrap_or(0)
            }
            // RFC 4303 §2.1: 1..=255 reserved; the top bit set keeps IKE's
            // SPIs apart from manual ones, which are usually small.
            _ => (0..u32::MAX)
                .map(|k| (r.wrapping_add(k)) | 0x8000_0000)
                .find(|s| !used.contains(s) && steered(s))
                .unwrap_or(0),
        };
        if spi != 0 {
            self.spis.insert(spi);
        }
        spi
    }

    fn release_spi(&mut self, _protocol: Protocol, spi: u32) {
        self.spis.remove(&spi);
    }

    fn add_sa(&mut self, sa: SaConfig) {
        self.spis.remove(&sa.spi);
        let id = sa.id();
        if self.model.sas.contains_key(&id) {
            tracing::warn!(target: "esp", "SA {id} exists already: not replaced");
            return;
        }
        self.model.sas.insert(id, without_keys(&sa));
        self.changes.push(Change::AddSa(Box::new(sa)));
    }

    fn del_sa(&mut self, id: SaId) {
        self.spis.remove(&id.spi);
        if self.model.sas.remove(&id).is_some() {
            self.changes.push(Change::RemoveSa(id));
        }
    }

    fn add_vip(&mut self, addr: IpAddr) {
        self.vips.push((addr, true));
    }

    fn del_vip(&mut self, addr: IpAddr) {
        self.vips.push((addr, false));
    }

    fn update_encap(&mut self, id: SaId, encap: flowsec_ipsec::UdpEncap) {
        if let Some(c) = self.model.sas.get_mut(&id) {
            if c.encap.is_some() {
                c.encap = Some(encap);
                self.changes.push(Change::Encap(id, encap));
            }
        }
    }

    fn add_policy(&mut self, policy: Policy) {
        let what = format!(
            "{} {} -> {}",
            policy.direction,
            policy.selector.src.addr(),
            policy.selector.dst.addr()
        );
        match self.model.spd.add(policy) {
            Ok(()) => self.spd_changed = true,
            Err(e) => tracing::warn!(target: "esp", "policy {what}: {e}"),
        }
    }

    fn del_policy(&mut self, direction: Direction, selector: Selector) {
        if self.model.spd.remove(direction, &selector).is_ok() {
            self.spd_changed = true;
        }
    }

    fn query_sa(&mut self, id: SaId) -> Option<SaUsage> {
        self.model.sas.contains_key(&id).then(SaUsage::default)
    }

    fn source_for(&mut self, dst: IpAddr) -> Option<IpAddr> {
        // `ip route get`, as strongSwan's kernel-netlink asks the kernel.
        let out = crate::tool::command("ip")
            .ok()?
            .args(["-o", "route", "get", &dst.to_string()])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut words = text.split_whitespace();
        while let Some(w) = words.next() {
            if w == "src" {
                return words.next()?.parse().ok();
            }
        }
        None
    }
}

fn getrandom_fill(b: &mut [u8]) {
    use flowsec_ike::random::{OsRandom, Random};
    OsRandom.fill(b);
}
