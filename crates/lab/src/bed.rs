//! A protected path through the lab topology: what protects it (a
//! [`Setup`]: none, or a bundle of AH/ESP/IPComp in transport or tunnel
//! mode, over IPv4 or IPv6, keyed by hand with setkey as studies S1–S3
//! did), the two `flowsec up` gateways that do it, and `flowsec perf`
//! servers at both ends.
//!
//! Transport mode protects gwA ↔ gwB themselves (the studies' two hosts);
//! tunnel mode protects hostA's site ↔ hostB's site through the gateways.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use crate::ike_bed::{IkeSetup, Watch};
use crate::peers::Peer;
use crate::topology::Topology;
use crate::LabError;

/// The address family of the protected traffic (and of the outer
/// headers: the studies never mixed them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        }
    }

    /// gwA's and gwB's transit addresses.
    pub(crate) fn gateways(self) -> (&'static str, &'static str) {
        match self {
            Family::V4 => ("192.0.2.1", "192.0.2.2"),
            Family::V6 => ("2001:db8::1", "2001:db8::2"),
        }
    }

    /// hostA's and hostB's addresses, and their sites.
    pub(crate) fn hosts(self) -> ((&'static str, &'static str), (&'static str, &'static str)) {
        match self {
            Family::V4 => (("10.1.0.2", "10.1.0.0/24"), ("10.2.0.2", "10.2.0.0/24")),
            Family::V6 => (
                ("2001:db8:1::2", "2001:db8:1::/64"),
                ("2001:db8:2::2", "2001:db8:2::/64"),
            ),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Transport,
    Tunnel,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Transport => "transport",
            Mode::Tunnel => "tunnel",
        }
    }
}

/// One transform of a bundle, setkey's algorithm names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// ESP with a cipher (`null` for none) and an integrity algorithm
    /// (`None` for an AEAD or no integrity).
    Esp {
        enc: &'static str,
        auth: Option<&'static str>,
    },
    Ah {
        auth: &'static str,
    },
    /// IPComp (deflate), applied before the steps after it.
    IpComp,
}

impl Step {
    fn label(self) -> String {
        match self {
            Step::Esp { enc, auth: None } => format!("ESP {enc}"),
            Step::Esp { enc, auth: Some(a) } => format!("ESP {enc}/{a}"),
            Step::Ah { auth } => format!("AH {auth}"),
            Step::IpComp => "IPComp deflate".into(),
        }
    }

    fn proto(self) -> &'static str {
        match self {
            Step::Esp { .. } => "esp",
            Step::Ah { .. } => "ah",
            Step::IpComp => "ipcomp",
        }
    }
}

/// Key length in bytes of a setkey algorithm (ciphers with their salt or
/// nonce, as setkey takes them; Blowfish at study S1's 192 bits).
fn key_len(alg: &str) -> usize {
    match alg {
        "null" => 0,
        "des-cbc" => 8,
        "3des-cbc" | "blowfish-cbc" => 24,
        "aes-ctr" | "aes-gmac" => 20,
        a if a.starts_with("aes-gcm") => 20,
        a if a.starts_with("aes-ccm") => 19,
        "chacha20-poly1305" => 36,
        "hmac-sha1" => 20,
        "hmac-sha256" => 32,
        "hmac-sha384" => 48,
        "hmac-sha512" => 64,
        // aes-cbc, twofish-cbc, camellia-cbc, cast128-cbc: 128 bits;
        // hmac-md5, aes-xcbc-mac, aes-cmac: 16 bytes.
        _ => 16,
    }
}

/// The key argument for `alg` (with its leading space; none for `null`),
/// different per `salt` (SA and direction).
fn key(alg: &str, salt: u8) -> String {
    let n = key_len(alg);
    let mut s = String::from(" 0x");
    if n == 0 {
        return String::new();
    }
    for i in 0..n {
        let b = (i as u8)
            .wrapping_mul(29)
            .wrapping_add(salt.wrapping_mul(71))
            ^ 0x5a;
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// What protects the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    pub family: Family,
    pub mode: Mode,
    /// Innermost first (setkey's rule order); empty: no IPsec (with
    /// flowsec; wireguard-go has its own suite and ignores them).
    pub steps: Vec<Step>,
    /// Who does it.
    pub peer: Peer,
    /// Per-resource SAs (RFC 9611, study S5): besides each ESP/AH SA, one
    /// per worker (`-cpu 0` … `-cpu N-1`), with SPIs the receiver steers
    /// to that worker (SPI ≡ k mod N). 0: none.
    pub per_cpu: u32,
}

impl Setup {
    /// `steps` by flowsec.
    pub fn new(family: Family, mode: Mode, steps: &[Step]) -> Setup {
        Setup {
            family,
            mode,
            steps: steps.to_vec(),
            peer: Peer::Flowsec,
            per_cpu: 0,
        }
    }

    /// The same with `n` per-resource SAs per ESP/AH SA.
    pub fn per_cpu(self, n: u32) -> Setup {
        Setup { per_cpu: n, ..self }
    }

    /// The same, done by `peer`.
    pub fn on(self, peer: Peer) -> Setup {
        Setup { peer, ..self }
    }

    /// `none`, `ESP 3des-cbc/hmac-sha1`, `ESP aes-cbc/hmac-sha1 + AH
    /// hmac-sha1`, `strongSwan ESP aes-cbc/hmac-sha1`, `wireguard-go`.
    pub fn label(&self) -> String {
        match self.peer {
            Peer::WireGuardGo => return "wireguard-go ChaCha20-Poly1305".into(),
            Peer::StrongSwan => return format!("strongSwan {}", self.transforms()),
            Peer::Flowsec if self.steps.is_empty() => return "none".into(),
            Peer::Flowsec => {}
        }
        self.transforms()
    }

    fn transforms(&self) -> String {
        self.steps
            .iter()
            .map(|s| s.label())
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// The setkey file of gwA (`a`) or gwB.
    pub fn setkey(&self, a: bool) -> String {
        let (ga, gb) = self.family.gateways();
        let (local, remote) = if a { (ga, gb) } else { (gb, ga) };
        let mode = self.mode.name();
        let mut s = String::new();
        for (i, step) in self.steps.iter().enumerate() {
            for (dir, (src, dst)) in [(ga, gb), (gb, ga)].into_iter().enumerate() {
                let spi = 0x1000 + 0x100 * i + dir + 1;
                // Every SA its own keys (`salt`): SAs counting from 1
                // under one key would repeat AES-GCM's nonces.
                let algs = |salt: u8| match *step {
                    Step::Esp { enc, auth } => {
                        let mut a = format!("-E {enc}{}", key(enc, salt));
                        if let Some(auth) = auth {
                            a += &format!(" -A {auth}{}", key(auth, salt.wrapping_add(100)));
                        }
                        a
                    }
                    Step::Ah { auth } => format!("-A {auth}{}", key(auth, salt.wrapping_add(100))),
                    Step::IpComp => "-C deflate".into(),
                };
                let salt = (2 * i + dir) as u8;
                let replay = if *step == Step::IpComp { "" } else { "-r 64 " };
                s += &format!(
                    "add {src} {dst} {} {spi:#x} -m {mode} {replay}{};\n",
                    step.proto(),
                    algs(salt)
                );
                if *step == Step::IpComp {
                    continue;
                }
                // The set's per-resource SAs: SPIs from a multiple of N,
                // so that SA k lands on the receiver's worker k; their
                // salts after the 2 × steps of the ordinary SAs.
                let n = self.per_cpu as usize;
                for k in 0..n {
                    let spi = n * 0x1000 * (0x10 + 2 * i + dir) + k;
                    let salt = (8 + 8 * k + 2 * i + dir) as u8;
                    s += &format!(
                        "add {src} {dst} {} {spi:#x} -m {mode} {replay}-cpu {k} {};\n",
                        step.proto(),
                        algs(salt)
                    );
                }
            }
        }
        if self.steps.is_empty() {
            return s;
        }
        let rules = |from: &str, to: &str| {
            self.steps
                .iter()
                .map(|st| {
                    let level = if *st == Step::IpComp {
                        "use"
                    } else {
                        "require"
                    };
                    match self.mode {
                        Mode::Transport => format!("{}/transport//{level}", st.proto()),
                        Mode::Tunnel => format!("{}/tunnel/{from}-{to}/{level}", st.proto()),
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        let (out_rules, in_rules) = (rules(local, remote), rules(remote, local));
        match self.mode {
            Mode::Transport => {
                s += &format!("spdadd {local} {remote} any -P out ipsec {out_rules};\n");
                s += &format!("spdadd {remote} {local} any -P in ipsec {in_rules};\n");
                if self.family == Family::V6 {
                    // The peer is an on-link neighbour: its unicast
                    // Neighbor Solicitations and Advertisements (RFC 4861
                    // §4.3–4.4) must pass in the clear, or the link never
                    // resolves (strongSwan's "IPv6 and the Neighbor
                    // Discovery Protocol" says the same of any stack).
                    for t in [135, 136] {
                        s += &format!(
                            "spdadd {local} {remote} icmp6 {t},0 -P out prio high none;\n"
                        );
                        s +=
                            &format!("spdadd {remote} {local} icmp6 {t},0 -P in prio high none;\n");
                    }
                }
            }
            Mode::Tunnel => {
                let ((_, na), (_, nb)) = self.family.hosts();
                let (lnet, rnet) = if a { (na, nb) } else { (nb, na) };
                s += &format!("spdadd {lnet} {rnet} any -P out ipsec {out_rules};\n");
                for dir in ["in", "fwd"] {
                    s += &format!("spdadd {rnet} {lnet} any -P {dir} ipsec {in_rules};\n");
                }
            }
        }
        s
    }

    /// The two ends of the measured path: (namespace, address) of the
    /// client side and of the server side.
    pub fn ends(&self) -> ((&'static str, &'static str), (&'static str, &'static str)) {
        match self.mode {
            Mode::Transport => {
                let (a, b) = self.family.gateways();
                (("gwA", a), ("gwB", b))
            }
            Mode::Tunnel => {
                let ((a, _), (b, _)) = self.family.hosts();
                (("hostA", a), ("hostB", b))
            }
        }
    }
}

/// A running setup: the topology, the gateways (unless `none`) and a
/// `flowsec perf server` at each end. Dropping it removes everything.
pub struct Bed {
    topo: Topology,
    bin: String,
    setup: Setup,
    /// Files outside the work directory to remove once the processes are
    /// gone (wireguard-go's UAPI sockets).
    leftovers: Vec<PathBuf>,
    /// Keyed by IKEv2 ([`Bed::up_ike`]): who runs each gateway, and where
    /// their sockets are.
    ike: Option<(IkeSetup, PathBuf)>,
}

impl Bed {
    /// Build the topology and start what `setup` needs; logs and
    /// configuration files go into `work` (an existing directory).
    pub fn up(setup: &Setup, work: &Path) -> Result<Bed, LabError> {
        Bed::up_with(setup, work, &[])
    }

    /// [`Bed::up`], with more arguments for both `flowsec up`s
    /// (`--backend engine`).
    pub fn up_with(setup: &Setup, work: &Path, up_args: &[&str]) -> Result<Bed, LabError> {
        let bin = std::env::current_exe()
            .map_err(LabError::OwnBinary)?
            .to_string_lossy()
            .into_owned();
        // Whether it is installed was asked when the setup was chosen
        // (RunOptions::others); what is missing fails below, by name.
        setup.peer.applies(setup).map_err(|why| LabError::Peer {
            peer: setup.peer,
            why,
        })?;
        let mut bed = Bed {
            topo: Topology::build()?,
            bin,
            setup: setup.clone(),
            leftovers: Vec::new(),
            ike: None,
        };
        match setup.peer {
            Peer::Flowsec if !setup.steps.is_empty() => bed.flowsec(work, up_args)?,
            Peer::Flowsec => {}
            Peer::StrongSwan => crate::peers::strongswan(&mut bed.topo, setup, work)?,
            Peer::WireGuardGo => {
                // Recorded as they are created: removed however this ends.
                crate::peers::wireguard(&mut bed.topo, setup, work, &mut bed.leftovers)?
            }
        }
        bed.perf_servers(work)?;
        Ok(bed)
    }

    /// A `flowsec perf server` at both ends of the measured path.
    fn perf_servers(&mut self, work: &Path) -> Result<(), LabError> {
        let ((client, _), (server, _)) = self.setup.ends();
        for host in [server, client] {
            self.topo.spawn(
                host,
                &[&self.bin, "perf", "server", "--bind", "::"],
                &work.join(format!("perf-server-{host}.log")),
                Some("listening"),
            )?;
        }
        Ok(())
    }

    /// Two gateways keyed by IKEv2 as `ike` says (flowsec or strongSwan
    /// at each end, one tunnel-mode Child SA between hostA and hostB over
    /// IPv4), the Child SA up from gwA, and the perf servers; files and
    /// logs in `work`.
    pub fn up_ike(ike: &IkeSetup, work: &Path) -> Result<Bed, LabError> {
        let bin = std::env::current_exe()
            .map_err(LabError::OwnBinary)?
            .to_string_lossy()
            .into_owned();
        let setup = Setup::new(Family::V4, Mode::Tunnel, &[]);
        for end in [&ike.a, &ike.b] {
            if end.imp != Peer::Flowsec {
                end.imp
                    .installed()
                    .map_err(|why| LabError::Peer { peer: end.imp, why })?;
            }
        }
        let mut bed = Bed {
            topo: Topology::build()?,
            bin,
            setup,
            leftovers: Vec::new(),
            ike: Some((ike.clone(), work.to_path_buf())),
        };
        let (ga, gb) = Family::V4.gateways();
        let ((_, na), (_, nb)) = Family::V4.hosts();
        for (gw, end, local, remote, lnet, rnet) in [
            ("gwA", &ike.a, ga, gb, na, nb),
            ("gwB", &ike.b, gb, ga, nb, na),
        ] {
            let text = end.swanctl_conf(&ike.esp, (local, lnet), (remote, rnet));
            if end.imp == Peer::StrongSwan {
                crate::peers::charon_up(&mut bed.topo, gw, work, &text)?;
                continue;
            }
            let file = work.join(format!("{gw}-swanctl.conf"));
            std::fs::write(&file, text).map_err(crate::error::at(&file))?;
            let file = file.to_string_lossy().into_owned();
            let sock = work
                .join(format!("{gw}.sock"))
                .to_string_lossy()
                .into_owned();
            let bin = bed.bin.clone();
            let mut cmd = vec![
                bin.as_str(),
                "up",
                "-c",
                &file,
                "--tun",
                "flab0",
                "--socket",
                &sock,
            ];
            cmd.extend(end.up_args.iter().copied());
            bed.spawn_flowsec(gw, cmd, work)?;
        }
        if ike.a.imp == Peer::StrongSwan {
            crate::peers::swanctl_initiate(&bed.topo, work)?;
        } else {
            let sock = work.join("gwA.sock").to_string_lossy().into_owned();
            bed.topo.output(
                "gwA",
                &[
                    &bed.bin, "ctl", "--socket", &sock, "initiate", "--child", "lab",
                ],
            )?;
        }
        bed.wait_for_children()?;
        bed.perf_servers(work)?;
        Ok(bed)
    }

    /// Start `flowsec up` (`cmd`) in gateway `gw`, its log in `work`, and
    /// wait for its ready line. flowsec up refuses to start without its
    /// plaintext filter; where nftables is missing the lab measures without
    /// it (and says so in the gateway's log).
    fn spawn_flowsec(&mut self, gw: &str, mut cmd: Vec<&str>, work: &Path) -> Result<(), LabError> {
        if !nft_present() {
            cmd.push("--no-plaintext-filter");
        }
        self.topo.spawn(
            gw,
            &cmd,
            &work.join(format!("{gw}-up.log")),
            Some("[CFG] up ("),
        )
    }

    /// Wait until both gateways hold a Child SA.
    fn wait_for_children(&self) -> Result<(), LabError> {
        let start = std::time::Instant::now();
        loop {
            crate::topology::check_interrupted()?;
            let mut up = true;
            for gw in ["gwA", "gwB"] {
                up &= !self
                    .watch(gw)
                    .map(|w| w.spis())
                    .transpose()?
                    .unwrap_or_default()
                    .is_empty();
            }
            if up {
                return Ok(());
            }
            if start.elapsed() > std::time::Duration::from_secs(15) {
                return Err(LabError::NoChildSa);
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    /// A [`Watch`] on gateway `gw`'s Child SAs (IKE beds only).
    pub fn watch(&self, gw: &str) -> Option<Watch> {
        let (ike, work) = self.ike.as_ref()?;
        let end = if gw == "gwA" { &ike.a } else { &ike.b };
        Some(Watch::new(end.imp, &self.bin, work, gw))
    }

    /// Two `flowsec up` gateways keyed with the setup's setkey files.
    fn flowsec(&mut self, work: &Path, up_args: &[&str]) -> Result<(), LabError> {
        for (gw, a) in [("gwA", true), ("gwB", false)] {
            let file = work.join(format!("{gw}.setkey"));
            std::fs::write(&file, self.setup.setkey(a)).map_err(crate::error::at(&file))?;
            let (f, sock) = (
                file.to_string_lossy().into_owned(),
                work.join(format!("{gw}.sock"))
                    .to_string_lossy()
                    .into_owned(),
            );
            let bin = self.bin.clone();
            let mut cmd = vec![
                bin.as_str(),
                "up",
                "--tun",
                "flab0",
                "--setkey",
                &f,
                "--socket",
                &sock,
            ];
            // The lab's keys are the same on every run: their sequence
            // numbers are recorded in the run's own directory.
            let state = work.join("state").to_string_lossy().into_owned();
            cmd.extend_from_slice(&["--state-dir", &state]);
            cmd.extend_from_slice(up_args);
            self.spawn_flowsec(gw, cmd, work)?;
        }
        Ok(())
    }

    /// `flowsec perf client -H <server end> ARGS --json` at the client
    /// end (or, `reverse`, the other way), parsed; `args` are split at
    /// white space (`"-t TCP_STREAM -m 8192"`).
    pub fn perf<T: DeserializeOwned>(&self, reverse: bool, args: &str) -> Result<T, LabError> {
        let ((client, caddr), (server, saddr)) = self.setup.ends();
        let (from, to) = if reverse {
            (server, caddr)
        } else {
            (client, saddr)
        };
        let mut cmd = vec![self.bin.as_str(), "perf", "client", "-H", to];
        cmd.extend(args.split_whitespace());
        cmd.push("--json");
        let out = self.topo.output(from, &cmd)?;
        serde_json::from_str(&out).map_err(|error| LabError::PerfOutput {
            label: self.setup.label(),
            error,
        })
    }

    /// Start `cmd` in namespace `host` until the bed is dropped (its
    /// stderr to `log`; with `ready`, once that text is in the log).
    pub fn spawn(
        &mut self,
        host: &str,
        cmd: &[&str],
        log: &Path,
        ready: Option<&str>,
    ) -> Result<(), LabError> {
        self.topo.spawn(host, cmd, log, ready)
    }

    /// The ends of the measured path (see [`Setup::ends`]).
    pub fn setup_ends(&self) -> ((&'static str, &'static str), (&'static str, &'static str)) {
        self.setup.ends()
    }

    /// Run `cmd` in namespace `host`; its standard output.
    pub fn output(&self, host: &str, cmd: &[&str]) -> Result<String, LabError> {
        self.topo.output(host, cmd)
    }

    /// `sysctl -w SETTING` in namespace `host` (`net.ipv4.tcp_tw_reuse=1`).
    pub fn sysctl(&self, host: &str, setting: &str) -> Result<(), LabError> {
        self.topo.exec(host, &["sysctl", "-qw", setting])
    }

    /// The namespace of `host` (its full name, for `ip netns exec`).
    pub fn namespace(&self, host: &str) -> String {
        self.topo.ns(host)
    }

    /// Start a CPU-bound process (study S1's "CPU hog") until the bed is
    /// dropped.
    pub fn hog(&mut self, work: &Path) -> Result<(), LabError> {
        self.topo.spawn(
            "gwA",
            &["sh", "-c", "while :; do :; done"],
            &work.join("hog.log"),
            None,
        )
    }
}

/// Whether nftables is installed.
fn nft_present() -> bool {
    ["/usr/sbin/nft", "/sbin/nft"]
        .iter()
        .any(|p| Path::new(p).is_file())
}

impl Drop for Bed {
    fn drop(&mut self) {
        self.topo.stop_all();
        for f in &self.leftovers {
            let _ = std::fs::remove_file(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setkey_files_parse_for_every_shape() {
        let esp = Step::Esp {
            enc: "3des-cbc",
            auth: Some("hmac-sha1"),
        };
        let shapes = [
            vec![esp],
            vec![Step::Ah { auth: "hmac-sha1" }],
            vec![esp, Step::Ah { auth: "hmac-md5" }],
            vec![
                Step::IpComp,
                Step::Esp {
                    enc: "aes-gcm-16",
                    auth: None,
                },
            ],
            vec![Step::Esp {
                enc: "null",
                auth: Some("aes-xcbc-mac"),
            }],
            vec![Step::Esp {
                enc: "chacha20-poly1305",
                auth: None,
            }],
        ];
        for family in [Family::V4, Family::V6] {
            for mode in [Mode::Transport, Mode::Tunnel] {
                for steps in &shapes {
                    let s = Setup::new(family, mode, steps);
                    let (a, b) = (s.setkey(true), s.setkey(false));
                    for text in [&a, &b] {
                        flowsec_setkey::parse("t", text).unwrap_or_else(|e| panic!("{e}\n{text}"));
                    }
                    assert_ne!(a, b);
                    assert!(a.contains("-P out"), "{a}");
                }
            }
        }
        assert_eq!(Setup::new(Family::V4, Mode::Tunnel, &[]).setkey(true), "");
        // Per-resource SAs: N more per direction, each on its worker.
        for n in [1, 2, 3, 8] {
            let s = Setup::new(Family::V4, Mode::Tunnel, &shapes[3]).per_cpu(n);
            let text = s.setkey(true);
            let adds: Vec<_> = flowsec_setkey::parse("t", &text)
                .unwrap_or_else(|e| panic!("{e}\n{text}"))
                .into_iter()
                .filter_map(|c| match c {
                    flowsec_setkey::Command::Add(c) => Some(c),
                    _ => None,
                })
                .collect();
            let sas: Vec<_> = adds
                .iter()
                .filter_map(|c| c.cpu.map(|k| (k, c.spi)))
                .collect();
            assert_eq!(sas.len(), 2 * n as usize, "{text}");
            assert!(sas.iter().all(|(k, spi)| spi % n == *k), "{sas:?}");
            // Every SA its own key: AES-GCM's nonces count from 1 in each.
            let esp: Vec<_> = adds.iter().filter(|c| !c.encr_key.is_empty()).collect();
            let keys: std::collections::BTreeSet<Vec<u8>> =
                esp.iter().map(|c| c.encr_key.to_vec()).collect();
            assert_eq!(keys.len(), esp.len(), "{text}");
        }
        assert_eq!(
            Setup::new(Family::V4, Mode::Transport, &shapes[2]).label(),
            "ESP 3des-cbc/hmac-sha1 + AH hmac-md5"
        );
    }
}
