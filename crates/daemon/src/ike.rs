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
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use flowsec_ike::{Datagram, Ike, Kernel, SaUsage, IKE_PORT, NAT_T_PORT};
use flowsec_ipsec::{Direction, Endpoints, Policy, Protocol, SaConfig, SaId, Selector};
use flowsec_wire::udp_encap::NON_ESP_MARKER;

use crate::apply::{without_keys, Change, Model};
use crate::channels::{
    ike_channel, ConnId, IkeIn, IkeQueueCounters, IkeQueues, IkeSink, StreamSink, MAX_MESSAGE,
};
use crate::sys;

/// Receive buffer of the port-500 sockets.
const RECV_BUFFER: usize = 4 << 20;

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

/// How long a redirect waits for its gateway's name to resolve.
const RESOLVE_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// How long after an address or route change the IKE SAs roam: the
/// changes of one event settle first (strongSwan's `ROAM_DELAY`).
const ROAM_DELAY: std::time::Duration = std::time::Duration::from_millis(100);

/// The control thread's IKE: the core and its sockets.
pub struct IkePlane {
    /// The core.
    pub ike: Ike,
    /// UDP port 500, IPv4 and IPv6 (where the host has it).
    sock500: Vec<(OwnedFd, bool)>,
    /// Sockets of the 4500 groups to send from (duplicates of worker 0's).
    send4500: [Option<OwnedFd>; 2],
    rx: IkeQueues,
    wake: Arc<OwnedFd>,
    /// Stream connections that carried an authenticated message since the
    /// last [`IkePlane::transmit`] (the stream thread is told first).
    authenticated: Vec<ConnId>,
    /// Answers to stream messages, each with the connection its request
    /// came on, waiting for [`IkePlane::transmit`] (after the changes
    /// they announce are applied).
    answers: Vec<(Datagram, ConnId)>,
    /// Other datagrams the core queued meanwhile, in order.
    pending: Vec<Datagram>,
    /// IKE over TCP and TLS (RFC 9329), when a connection or
    /// `--tcp-listen` asks for it.
    pub stream: Option<StreamSink>,
    /// The TCP ports the stream thread listens on.
    pub tcp_ports: Vec<u16>,
    /// SPIs handed out and not yet installed or released.
    pub spis: BTreeSet<u32>,
    /// The kernel's link, address and route changes (MOBIKE: an IKE SA
    /// we originated follows its route to the peer, RFC 4555 §3.5).
    route_events: Option<OwnedFd>,
    /// When to ask the core to roam: [`ROAM_DELAY`] after the last change
    /// (an address going away comes as several events).
    roam_at: Option<std::time::Duration>,
    /// The IKE SA counts of the gateways connections redirect to
    /// (`redirect_load`), read in a thread of their own.
    load: Option<crate::gateway_load::LoadWatch>,
    /// When the connections were last looked at for `redirect_load`.
    load_checked: Option<std::time::Duration>,
    /// IKE's events since the control plane last took them (for vici).
    pub logged: Vec<flowsec_ike::Logged>,
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
                    sys::set_mark(fd.as_fd(), crate::routes::BYPASS_MARK)
                        .map_err(IkeSetupError::Mark)?;
                    // Room for a burst of IKE_SA_INIT (a flood is met with
                    // cookies, not with a full buffer).
                    let _ = sys::set_recv_buffer(fd.as_fd(), RECV_BUFFER);
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
        let route_events = sys::netlink::route_events()
            .inspect_err(|e| {
                tracing::warn!(target: "net", "no address and route events ({e}): MOBIKE SAs will not follow a move")
            })
            .ok();
        let wake = Arc::new(sys::eventfd().map_err(IkeSetupError::Eventfd)?);
        let (sink, rx) = ike_channel(Arc::clone(&wake));
        let mut ike = ike;
        ike.set_local_addresses(local_addresses());
        Ok((
            IkePlane {
                ike,
                sock500,
                send4500,
                rx,
                wake,
                authenticated: Vec::new(),
                answers: Vec::new(),
                pending: Vec::new(),
                stream: None,
                tcp_ports: Vec::new(),
                spis: BTreeSet::new(),
                route_events,
                roam_at: None,
                load: None,
                load_checked: None,
                logged: Vec::new(),
                buf: vec![0; MAX_MESSAGE + 64],
            },
            sink,
        ))
    }

    /// The descriptors to poll for readability.
    pub fn fds(&self) -> Vec<RawFd> {
        let mut v = vec![self.wake.as_raw_fd()];
        v.extend(self.sock500.iter().map(|(fd, _)| fd.as_raw_fd()));
        v.extend(self.route_events.as_ref().map(AsRawFd::as_raw_fd));
        v
    }

    /// The IKE queues' drop counters (`ctl stats`, "ike_queue").
    pub fn queue_counters(&self) -> &IkeQueueCounters {
        &self.rx.counters
    }

    /// Everything that arrived, through the core.
    pub fn receive(&mut self, now: std::time::Duration, k: &mut PlaneKernel<'_>) {
        sys::clear_wake(self.wake.as_fd());
        self.roam(now, k);
        self.gateway_loads(now);
        let (arrived, more) = self.rx.take();
        if more {
            // The rest on the next loop, after port 500 and the timers.
            sys::wake(self.wake.as_fd());
        }
        for m in arrived {
            match m {
                IkeIn::Message {
                    transport,
                    local,
                    remote,
                    data,
                    conn: None,
                } => self.ike.handle_on(now, transport, local, remote, &data, k),
                IkeIn::Message {
                    transport,
                    local,
                    remote,
                    data,
                    conn: Some(conn),
                } => {
                    let verified = self.ike.stats().verified;
                    self.ike.handle_on(now, transport, local, remote, &data, k);
                    if self.ike.stats().verified > verified && self.ike.stream_authenticated(&data)
                    {
                        self.authenticated.push(conn);
                    }
                    self.answers_on(conn, local, remote);
                }
                IkeIn::Acquire { reqid } => self.ike.acquire(now, reqid, k),
                IkeIn::Reconnected { local, remote } => self.ike.reconnected(now, local, remote, k),
            }
        }
        for i in 0..self.sock500.len() {
            let fd = self.sock500[i].0.as_fd();
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

    /// An address or route changed: once they settle ([`ROAM_DELAY`]), the
    /// core's MOBIKE SAs look for their route to the peer again.
    fn roam(&mut self, now: std::time::Duration, k: &mut PlaneKernel<'_>) {
        if let Some(fd) = &self.route_events {
            if sys::netlink::drain_events(fd.as_fd()) {
                self.roam_at = Some(now + ROAM_DELAY);
            }
        }
        if self.roam_at.is_some_and(|at| now >= at) {
            self.roam_at = None;
            self.ike.set_local_addresses(local_addresses());
            self.ike.roam(now, k);
        }
    }

    /// The gateways' IKE SA counts read since the last call, to the core;
    /// the watch follows the connections (a reload, vici's load-conn),
    /// looked at once a second, as often as the gateways are asked.
    fn gateway_loads(&mut self, now: std::time::Duration) {
        let every = std::time::Duration::from_secs(1);
        if self.load_checked.is_none_or(|t| now >= t + every) {
            self.load_checked = Some(now);
            let conns = self.ike.connections().iter().map(|c| &**c);
            let watched = crate::gateway_load::watched(conns);
            if self
                .load
                .as_ref()
                .map_or(!watched.is_empty(), |l| l.gateways != watched)
            {
                self.load =
                    (!watched.is_empty()).then(|| crate::gateway_load::LoadWatch::start(watched));
            }
        }
        for (gw, n) in self.load.as_ref().map(|l| l.take()).unwrap_or_default() {
            self.ike.set_gateway_load(&gw, n);
        }
    }

    /// When the core should roam next, if a change is waiting to settle.
    pub fn roam_at(&self) -> Option<std::time::Duration> {
        self.roam_at
    }

    /// What the core queued in answer to a message that came on stream
    /// connection `conn`, named `local`, `remote`: kept to leave on that
    /// connection (issue 29 item 12: a new connection that reuses the
    /// address and port gets none of them); the rest stays queued.
    fn answers_on(&mut self, conn: ConnId, local: SocketAddr, remote: SocketAddr) {
        let mut rest = Vec::new();
        while let Some(d) = self.ike.poll_transmit() {
            if d.transport.is_stream() && d.local == local && d.remote == remote {
                self.answers.push((d, conn));
            } else {
                rest.push(d);
            }
        }
        // Back in order, after the stream answers (each goes its own way).
        self.pending.extend(rest);
    }

    /// Send what the core queued: from port 500, or from 4500 with the
    /// non-ESP marker (RFC 3948 §2.2), or on a stream.
    pub fn transmit(&mut self) {
        if let Some(s) = &self.stream {
            // The connections that proved their peer first, so that the
            // answers and the SAs' traffic find them.
            for conn in self.authenticated.drain(..) {
                s.authenticated(conn);
            }
            for (d, conn) in self.answers.drain(..) {
                s.ike_on(conn, d.transport, d.local, d.remote, d.data);
            }
        }
        self.authenticated.clear();
        self.answers.clear();
        let pending = std::mem::take(&mut self.pending);
        let queued = std::iter::from_fn(|| self.ike.poll_transmit()).collect::<Vec<_>>();
        for d in pending.into_iter().chain(queued) {
            self.send(d);
        }
        // Each IkeEvent displays as its log line (the e2e tests read them).
        for logged in self.ike.take_logged() {
            crate::log::ike_event(&logged);
            self.logged.push(logged);
        }
    }

    /// One datagram the core queued.
    fn send(&self, d: Datagram) {
        if d.transport.is_stream() {
            match &self.stream {
                Some(s) => s.ike(d.transport, d.local, d.remote, d.data),
                None => {
                    tracing::warn!(target: "net", "no TCP for {}: IKE message dropped", d.remote)
                }
            }
            return;
        }
        let v6 = d.remote.is_ipv6();
        let sent = if d.local.port() == NAT_T_PORT {
            let Some(fd) = &self.send4500[usize::from(v6)] else {
                return;
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
                return;
            };
            sys::send_udp(fd.as_raw_fd(), &d.data, 0, d.remote, d.local.ip(), 0)
        };
        if let Err(e) = sent {
            tracing::warn!(target: "net", "sending IKE to {}: {e}", d.remote);
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

    fn move_sa(&mut self, id: SaId, to: Endpoints) -> Option<SaId> {
        let new = SaId { dst: to.dst, ..id };
        if new != id && self.model.sas.contains_key(&new) {
            tracing::warn!(target: "esp", "SA {id} not moved: SA {new} exists already");
            return None;
        }
        let mut c = self.model.sas.remove(&id)?;
        let families = to.src.is_ipv4() == to.dst.is_ipv4();
        if !families || (to.encap.is_some() && c.protocol != Protocol::Esp) {
            tracing::warn!(target: "esp", "SA {id} not moved to {} -> {}", to.src, to.dst);
            self.model.sas.insert(id, c);
            return None;
        }
        (c.src, c.dst, c.encap) = (to.src, to.dst, to.encap);
        self.model.sas.insert(new, c);
        self.changes.push(Change::Move(id, to));
        Some(new)
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

    /// A redirect's gateway by name (RFC 5685): the resolver, as
    /// strongSwan's host_create_from_dns, on a thread of its own, waited
    /// for at most [`RESOLVE_WAIT`]: the control loop never stalls longer
    /// on a name (one an on-path attacker chose, in an IKE_SA_INIT
    /// REDIRECT with the client's nonce).
    fn resolve(&mut self, name: &str) -> Option<IpAddr> {
        use std::net::ToSocketAddrs;
        let (tx, rx) = std::sync::mpsc::channel();
        let name = name.to_string();
        std::thread::Builder::new()
            .name("flowsec-resolve".into())
            .spawn(move || {
                let found = (name.as_str(), IKE_PORT)
                    .to_socket_addrs()
                    .ok()
                    .and_then(|mut a| a.next())
                    .map(|a| a.ip());
                let _ = tx.send(found);
            })
            .ok()?;
        rx.recv_timeout(RESOLVE_WAIT).ok().flatten()
    }

    fn source_for(&mut self, dst: IpAddr) -> Option<IpAddr> {
        // `ip route get`, as strongSwan's kernel-netlink asks the kernel.
        let out = crate::tool::command("ip")
            .ok()?
            // flowsec's own packets carry the bypass mark: the route they
            // take, not the tunnel's (a road warrior's 0.0.0.0/0 covers the
            // peer too).
            .args(["-o", "route", "get", &dst.to_string(), "mark"])
            .arg(crate::routes::BYPASS_MARK.to_string())
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

/// This host's global addresses (`ip -o addr show scope global`), as
/// MOBIKE announces them (RFC 4555 §3.6); none when `ip` fails.
fn local_addresses() -> Vec<IpAddr> {
    let Ok(mut ip) = crate::tool::command("ip") else {
        return Vec::new();
    };
    let Ok(out) = ip.args(["-o", "addr", "show", "scope", "global"]).output() else {
        return Vec::new();
    };
    parse_addresses(&String::from_utf8_lossy(&out.stdout))
}

/// The addresses of `ip -o addr` lines: the word after `inet` or
/// `inet6`, without its prefix length.
fn parse_addresses(text: &str) -> Vec<IpAddr> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        while let Some(w) = words.next() {
            if w == "inet" || w == "inet6" {
                let addr = words.next().and_then(|a| a.split('/').next()?.parse().ok());
                out.extend(addr.filter(|a| !out.contains(a)));
                break;
            }
        }
    }
    out
}

fn getrandom_fill(b: &mut [u8]) {
    use flowsec_ike::random::{OsRandom, Random};
    OsRandom.fill(b);
}

#[cfg(test)]
mod tests {
    /// `ip -o addr show scope global` as iproute2 prints it.
    #[test]
    fn addresses_of_ip_addr_lines() {
        let text = "2: eth0    inet 192.0.2.1/24 brd 192.0.2.255 scope global eth0\\       valid_lft forever preferred_lft forever\n\
                    2: eth0    inet6 2001:db8::1/64 scope global \\       valid_lft forever preferred_lft forever\n\
                    3: eth1    inet 192.0.2.1/32 scope global eth1\n";
        let got = super::parse_addresses(text);
        let want: Vec<std::net::IpAddr> =
            vec!["192.0.2.1".parse().unwrap(), "2001:db8::1".parse().unwrap()];
        assert_eq!(got, want);
    }
}
