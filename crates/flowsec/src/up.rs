//! `flowsec up`: the daemon, in the foreground (systemd-friendly): loads
//! manual keys and/or runs IKEv2 (`-c swanctl.conf`), opens the TUN device and sockets, routes protected traffic
//! into the TUN, and on SIGINT/SIGTERM removes what it installed.

use std::path::PathBuf;

use clap::Args;
use flowsec_daemon::Options;

use crate::{CliError, UsageError};

/// The IKE configuration `flowsec up` reads without `-c` and `--setkey`.
pub const DEFAULT_CONF: &str = "/etc/flowsec/swanctl.conf";

/// Arguments of `flowsec up`.
#[derive(Args, Debug)]
pub struct UpArgs {
    /// TUN device name.
    #[arg(long, default_value = "flowsec0")]
    pub tun: String,
    /// Manual keys and policies in setkey syntax, loaded at start (and
    /// again by `flowsec ctl reload`).
    #[arg(long, value_name = "FILE")]
    pub setkey: Option<PathBuf>,
    /// IKEv2 connections and secrets in swanctl.conf style: strongSwan's
    /// `connections { }` and `secrets { }` sections (read again by
    /// `flowsec ctl reload` or SIGHUP). Without -c and --setkey:
    /// /etc/flowsec/swanctl.conf.
    #[arg(short = 'c', long = "conf", value_name = "FILE")]
    pub conf: Option<PathBuf>,
    /// Where the certificates and keys are, in strongSwan's swanctl
    /// layout (x509/, x509ca/, x509crl/, private/, rsa/, ecdsa/,
    /// pkcs8/); default: the directory of the -c file.
    #[arg(long, value_name = "DIR")]
    pub swanctl_dir: Option<PathBuf>,
    /// MTU of the TUN device (the path MTU less the IPsec overhead).
    #[arg(long, default_value_t = 1400)]
    pub mtu: u16,
    /// Worker threads, each with its own TUN queue (default: one per CPU).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Crypto backend: auto, aws-lc, rustcrypto, or engine (ESP on a
    /// crypto-engine thread behind a request queue, study S4's offload).
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// No TUN offloads: one packet per read and write instead of TCP
    /// super-packets (for comparisons).
    #[arg(long)]
    pub no_offload: bool,
    /// How one gateway pair's traffic spreads over the workers (study
    /// S5's three systems): `flow` (each worker seals with its own
    /// per-resource SA where the policy has one, RFC 9611: setkey `-cpu`,
    /// IKE `per_cpu_sas`; with one SA per policy the same as `default`),
    /// `default` (one SA per policy at a time, sealed and opened by one
    /// worker) or `pcrypt` (one SA, numbered by one worker, its ESP
    /// crypto dealt to every worker in turn and the packets sent or
    /// delivered in order).
    #[arg(long, value_enum, default_value_t = ParallelArg::Flow)]
    pub parallel: ParallelArg,
    /// IKE: seconds before the first retransmission of a request
    /// (strongswan.conf `charon.retransmit_timeout`).
    #[arg(long, default_value_t = 4.0, value_name = "S")]
    pub retransmit_timeout: f64,
    /// IKE: each wait is this many times the last
    /// (`charon.retransmit_base`).
    #[arg(long, default_value_t = 1.8, value_name = "X")]
    pub retransmit_base: f64,
    /// IKE: retransmissions before the peer is declared dead
    /// (`charon.retransmit_tries`).
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub retransmit_tries: u32,
    /// IKE: the largest datagram of an IKE fragment, IP and UDP headers
    /// included (strongswan.conf `charon.fragment_size`; RFC 7383): with
    /// `fragmentation = yes` a protected message larger than this goes in
    /// fragments (256 to 65535).
    #[arg(long, default_value_t = 1280, value_name = "BYTES")]
    pub fragment_size: usize,
    /// Run without the inbound plaintext filter (the nftables table that
    /// drops plaintext an inbound policy covers, RFC 4301 §5.2). Without
    /// this flag, flowsec up refuses to start when it cannot install it.
    #[arg(long)]
    pub no_plaintext_filter: bool,
    /// How raw ESP and AH reach the workers: `fanout` (one packet socket
    /// per worker in a PACKET_FANOUT group steered by SPI, each packet
    /// taken once, the kernel's copy dropped by an nftables table
    /// `inet flowsec_<tun>_rx` at prerouting, so later prerouting and
    /// input rules do not see it), `raw` (a raw socket per worker, each
    /// seeing every packet, after the firewall's input rules), or `auto`:
    /// `fanout` with 4 workers or more, else `raw`. `fanout` falls back
    /// to `raw`, with a warning, where it cannot be set up.
    #[arg(long, value_enum, default_value_t = EspReceiveArg::Auto)]
    pub esp_receive: EspReceiveArg,
    /// How raw ESP/AH (and bypassed) packets leave: `link` (straight to
    /// the neighbor on its link by a packet socket, where the kernel's
    /// route and neighbor tables name one, asked once a second and on
    /// the kernel's change reports; else as `raw`; faster, but output
    /// netfilter rules do not see them, which is why it is not the
    /// default; qdiscs and tcpdump do) or `raw` (a raw socket, through
    /// the kernel's IP output).
    #[arg(long, value_enum, default_value_t = EspSendArg::Raw)]
    pub esp_send: EspSendArg,
    /// Where flowsec records the sequence numbers of manual (setkey) SAs
    /// with AES-GCM, AES-CCM, ChaCha20-Poly1305, AES-GMAC or AES-CTR, so
    /// that a restart never repeats a nonce under the same key (one small
    /// file per key, named by a hash; never the keys).
    #[arg(long, value_name = "DIR", env = "FLOWSEC_STATE_DIR", default_value = flowsec_daemon::DEFAULT_STATE_DIR)]
    pub state_dir: PathBuf,
    /// Members of this group (a name or a number) may use the control
    /// socket besides root (it is then mode 0660, that group's).
    #[arg(long, value_name = "GROUP")]
    pub ctl_group: Option<String>,
    /// Accept IKE and ESP over TCP on this port (RFC 9329; 4500 if no port
    /// is given; repeat for more, e.g. 443): as a responder, for peers
    /// whose UDP is blocked. Plain TCP and TLS are told apart by their
    /// first byte. Connections with `tcp_encap` listen on their
    /// `tcp_port` without it.
    #[arg(long, value_name = "PORT", num_args = 0..=1, default_missing_value = "4500", action = clap::ArgAction::Append)]
    pub tcp_listen: Vec<u16>,
    /// Serve Prometheus metrics at http://ADDR:PORT/metrics: per-SA bytes
    /// and packets, per-worker drops by reason, IKE's counters, SAs by
    /// state, rekeys (e.g. 127.0.0.1:9469). Unauthenticated: bind it to
    /// loopback or firewall it; scrape it by IP address (a host name in
    /// Host gets 421, against DNS rebinding).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Log levels per subsystem, as strongSwan's filelog: ike (IKE SAs),
    /// chd (Child SAs), cfg (configuration), net (sockets, TCP, routes,
    /// filter), esp (SAs in the data plane), ctl (control socket,
    /// metrics), default; -1 nothing, 0 failures and warnings, 1 what
    /// happens to SAs (the default), 2 and up more (never keys). E.g.
    /// `ike=2,cfg=0` or `ike 2, cfg 0`.
    #[arg(
        long,
        value_name = "LEVELS",
        env = "FLOWSEC_LOG",
        default_value = "default=1"
    )]
    pub log: flowsec_daemon::log::Levels,
    /// Write the log to this file (appended, each line with the local
    /// time) instead of standard error.
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// The control socket (`flowsec ctl` and `flowsec setkey` talk to it).
    #[arg(long, env = "FLOWSEC_SOCKET", default_value = flowsec_daemon::DEFAULT_SOCKET)]
    pub socket: PathBuf,
    /// Serve vici, strongSwan's control protocol (`swanctl`, the vici
    /// libraries), at unix:///PATH or tcp://ADDR:PORT, or `none`. Default:
    /// charon's unix:///var/run/charon.vici, skipped with a warning if
    /// another daemon holds it. Given without -c, IKE starts with
    /// /etc/flowsec/swanctl.conf if that exists, else with nothing, and
    /// takes connections from `swanctl --load-all`; a -c file and vici's
    /// connections run side by side (a name in both is refused).
    #[arg(long, value_name = "URI")]
    pub vici: Option<String>,
}

/// `--vici`: where, or `None` for `none`.
fn vici_option(arg: Option<&str>) -> Result<Option<flowsec_daemon::ViciOption>, UsageError> {
    let (text, explicit) = match arg {
        Some("none") => return Ok(None),
        Some(t) => (t, true),
        None => (flowsec_daemon::DEFAULT_VICI_URI, false),
    };
    let uri = flowsec_daemon::ViciUri::parse(text).ok_or_else(|| UsageError::Vici(text.into()))?;
    Ok(Some(flowsec_daemon::ViciOption { uri, explicit }))
}

/// `--esp-receive`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum EspReceiveArg {
    /// `fanout` with 4 workers or more, else `raw`.
    Auto,
    /// A packet-socket fanout group: each packet once, to its worker.
    Fanout,
    /// A raw socket per worker, each seeing every packet.
    Raw,
}

/// `--esp-send`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum EspSendArg {
    /// Straight to the neighbor on its link, where known.
    Link,
    /// A raw socket, through IP output.
    Raw,
}

/// `--parallel`: study S5's systems.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParallelArg {
    /// One SA per policy at a time, sealed by the worker that owns the
    /// endpoint pair.
    Default,
    /// Per-resource SAs: each worker seals with its own.
    Flow,
    /// One SA per policy, its crypto dealt to every worker in turn and
    /// the results sent in order (Linux's pcrypt).
    Pcrypt,
}

/// IKE's retransmission and fragmentation settings, checked.
fn ike_settings(args: &UpArgs) -> Result<flowsec_ike::Settings, UsageError> {
    if !(0.05..=3600.0).contains(&args.retransmit_timeout)
        || !(1.0..=10.0).contains(&args.retransmit_base)
        || args.retransmit_tries > 20
    {
        return Err(UsageError::Retransmit);
    }
    if !(256..=65535).contains(&args.fragment_size) {
        return Err(UsageError::FragmentSize(args.fragment_size));
    }
    let retransmit = flowsec_ike::exchange::Retransmit {
        timeout: std::time::Duration::from_secs_f64(args.retransmit_timeout),
        base: args.retransmit_base,
        tries: args.retransmit_tries,
    };
    Ok(flowsec_ike::Settings {
        retransmit,
        fragment_size: args.fragment_size,
        ..flowsec_ike::Settings::default()
    })
}

/// The IKE file: `-c`; without it and `--setkey`, what a service runs
/// without options (contrib/flowsec.service), /etc/flowsec/swanctl.conf —
/// unless `--vici` was given and that file does not exist (IKE then
/// waits for vici clients).
fn ike_file(args: &UpArgs, vici: Option<&flowsec_daemon::ViciOption>) -> Option<PathBuf> {
    let vici_only =
        vici.is_some_and(|v| v.explicit) && !std::path::Path::new(DEFAULT_CONF).exists();
    match (&args.conf, &args.setkey) {
        (None, None) if vici_only => None,
        (None, None) => Some(PathBuf::from(DEFAULT_CONF)),
        (conf, _) => conf.clone(),
    }
}

pub fn run(args: &UpArgs) -> Result<(), CliError> {
    if !(576..=9000).contains(&args.mtu) {
        return Err(UsageError::Mtu(args.mtu).into());
    }
    let workers = match args.workers {
        Some(0) => return Err(UsageError::NoWorkers.into()),
        Some(n) if n > 256 => return Err(UsageError::TooManyWorkers(n).into()),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    if args.tcp_listen.contains(&0) {
        return Err(UsageError::TcpPort.into());
    }
    let ctl_group = match &args.ctl_group {
        Some(g) => Some(flowsec_daemon::group_id(g).map_err(UsageError::CtlGroup)?),
        None => None,
    };
    let backend = flowsec_crypto::Provider::canonical_name(&args.backend)
        .ok_or_else(|| UsageError::UpBackend(args.backend.clone()))?;
    let ike_settings = ike_settings(args)?;
    let sink = match &args.log_file {
        Some(path) => flowsec_daemon::log::Sink::File(path.clone()),
        None => flowsec_daemon::log::Sink::Stderr,
    };
    flowsec_daemon::log::init(&args.log, &sink).map_err(UsageError::LogFile)?;
    let vici = vici_option(args.vici.as_deref())?;
    let opts = Options {
        ike: ike_file(args, vici.as_ref()),
        vici,
        ike_settings,
        backend: backend.to_string(),
        workers,
        offload: !args.no_offload,
        parallel: match args.parallel {
            ParallelArg::Default => flowsec_daemon::Parallel::Default,
            ParallelArg::Flow => flowsec_daemon::Parallel::Flow,
            ParallelArg::Pcrypt => flowsec_daemon::Parallel::Pcrypt,
        },
        plaintext_filter: !args.no_plaintext_filter,
        esp_receive: match args.esp_receive {
            EspReceiveArg::Auto => flowsec_daemon::EspReceive::Auto,
            EspReceiveArg::Fanout => flowsec_daemon::EspReceive::Fanout,
            EspReceiveArg::Raw => flowsec_daemon::EspReceive::Raw,
        },
        esp_send: match args.esp_send {
            EspSendArg::Link => flowsec_daemon::EspSend::Link,
            EspSendArg::Raw => flowsec_daemon::EspSend::Raw,
        },
        ctl_group,
        state_dir: args.state_dir.clone(),
        tcp_listen: args.tcp_listen.clone(),
        metrics: args.metrics,
        tun: args.tun.clone(),
        setkey: args.setkey.clone(),
        swanctl_dir: args.swanctl_dir.clone(),
        mtu: args.mtu,
        socket: args.socket.clone(),
    };
    match flowsec_daemon::run(&opts) {
        Ok(stats) => {
            tracing::info!(target: "cfg", "down: {stats}");
            Ok(())
        }
        Err(e) => Err(CliError::Up(e)),
    }
}
