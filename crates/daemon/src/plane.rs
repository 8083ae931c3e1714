//! The control plane of `flowsec up`: starts the workers, owns the model of
//! the configuration, the routes and the control socket, and turns setkey
//! input into changes that every worker applies between two batches.
//!
//! What is published to the workers is the *change*, by message, not an
//! SA table swapped in by atomic pointer (ARCHITECTURE.md "Workers"): an
//! SA's sequence number and replay window are mutable state owned by one
//! worker and must survive a configuration change, which swapping in a
//! table built elsewhere would lose. A worker never waits on the control
//! plane.

use core::fmt;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use flowsec_crypto::Provider;

use crate::apply::{self, Capabilities, ConfigError, Model};
use crate::channels::IkeSink;
use crate::control::Control;
use crate::datapath::Parallel;
use crate::filter::Filter;
use crate::ike::{IkePlane, PlaneKernel};
use crate::reach::Workers;
use crate::routes::Routes;
use crate::seqstate::{self, SeqRange, SeqState};
use crate::stats::{SaReport, Stats};
use crate::stream::StreamSetupError;
use crate::sys;
use crate::tool::ToolError;

mod answer;
mod error;
mod hops;
mod metrics_page;
mod reload;
mod setup;
mod spawn;
mod streams;
mod vici;
mod vici_events;
pub use error::RunError;
use setup::{announce, Setup, WorkerParts};
use spawn::{stop_all, Spawn, WorkerHandle};
use streams::open_streams;

/// How long a poll of the control socket waits before checking for
/// shutdown.
const POLL_MS: i32 = 200;
/// How often the SAs' soft volume limits are looked at (with IKE and
/// `rekey_bytes`/`rekey_packets`).
const VOLUME_EVERY: Duration = Duration::from_secs(2);

/// What `flowsec up` was asked to do.
#[derive(Clone)]
pub struct Options {
    /// TUN device name.
    pub tun: String,
    /// Manual keys and policies in setkey syntax, loaded at start.
    pub setkey: Option<PathBuf>,
    /// IKEv2 connections and secrets in swanctl.conf style (`-c`).
    pub ike: Option<PathBuf>,
    /// The swanctl directory of the certificates and keys (default: the
    /// directory of `ike`).
    pub swanctl_dir: Option<PathBuf>,
    /// IKE tuning (strongswan.conf's retransmission settings).
    pub ike_settings: flowsec_ike::Settings,
    /// MTU of the TUN device: the path MTU less the IPsec overhead.
    pub mtu: u16,
    /// The control socket.
    pub socket: PathBuf,
    /// Worker threads (each with a TUN queue).
    pub workers: usize,
    /// TUN offloads: TCP super-packets in both directions, and UDP ones
    /// where the kernel takes USO (6.2).
    pub offload: bool,
    /// How one gateway pair spreads over the workers (`--parallel`).
    pub parallel: Parallel,
    /// The crypto backend (`--backend`: auto, aws-lc, rustcrypto, engine),
    /// made once the daemon has dropped its privileges (the engine is a
    /// thread, which inherits them).
    pub backend: String,
    /// Install the inbound plaintext filter (false only with
    /// `--no-plaintext-filter`); without it the daemon does not start.
    pub plaintext_filter: bool,
    /// How raw ESP/AH reaches the workers (`--esp-receive`).
    pub esp_receive: crate::fanout::EspReceive,
    /// How raw IP packets leave (`--esp-send`).
    pub esp_send: crate::nexthop::EspSend,
    /// Members of this group may use the control socket besides root
    /// (`--ctl-group`).
    pub ctl_group: Option<u32>,
    /// Where the sequence numbers of manual counter-nonce SAs are recorded
    /// (`--state-dir`, `crate::seqstate`).
    pub state_dir: PathBuf,
    /// TCP ports to accept IKE and ESP on (RFC 9329, `--tcp-listen`),
    /// besides the `tcp_port` of every connection with `tcp_encap`.
    pub tcp_listen: Vec<u16>,
    /// Serve Prometheus metrics here (`--metrics`).
    pub metrics: Option<std::net::SocketAddr>,
    /// The vici socket (`--vici`; `None`: `--vici none`).
    pub vici: Option<ViciOption>,
}

/// `--vici URI`, and whether it was given (a daemon started with it
/// and without `-c` runs IKE with nothing loaded, waiting for vici
/// clients; charon's default socket taken by another daemon is only a
/// warning when it was not asked for).
#[derive(Clone, Debug)]
pub struct ViciOption {
    /// Where.
    pub uri: crate::vici::Uri,
    /// Given on the command line.
    pub explicit: bool,
}

/// Run until SIGINT or SIGTERM; returns the counters of all workers.
pub fn run(opts: &Options) -> Result<Stats, RunError> {
    // First, so that a signal during set-up still ends in the clean-up
    // below (the flag is checked before the loop's first wait).
    let shutdown = sys::catch_shutdown_signals();
    // SIGHUP from now on asks for a reload (served once the loop runs),
    // instead of ending the process as it would by default.
    let _ = sys::catch_reload_signal();
    let start = Instant::now();
    let (mut control, metrics, provider) = open_privileged(opts)?;
    let vici = open_vici(opts)?;
    let setup = Setup::prepare(opts, &provider)?;
    let (routes, filter) = route_and_filter(opts, &setup)?;
    announce(opts, &setup, &routes, &filter);
    let stop = Arc::new(AtomicBool::new(false));
    let spd_epoch = Arc::new(AtomicU64::new(0));
    let Setup {
        staged,
        caps,
        ike,
        seq_state,
        boxes,
        parts,
        manual,
        file_config,
        fanout,
        ..
    } = setup;
    let spawn = Spawn {
        opts,
        boxes: &boxes,
        stop: &stop,
        spd_epoch: &spd_epoch,
        ike: ike.as_ref().map(|(_, sink)| sink.clone()),
        stream: None,
        start,
    };
    let (ike, handles, stream_thread) = start_threads(spawn, ike, parts)?;
    let mut plane = Plane {
        tun: opts.tun.clone(),
        model: staged.model,
        workers: Workers::new(boxes, spd_epoch),
        routes,
        filter,
        provider,
        caps,
        start,
        ike,
        volume_checked: None,
        ctl_refused: 0,
        seq: seq_state,
        state_dir: opts.state_dir.clone(),
        seq_checked: None,
        moved: Vec::new(),
        metrics,
        ike_path: opts.ike.clone(),
        swanctl_dir: opts.swanctl_dir.clone(),
        setkey_path: opts.setkey.clone(),
        manual,
        vici: Some(vici),
        loaded: Default::default(),
        file_config,
        pending: Vec::new(),
        since: sys::local_time(),
        hops: (opts.esp_send == crate::nexthop::EspSend::Link).then(hops::HopWatch::open),
    };
    plane.ike_step(|ike, now, k| ike.ike.start(now, k));
    sys::notify::sd_notify("READY=1\nSTATUS=up");
    let failure = plane.serve(&mut control, shutdown, &handles);
    sys::notify::sd_notify("STOPPING=1");
    let tcp = plane.ike.as_ref().and_then(|i| i.stream.clone());
    let result = plane.shut_down(&stop, handles, failure);
    drop(fanout); // its nft table goes with the workers that took its packets
    if let Some(s) = tcp {
        log_stream_counters(&s);
    }
    if let Some(h) = stream_thread {
        let _ = h.join();
    }
    result
}

/// The vici server, on its socket if asked for one. charon's default
/// path held by another daemon (charon, or another flowsec) is a warning;
/// a path given is an error. Without a socket of its own it still serves
/// the control socket's vici clients (`flowsec ctl`).
fn open_vici(opts: &Options) -> Result<crate::vici::Server, RunError> {
    let unbound = || {
        crate::vici::Server::unbound().map_err(|error| {
            RunError::Control(crate::control::ControlError::Io {
                path: "epoll".into(),
                error,
            })
        })
    };
    let Some(v) = &opts.vici else {
        return unbound();
    };
    match crate::vici::Server::bind(&v.uri, opts.ctl_group) {
        Ok(s) => {
            tracing::info!(target: "ctl", "vici: listening on {}", v.uri);
            if let crate::vici::Uri::Tcp(a) = &v.uri {
                if !a.ip().is_loopback() {
                    // As charon's: no credentials over TCP.
                    tracing::warn!(target: "ctl", "vici: {a} is not loopback, and vici over TCP has no authentication: anyone who reaches it controls the daemon");
                }
            }
            Ok(s)
        }
        Err(e) if !v.explicit => {
            tracing::warn!(target: "ctl", "vici: {e}; vici is off (give --vici URI)");
            unbound()
        }
        Err(e) => Err(RunError::Control(e)),
    }
}

/// What needs the privileges `flowsec up` starts with: the control
/// socket (with `--ctl-group` it is given to that group, which takes
/// CAP_CHOWN) and the `--metrics` socket; then only the network
/// capabilities are kept, before any thread starts (threads inherit
/// them), and the metrics thread and the crypto provider come after.
fn open_privileged(
    opts: &Options,
) -> Result<(Control, Option<crate::metrics::Publisher>, Provider), RunError> {
    let control = Control::bind(&opts.socket, opts.ctl_group).map_err(RunError::Control)?;
    let metrics = opts.metrics.map(bind_metrics).transpose()?;
    drop_privileges()?;
    // Its thread after the privileges are dropped (a thread inherits them).
    let metrics = metrics.map(spawn_metrics).transpose()?;
    let provider = Provider::by_name(&opts.backend).ok_or_else(|| RunError::UnknownBackend {
        name: opts.backend.clone(),
    })?;
    Ok((control, metrics, provider))
}

/// The routes into the TUN device and the plaintext filter, for the
/// staged SPD.
fn route_and_filter(opts: &Options, setup: &Setup) -> Result<(Routes, Filter), RunError> {
    let routes =
        Routes::install(&opts.tun, opts.mtu, &setup.staged.model.spd).map_err(RunError::Routes)?;
    // The RFC 9329 streams' ports pass the filter (issue 29 item 13).
    let tcp_ports = setup.ike.as_ref().map_or_else(Vec::new, |(plane, _)| {
        streams::listen_ports(&opts.tcp_listen, plane.ike.connections())
    });
    let filter = if opts.plaintext_filter {
        Filter::install(&opts.tun, &tcp_ports, &setup.staged.model.spd).map_err(RunError::Filter)?
    } else {
        tracing::warn!(target: "cfg", "--no-plaintext-filter: plaintext that an inbound policy covers is not dropped (RFC 4301 §5.2)");
        Filter::none(&opts.tun)
    };
    Ok((routes, filter))
}

/// The stream thread's listeners (RFC 9329, when IKE wants them), the
/// workers, then the stream thread; if that cannot start, the workers
/// are stopped again. Returns IKE's plane (which sends through the
/// stream thread), the workers' handles and the stream thread's.
fn start_threads(
    mut spawn: Spawn<'_>,
    ike: Option<(IkePlane, IkeSink)>,
    parts: Vec<WorkerParts>,
) -> Result<StartedThreads, RunError> {
    let (ike, streams) = match ike {
        Some((mut plane, _)) => {
            let streams = open_streams(spawn.opts, &mut plane)?;
            plane.stream = streams.as_ref().map(|(s, _)| s.clone());
            (Some(plane), streams)
        }
        None => (None, None),
    };
    spawn.stream = streams.as_ref().map(|(s, _)| s.clone());
    let mut handles = spawn.workers(parts)?;
    let mut stream_thread = None;
    if let (Some((_, parts)), Some(sink)) = (streams, spawn.ike.clone()) {
        let boxes = spawn.boxes.to_vec();
        match parts.spawn(sink, boxes, Arc::clone(spawn.stop), spawn.start) {
            Ok(h) => stream_thread = Some(h),
            Err(e) => {
                stop_all(spawn.stop, spawn.boxes, std::mem::take(&mut handles));
                return Err(RunError::Stream(StreamSetupError::Spawn(e)));
            }
        }
    }
    Ok((ike, handles, stream_thread))
}

/// What [`start_threads`] started.
type StartedThreads = (Option<IkePlane>, Vec<WorkerHandle>, Option<JoinHandle<()>>);

/// `--metrics ADDR`: its socket, bound before the privileges go.
fn bind_metrics(
    addr: std::net::SocketAddr,
) -> Result<(crate::metrics::Exporter, std::net::SocketAddr), RunError> {
    crate::metrics::Exporter::bind(addr)
        .map(|e| (e, addr))
        .map_err(|error| RunError::Metrics { addr, error })
}

/// The metrics thread, serving on the socket [`bind_metrics`] bound.
fn spawn_metrics(
    (e, addr): (crate::metrics::Exporter, std::net::SocketAddr),
) -> Result<crate::metrics::Publisher, RunError> {
    let bound = e.local_addr().unwrap_or(addr);
    tracing::info!(target: "ctl", "metrics (Prometheus) on http://{bound}/metrics");
    e.spawn().map_err(|error| RunError::Metrics { addr, error })
}

/// The stream thread's counters, once, at the end.
fn log_stream_counters(s: &crate::channels::StreamSink) {
    let counts: Vec<String> = s
        .counters()
        .named()
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{k}={n}"))
        .collect();
    tracing::info!(target: "net", "tcp: {}", counts.join(" "));
}

impl Plane {
    /// The control loop: the control socket, IKE, the workers' pending
    /// changes and the periodic checks, until a shutdown signal or a worker
    /// ends. Returns why it ended early, if it did.
    fn serve(
        &mut self,
        control: &mut Control,
        shutdown: &AtomicBool,
        handles: &[WorkerHandle],
    ) -> Option<RunError> {
        let mut fds = vec![control.listener().as_raw_fd()];
        // The metrics thread's "a scrape waits" second (when there is
        // one), vici's next, then IKE's.
        fds.extend(self.metrics.as_ref().map(crate::metrics::Publisher::fd));
        let vici_at = fds.len();
        fds.extend(self.vici.as_ref().map(crate::vici::Server::fd));
        debug_assert!(
            self.vici.is_some(),
            "the vici server is only out in vici_turn"
        );
        fds.extend(self.ike.as_ref().map(IkePlane::fds).unwrap_or_default());
        let hops_at = fds.len();
        fds.extend(self.hops.as_ref().and_then(hops::HopWatch::fd));
        let mut ready = vec![false; fds.len()];
        let hangup = sys::catch_reload_signal();
        while !shutdown.load(Ordering::SeqCst) {
            if hangup.swap(false, Ordering::SeqCst) {
                log_reload(&self.reload());
            }
            let wait = self.ike_wait().map_or(POLL_MS, |ms| ms.min(POLL_MS));
            if let Err(e) = sys::poll_readable(&fds, wait, &mut ready) {
                return Some(RunError::Poll(e));
            }
            let mut adopted = false;
            if ready[0] {
                let vici = control.serve(&mut |request| self.answer_json(request));
                self.ctl_refused = control.refused;
                if let Some(server) = &mut self.vici {
                    adopted = !vici.is_empty();
                    vici.into_iter().for_each(|s| server.adopt(s));
                }
            }
            if self.metrics.is_some() && ready[1] {
                // The page, rendered here and served by the metrics
                // thread: no client is waited for.
                if let Some(p) = self.metrics.take() {
                    p.publish(|| self.metrics_text(Some(p.counters())));
                    self.metrics = Some(p);
                }
            }
            self.ike_step(|ike, now, k| {
                ike.receive(now, k);
                ike.ike.poll(now, k);
            });
            let vici_ready = adopted || (self.vici.is_some() && ready[vici_at]);
            self.vici_turn(vici_ready);
            self.workers.flush_pending();
            self.resume_moved(self.start.elapsed());
            self.watch_volume();
            self.watch_sequences();
            if ready.get(hops_at) == Some(&true) {
                self.next_hop_events();
            }
            self.watch_next_hops();
            if self.filter.stale().is_some() {
                self.sync_filter();
            }
            if handles.iter().any(JoinHandle::is_finished) {
                break;
            }
        }
        None
    }

    /// Tell the peers, stop the workers, take down routes and filter, and
    /// sum the workers' counters; the first failure wins.
    fn shut_down(
        mut self,
        stop: &AtomicBool,
        handles: Vec<WorkerHandle>,
        failure: Option<RunError>,
    ) -> Result<Stats, RunError> {
        // strongSwan does the same on shutdown; the answers are not waited
        // for.
        self.ike_step(|ike, now, k| {
            let names: Vec<String> = ike.ike.list(now).into_iter().map(|s| s.name).collect();
            for name in names {
                let _ = ike.ike.terminate(now, Some(&name), None, k);
            }
        });
        let Plane {
            workers: reach,
            routes,
            filter,
            ..
        } = self;
        let mut failure = failure;
        let mut total = Stats::default();
        for (k, result) in stop_all(stop, reach.boxes(), handles)
            .into_iter()
            .enumerate()
        {
            match result {
                Ok(stats) => total.add(&stats),
                Err(error) => failure = failure.or(Some(RunError::Worker { index: k, error })),
            }
        }
        drop(routes);
        drop(filter);
        match failure {
            Some(e) => Err(e),
            None => Ok(total),
        }
    }
}

/// A reload's outcome, for the log (`ctl reload` gets it as JSON; IKE
/// logs what became of each connection).
fn log_reload(answer: &Result<crate::answers::Reloaded, reload::ReloadError>) {
    match answer {
        Err(e) => tracing::warn!(target: "cfg", "reload: {e}"),
        Ok(r) => {
            if let Some(s) = &r.setkey {
                tracing::info!(
                    target: "cfg",
                    "setkey file reloaded: {} SAs kept, {} added, {} removed{}",
                    s.kept,
                    s.added,
                    s.removed,
                    if s.policies_changed { ", policies changed" } else { "" }
                );
            }
        }
    }
}

/// The control thread's effective capabilities by name (`ctl status`).
fn capability_names() -> Vec<String> {
    use sys::privs::{CAP_NET_ADMIN, CAP_NET_BIND_SERVICE, CAP_NET_RAW};
    let bits = sys::privs::effective_capabilities().unwrap_or(0);
    (0..64)
        .filter(|c| bits & (1u64 << c) != 0)
        .map(|c| match c {
            CAP_NET_ADMIN => "cap_net_admin".to_string(),
            CAP_NET_RAW => "cap_net_raw".to_string(),
            CAP_NET_BIND_SERVICE => "cap_net_bind_service".to_string(),
            c => format!("cap_{c}"),
        })
        .collect()
}

/// Keep only the capabilities the data and control planes need
/// (CAP_NET_ADMIN, CAP_NET_RAW, CAP_NET_BIND_SERVICE) and set
/// `no_new_privs`; before any thread starts (capabilities are a thread's:
/// the ones started later inherit these).
fn drop_privileges() -> Result<(), RunError> {
    sys::privs::keep_only_network_capabilities().map_err(RunError::Privileges)
}

/// The control plane's state.
/// An SA moved to new endpoints (MOBIKE), waiting to seal again.
struct Moved {
    new: flowsec_ipsec::SaId,
    old: flowsec_ipsec::SaId,
    src: std::net::IpAddr,
}

struct Plane {
    tun: String,
    model: Model,
    workers: Workers,
    routes: Routes,
    filter: Filter,
    provider: Provider,
    caps: Capabilities,
    start: Instant,
    ike: Option<IkePlane>,
    /// When the SAs' volume was last looked at.
    volume_checked: Option<Duration>,
    /// Control connections refused for their credentials.
    ctl_refused: u64,
    /// The recorded sequence numbers of manual SAs, once one needs them.
    seq: Option<SeqState>,
    state_dir: PathBuf,
    /// When the manual SAs' sequence numbers were last looked at.
    seq_checked: Option<Duration>,
    /// SAs moved to new endpoints (MOBIKE): their new id, old id and new
    /// source; their copies wait until every worker has moved its own
    /// ([`Plane::resume_moved`]).
    moved: Vec<Moved>,
    /// `--metrics`: the metrics thread's end.
    metrics: Option<crate::metrics::Publisher>,
    /// The files a reload reads again (`-c`, `--setkey`).
    ike_path: Option<PathBuf>,
    swanctl_dir: Option<PathBuf>,
    setkey_path: Option<PathBuf>,
    /// What the `--setkey` file put in place.
    manual: reload::Manual,
    /// The vici socket.
    vici: Option<crate::vici::Server>,
    /// What vici clients loaded.
    loaded: crate::vici::Loaded,
    /// The `-c` file's configuration as last read (merged with `loaded`).
    file_config: Option<flowsec_ike::config::Config>,
    /// vici's `initiate` and `terminate` waiting for IKE.
    pending: Vec<vici_events::Pending>,
    /// When the daemon started, in local time (vici `stats`).
    since: String,
    /// Where raw IP packets leave (`--esp-send link`; `None`: `raw`).
    hops: Option<hops::HopWatch>,
}

impl Plane {
    /// Run `f` on the IKE core with a kernel over the model, then apply
    /// what it changed everywhere and send what it queued.
    fn ike_step<T>(
        &mut self,
        f: impl FnOnce(&mut IkePlane, Duration, &mut PlaneKernel<'_>) -> T,
    ) -> Option<T> {
        let now = self.start.elapsed();
        let mut ike = self.ike.take()?;
        // Certificates are valid between dates: the core is told the
        // wall clock (and follows a step of it) on every call.
        if let Ok(unix) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            ike.ike.set_wall_clock(now, unix);
        }
        let mut model = std::mem::take(&mut self.model);
        let mut spis = std::mem::take(&mut ike.spis);
        let (out, (changes, vips)) = {
            let mut k = PlaneKernel::new(&mut model, &mut spis, self.workers.len());
            let out = f(&mut ike, now, &mut k);
            (out, k.finish())
        };
        ike.spis = spis;
        self.model = model;
        // A virtual IP goes on the device before the routes that take it
        // as their source, and leaves after them.
        for (addr, _) in vips.iter().filter(|(_, add)| *add) {
            if let Err(e) = self.routes.add_vip(*addr) {
                tracing::error!(target: "net", "virtual IP {addr}: {e}");
            }
        }
        if !changes.is_empty() || !vips.is_empty() {
            self.apply_ike_changes(&changes, now);
        }
        for (addr, _) in vips.iter().filter(|(_, add)| !*add) {
            self.routes.del_vip(*addr);
        }
        ike.transmit();
        self.ike = Some(ike);
        Some(out)
    }

    /// Apply what IKE installed or removed: workers first (as for setkey),
    /// then routes and the plaintext filter follow the SPD.
    fn apply_ike_changes(&mut self, changes: &[apply::Change], now: Duration) {
        match apply::per_worker(changes, self.workers.len(), &self.provider, now) {
            Ok(lists) => self.apply_everywhere(lists),
            Err(e) => tracing::error!(target: "esp", "could not install what IKE negotiated: {e}"),
        }
        for c in changes {
            if let apply::Change::Move(id, to) = c {
                let new = flowsec_ipsec::SaId { dst: to.dst, ..*id };
                // Moved again before it resumed: the latest move counts.
                self.moved.retain(|m| m.new != new);
                self.moved.push(Moved {
                    new,
                    old: *id,
                    src: to.src,
                });
            }
        }
        self.resume_moved(now);
        if changes.is_empty() || changes.iter().any(|c| matches!(c, apply::Change::Spd(_))) {
            if let Err(e) = self.routes.sync(&self.model.spd) {
                tracing::error!(target: "net", "routes: {e}");
            }
            self.sync_filter();
        }
    }

    /// SAs that moved to new endpoints (MOBIKE) stop sealing in each
    /// worker as it applies the move (datapath/db.rs): the owner of their
    /// new endpoints may be another worker, whose copy never counted.
    /// Once every worker's report shows the SA under its new id only (the
    /// move applied everywhere, every copy stopped), every copy goes on
    /// above the highest number any copy used, so no number (and no GCM
    /// nonce) is used twice; until then they wait, asked again on each
    /// turn of the loop.
    fn resume_moved(&mut self, now: Duration) {
        // One removed or moved again since waits no more (for that move).
        let model = &self.model;
        self.moved
            .retain(|m| model.sas.get(&m.new).is_some_and(|c| c.src == m.src));
        if self.moved.is_empty() {
            return;
        }
        let reports = self.workers.reports();
        // A worker has applied the move when its copy is under the new id
        // with the new source, and none under the old id (when it changed).
        let everywhere = |m: &Moved| {
            reports.len() == self.workers.len()
                && reports.iter().all(|r| {
                    let moved = r.sas.iter().any(|s| s.id == m.new && s.src == Some(m.src));
                    moved && (m.old == m.new || !r.sas.iter().any(|s| s.id == m.old))
                })
        };
        let (ready, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.moved)
            .into_iter()
            .partition(everywhere);
        self.moved = waiting;
        let resumes: Vec<apply::Change> = ready
            .into_iter()
            .map(|Moved { new: id, .. }| {
                let used = reports
                    .iter()
                    .flat_map(|r| r.sas.iter())
                    .filter(|s| s.id == id)
                    .map(|s| s.live.seq)
                    .max()
                    .unwrap_or(0);
                apply::Change::Seq(
                    id,
                    SeqRange {
                        from: used,
                        ceiling: u64::MAX,
                    },
                )
            })
            .collect();
        if resumes.is_empty() {
            return;
        }
        if let Ok(lists) = apply::per_worker(&resumes, self.workers.len(), &self.provider, now) {
            self.apply_everywhere(lists);
        }
    }

    /// Bring the plaintext filter in line with the SPD, saying so when it
    /// starts or stops failing; called after IKE changes and, while it is
    /// stale, on every turn of the control loop.
    fn sync_filter(&mut self) {
        let was = self.filter.stale().is_some();
        match self.filter.sync(&self.model.spd) {
            Err(e) if !was => {
                tracing::error!(target: "net", "plaintext filter out of date, retrying: {e}")
            }
            Ok(()) if was => tracing::info!(target: "net", "plaintext filter in step again"),
            _ => {}
        }
    }

    /// With IKE, every [`VOLUME_EVERY`]: the SAs the workers found past a
    /// soft volume limit (`rekey_bytes`/`rekey_packets`), or without ESN
    /// near the end of their sequence numbers, go to IKE to be rekeyed.
    fn watch_volume(&mut self) {
        let now = self.start.elapsed();
        let Some(volume) = self.ike.as_ref().map(|i| i.ike.volume_limited()) else {
            return;
        };
        if self.volume_checked.is_some_and(|t| now < t + VOLUME_EVERY) {
            return;
        }
        self.volume_checked = Some(now);
        // Past a volume limit (rekey_bytes/packets), or without ESN near
        // the end of the sequence numbers: time limits are IKE's own.
        let near_end = |s: &SaReport| {
            s.live.seq >= flowsec_ipsec::sa::SEQ_SOFT_NO_ESN
                && self.model.sas.get(&s.id).is_some_and(|c| !c.esn)
        };
        let dying: Vec<flowsec_ipsec::SaId> = self
            .seen()
            .reports
            .iter()
            .flat_map(|r| r.sas.iter())
            .filter(|s| s.live.state == flowsec_ipsec::SaState::Dying && (volume || near_end(s)))
            .map(|s| s.id)
            .collect();
        for id in dying {
            self.ike_step(|p, now, k| p.ike.soft_expired(now, id, k));
        }
    }

    /// Every [`seqstate::CHECK_EVERY`], while manual SAs hold recorded
    /// sequence numbers: record more for those close to their ceiling,
    /// then let the workers go on. If the state cannot be written, the
    /// ceilings stay and those SAs stop sending (`seq_unreserved`).
    fn watch_sequences(&mut self) {
        let now = self.start.elapsed();
        let due = self.seq.as_ref().is_some_and(|s| !s.is_empty())
            && self
                .seq_checked
                .is_none_or(|t| now >= t + seqstate::CHECK_EVERY);
        if !due {
            return;
        }
        self.seq_checked = Some(now);
        let seen = self.seen();
        let sent = |id: &flowsec_ipsec::SaId| {
            seen.reports
                .iter()
                .flat_map(|r| r.sas.iter())
                .filter(|s| s.id == *id)
                .map(|s| s.live.seq)
                .max()
                .unwrap_or(0)
        };
        let Some(state) = self.seq.as_mut() else {
            return;
        };
        match state.extend(sent) {
            Ok(raised) if !raised.is_empty() => {
                let changes: Vec<apply::Change> = raised
                    .into_iter()
                    .map(|(id, ceiling)| apply::Change::Seq(id, SeqRange { from: 0, ceiling }))
                    .collect();
                if let Ok(lists) =
                    apply::per_worker(&changes, self.workers.len(), &self.provider, now)
                {
                    self.apply_everywhere(lists);
                }
            }
            Ok(_) => {}
            Err(e) => tracing::error!(target: "esp", "recording sequence numbers: {e}"),
        }
    }

    /// Milliseconds until the IKE core wants to be polled.
    fn ike_wait(&self) -> Option<i32> {
        let ike = self.ike.as_ref()?;
        let next = [ike.ike.next_timeout(), ike.roam_at()]
            .into_iter()
            .flatten()
            .min()?;
        let left = next.saturating_sub(self.start.elapsed());
        Some(i32::try_from(left.as_millis()).unwrap_or(i32::MAX))
    }

    /// Apply staged `changes` (from input named `name`) everywhere and
    /// make `model` the model: the workers first, then routes and the
    /// plaintext filter. Returns how many changes, or why they were
    /// refused (nothing applied) or undone (the policy part).
    fn commit(
        &mut self,
        name: &str,
        model: Model,
        changes: Vec<apply::Change>,
    ) -> Result<usize, CommitError> {
        let now = self.start.elapsed();
        let refused = |error| CommitError::Refused {
            name: name.to_string(),
            error: Box::new(error),
        };
        let (changes, seq) =
            apply::reserve_sequences(changes, &self.seq, &self.state_dir).map_err(refused)?;
        let lists = apply::per_worker(&changes, self.workers.len(), &self.provider, now)
            .map_err(refused)?;
        // The batch goes to the workers: its SAs are the ones whose
        // sequence numbers are now held (not before: a refused batch
        // must leave the running SAs' reservations as they were).
        self.seq = seq;
        // The workers first, and waited for: a route brings traffic into
        // the TUN only once every worker has the policy for it (before,
        // a worker without it would send that traffic on in the clear).
        self.apply_everywhere(lists);
        let spd_changed = changes.iter().any(|c| matches!(c, apply::Change::Spd(_)));
        if spd_changed {
            let synced = self
                .routes
                .sync(&model.spd)
                .map_err(PolicySyncError::Routes)
                .and_then(|()| {
                    self.filter
                        .sync(&model.spd)
                        .map_err(PolicySyncError::Filter)
                });
            if let Err(error) = synced {
                // iproute2 or nftables refused what was checked: put the
                // policies, routes and filter back as they were. The SA
                // changes stay (the workers hold no copy of a deleted SA's
                // keys to bring back).
                let _ = self.routes.sync(&self.model.spd);
                let _ = self.filter.sync(&self.model.spd);
                let old = vec![apply::Change::Spd(self.model.spd.clone())];
                if let Ok(lists) = apply::per_worker(&old, self.workers.len(), &self.provider, now)
                {
                    self.apply_everywhere(lists);
                }
                let mut kept = self.model.clone();
                kept.sas = model.sas;
                self.model = kept;
                return Err(CommitError::PoliciesUndone {
                    name: name.to_string(),
                    error,
                });
            }
        }
        self.model = model;
        Ok(changes.len())
    }

    /// Give every worker its list of changes and wait (up to
    /// [`REPORT_WAIT`] each) until it has applied them.
    fn apply_everywhere(&self, lists: Vec<Vec<apply::WorkerChange>>) {
        self.workers.apply(lists);
    }
}

/// Why the routes and the filter could not follow a setkey change.
#[derive(Debug)]
enum PolicySyncError {
    /// `ip` refused a route.
    Routes(ToolError),
    /// `nft` refused the table.
    Filter(ToolError),
}

impl fmt::Display for PolicySyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicySyncError::Routes(e) => write!(f, "routes: {e}"),
            PolicySyncError::Filter(e) => e.fmt(f),
        }
    }
}

/// Why a request of `flowsec ctl` got no answer: its text is what the
/// client reads (charon's `errmsg`, or the JSON socket's `error`).
#[derive(Debug)]
enum AnswerError {
    /// `flowsec-setkey` without its text.
    Request(crate::answers::MissingText),
    /// IKE's commands on a daemon without IKE.
    NoIke {
        /// The command.
        cmd: &'static str,
    },
    /// IKE refused the command.
    Ike {
        /// The command.
        cmd: &'static str,
        /// Why.
        error: flowsec_ike::CommandError,
    },
    /// The setkey input was refused (its file, line and column).
    Setkey(crate::apply::ConfigError),
    /// Its changes were refused or only partly applied.
    Commit(CommitError),
    /// A reload changed nothing, or only part of what it read.
    Reload(reload::ReloadError),
}

impl core::fmt::Display for AnswerError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            AnswerError::Request(e) => e.fmt(f),
            AnswerError::NoIke { cmd } => write!(
                f,
                "{cmd}: this daemon runs without IKE (flowsec up -c FILE)"
            ),
            AnswerError::Ike { cmd, error } => write!(f, "{cmd}: {error}"),
            AnswerError::Setkey(e) => e.fmt(f),
            AnswerError::Commit(e) => e.fmt(f),
            AnswerError::Reload(e) => write!(f, "reload: {e}"),
        }
    }
}

impl std::error::Error for AnswerError {}

/// Why staged changes were not applied, or not all of them
/// ([`Plane::commit`]).
#[derive(Debug)]
enum CommitError {
    /// Refused before any worker had them (sequence numbers could not be
    /// recorded, an SA could not be copied): nothing changed.
    Refused {
        name: String,
        error: Box<ConfigError>,
    },
    /// The routes or the filter could not follow the new policies: those
    /// were undone, the SA changes kept.
    PoliciesUndone {
        name: String,
        error: PolicySyncError,
    },
}

impl fmt::Display for CommitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommitError::Refused { name, error } => write!(f, "{name}: {error}"),
            CommitError::PoliciesUndone { name, error } => write!(
                f,
                "{name}: {error}: the policy changes were undone, the SA changes kept"
            ),
        }
    }
}
