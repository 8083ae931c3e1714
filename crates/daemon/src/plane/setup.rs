//! What `flowsec up` sets up before any worker runs (`Setup::prepare`):
//! the configuration checked whole and staged, the UDP 4500 groups, the
//! TUN queues, IKE, and each worker's descriptors, mailbox and databases.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use flowsec_crypto::Provider;

use super::RunError;
use super::{reload, Options};
use crate::apply::{self, Capabilities, ConfigError, Model, Staged, WorkerChange};
use crate::channels::{Inbox, Mailbox};
use crate::datapath::{Databases, Parallel};
use crate::fanout::Fanout;
use crate::filter::Filter;
use crate::ike::IkePlane;
use crate::nexthop::EspSend;
use crate::routes::Routes;
use crate::seqstate::SeqState;
use crate::sys;
use crate::worker::{self, Io, IoOptions};

/// What `flowsec up` sets up before any worker runs: the configuration
/// checked whole and staged, the UDP 4500 groups, the TUN queues, IKE, and
/// each worker's descriptors, mailbox and databases.
pub(super) struct Setup {
    pub(super) staged: Staged,
    pub(super) caps: Capabilities,
    pub(super) workers: usize,
    pub(super) ike: Option<(IkePlane, crate::channels::IkeSink)>,
    pub(super) seq_state: Option<SeqState>,
    pub(super) boxes: Vec<Mailbox>,
    pub(super) parts: Vec<WorkerParts>,
    /// What the `--setkey` file put in place (for a reload).
    pub(super) manual: reload::Manual,
    /// The `-c` file's configuration (vici's loads are merged with it).
    pub(super) file_config: Option<flowsec_ike::config::Config>,
    /// The raw ESP/AH fanout groups' table, kept while the daemon runs
    /// (`None`: raw sockets alone).
    pub(super) fanout: Option<Fanout>,
    /// How the workers use their descriptors (TUN offloads, link sends).
    pub(super) io_opts: IoOptions,
}

/// One worker's descriptors, databases, and the receiving end of its
/// mailbox with its eventfd.
pub(super) type WorkerParts = (Io, Databases, Inbox, Arc<OwnedFd>);

impl Setup {
    pub(super) fn prepare(opts: &Options, provider: &Provider) -> Result<Setup, RunError> {
        let workers = opts.workers.max(1);
        let (name, text) = read_setkey(opts)?;
        // The IKE configuration is checked whole before anything is set up.
        let ike_config = ike_config(opts, provider)?;
        let file_config = opts.ike.as_ref().and(ike_config.clone());
        log_ike_warnings(ike_config.as_ref());
        // The UDP 4500 groups first: whether ESP in UDP is possible over
        // each family is part of checking the file (they close again if it
        // fails).
        let udp = worker::open_udp_group(workers, false);
        let udp6 = worker::open_udp_group(workers, true);
        let caps = Capabilities {
            udp4: udp.is_some(),
            udp6: udp6.is_some(),
        };
        let mut staged = apply::stage(
            &Model::default(),
            &name,
            &text,
            provider,
            caps,
            Duration::ZERO,
        )
        .map_err(RunError::Config)?;
        for w in &staged.warnings {
            tracing::warn!(target: "cfg", "{w}");
        }
        let slots =
            |g: Option<Vec<OwnedFd>>| g.map(|g| g.into_iter().map(Some).collect::<Vec<_>>());
        let (mut udp, mut udp6) = (slots(udp), slots(udp6));
        let (tuns, io_opts) = open_tuns(opts, workers)?;
        // The IKE thread sends from worker 0's sockets of the 4500 groups
        // (the float to port 4500, RFC 7296 §2.23).
        let dup = |g: &Option<Vec<Option<OwnedFd>>>| {
            g.as_ref()
                .and_then(|g| g.first())
                .and_then(|fd| fd.as_ref())
                .and_then(|fd| fd.try_clone().ok())
        };
        let send4500 = [dup(&udp), dup(&udp6)];
        let ike = match ike_config {
            Some(config) => Some(open_ike(config, provider, opts, send4500)?),
            None => None,
        };
        let sockets = (udp.as_mut(), udp6.as_mut());
        // Manual AES-GCM and the like start above every sequence number
        // they may have used before (recorded before anything is installed).
        let (changes, seq_state) =
            apply::reserve_sequences(std::mem::take(&mut staged.changes), &None, &opts.state_dir)
                .map_err(RunError::Config)?;
        staged.changes = changes;
        let lists = apply::per_worker(&staged.changes, workers, provider, Duration::ZERO)
            .map_err(RunError::Config)?;
        let mut fanout = open_fanout(opts, workers);
        let (boxes, parts) = worker_parts(lists, &tuns, sockets, fanout.as_mut(), io_opts)?;
        let manual = reload::Manual::of(&staged);
        Ok(Setup {
            staged,
            caps,
            workers,
            ike,
            seq_state,
            boxes,
            parts,
            manual,
            file_config,
            fanout,
            io_opts,
        })
    }
}

/// A queue of the TUN device per worker, and how the workers use their
/// descriptors (the offloads the kernel took, link sends).
fn open_tuns(opts: &Options, workers: usize) -> Result<(Arc<Vec<OwnedFd>>, IoOptions), RunError> {
    let tuns: std::io::Result<Vec<sys::TunQueue>> = (0..workers)
        .map(|_| sys::open_tun(&opts.tun, workers > 1, opts.offload))
        .collect();
    let tuns = tuns.map_err(|error| RunError::Tun {
        name: opts.tun.clone(),
        error,
    })?;
    let io_opts = IoOptions {
        offload: opts.offload,
        uso: opts.offload && tuns.iter().all(|q| q.uso),
        send_link: opts.esp_send == EspSend::Link,
    };
    Ok((Arc::new(tuns.into_iter().map(|q| q.fd).collect()), io_opts))
}

/// The raw ESP/AH fanout groups (`--esp-receive fanout`, and `auto` with
/// 4 workers or more); where they cannot be had, raw sockets alone,
/// with a warning.
fn open_fanout(opts: &Options, workers: usize) -> Option<Fanout> {
    if !opts.esp_receive.fanout(workers) {
        // A table a crashed daemon left would hide ESP from the raw sockets.
        Fanout::remove_stale(&opts.tun);
        return None;
    }
    let v6 = sys::raw_sender_v6().is_ok();
    match Fanout::open(&opts.tun, workers, v6) {
        Ok(f) => Some(f),
        Err(e) => {
            tracing::warn!(target: "net", "raw ESP/AH fanout: {e}: each worker's raw socket sees every packet");
            None
        }
    }
}

/// What IKE starts with: the `-c` file; with `--vici` given and no
/// file, nothing (it waits for `swanctl --load-all`); else no IKE.
fn ike_config(
    opts: &Options,
    provider: &Provider,
) -> Result<Option<flowsec_ike::config::Config>, RunError> {
    Ok(match &opts.ike {
        Some(path) => Some(
            flowsec_ike::config::load_with(provider, path, opts.swanctl_dir.as_deref())
                .map_err(|e| RunError::Config(ConfigError::Ike(e)))?,
        ),
        None if opts.vici.as_ref().is_some_and(|v| v.explicit) => {
            Some(flowsec_ike::config::Config::default())
        }
        None => None,
    })
}

/// The IKE core and the control thread's end of it: port 500, and
/// duplicates of worker 0's UDP 4500 sockets to send from.
pub(super) fn open_ike(
    config: flowsec_ike::config::Config,
    provider: &Provider,
    opts: &Options,
    send4500: [Option<OwnedFd>; 2],
) -> Result<(IkePlane, crate::channels::IkeSink), RunError> {
    let core = flowsec_ike::Ike::new(
        config,
        provider.clone(),
        Box::new(flowsec_ike::random::OsRandom),
        flowsec_ike::Settings {
            // One per-resource Child SA per worker, in the flow mode.
            resources: match opts.parallel {
                Parallel::Flow => opts.workers.max(1) as u32,
                Parallel::Default | Parallel::Pcrypt => 1,
            },
            ..opts.ike_settings.clone()
        },
    );
    IkePlane::open(core, send4500).map_err(RunError::Ike)
}

/// A UDP 4500 group's sockets, one per worker, each taken by its worker.
pub(super) type UdpGroup = Vec<Option<OwnedFd>>;

/// Each worker's descriptors (its TUN queue, raw sockets, its socket of
/// each UDP 4500 group, taken from `udp`, and of each fanout group),
/// mailbox and databases, the changes of `lists` applied.
pub(super) fn worker_parts(
    lists: Vec<Vec<WorkerChange>>,
    tuns: &Arc<Vec<OwnedFd>>,
    udp: (Option<&mut UdpGroup>, Option<&mut UdpGroup>),
    mut fanout: Option<&mut Fanout>,
    io_opts: IoOptions,
) -> Result<(Vec<Mailbox>, Vec<WorkerParts>), RunError> {
    let (mut udp4, mut udp6) = udp;
    let workers = lists.len();
    let (mut boxes, mut parts) = (Vec::new(), Vec::new());
    for (index, list) in lists.into_iter().enumerate() {
        let sock = udp4.as_mut().and_then(|g| g[index].take());
        let sock6 = udp6.as_mut().and_then(|g| g[index].take());
        let taken = fanout.as_mut().map(|f| f.take(index)).unwrap_or_default();
        let io = Io::open(
            Arc::clone(tuns),
            (index, workers),
            (sock, sock6),
            taken,
            io_opts,
        )
        .map_err(RunError::WorkerIo)?;
        let (mailbox, rx, wake) = Mailbox::new().map_err(RunError::Mailbox)?;
        let mut db = Databases::default();
        db.apply(list);
        boxes.push(mailbox);
        parts.push((io, db, rx, wake));
    }
    Ok((boxes, parts))
}

/// What loading the IKE configuration noticed and let pass
/// (`flowsec_ike::config::Config::warnings`: our certificate not
/// validating here, say), logged as the setkey file's warnings are, at
/// start and at each reload.
pub(super) fn log_ike_warnings(config: Option<&flowsec_ike::config::Config>) {
    for w in config.iter().flat_map(|c| &c.warnings) {
        tracing::warn!(target: "cfg", "{w}");
    }
}

/// The `--setkey` file's name and text (`-` and nothing without one).
pub(super) fn read_setkey(
    opts: &Options,
) -> Result<(String, zeroize::Zeroizing<String>), RunError> {
    let Some(path) = &opts.setkey else {
        return Ok(("-".to_string(), zeroize::Zeroizing::new(String::new())));
    };
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| {
        RunError::Config(ConfigError::Read {
            file: name.clone(),
            error,
        })
    })?;
    Ok((name, zeroize::Zeroizing::new(text)))
}

/// The `flowsec: up (...)` line that says the daemon is ready.
pub(super) fn announce(opts: &Options, setup: &Setup, routes: &Routes, filter: &Filter) {
    let routed: Vec<String> = routes.prefixes().map(|p| p.to_string()).collect();
    tracing::info!(
        target: "cfg",
        "up (tun {}, {} workers, offloads {}, plaintext filter {}, raw ESP/AH {}, {} SAs, {} policies, routes via tun: {})",
        opts.tun,
        setup.workers,
        match (setup.io_opts.offload, setup.io_opts.uso) {
            (false, _) => "off",
            (true, false) => "on (TCP)",
            (true, true) => "on (TCP, UDP)",
        },
        filter.table().map_or("none".to_string(), |t| format!("nft inet {t}")),
        setup.fanout.as_ref().map_or("by raw sockets".to_string(), |f| format!("by fanout (nft inet {})", f.table())),
        setup.staged.model.sas.len(),
        setup.staged.model.spd.len(),
        if routed.is_empty() {
            "none".to_string()
        } else {
            routed.join(" ")
        }
    );
}
