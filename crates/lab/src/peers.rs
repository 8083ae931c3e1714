//! The implementations a scenario can put on the protected path: flowsec
//! (two `flowsec up` gateways keyed by setkey, [`crate::bed`]), and, where
//! they apply and are installed, the peers people compare it with:
//!
//! - `strongswan`: strongSwan's charon (`charon-systemd` from Debian) with
//!   kernel-libipsec, its user-space ESP over a TUN device: two instances,
//!   one per gateway namespace, each with its own strongswan.conf and vici
//!   socket, keyed by IKEv2 with a pre-shared key. libipsec does tunnel
//!   mode only, ESP only, and always encapsulates in UDP 4500 (it fakes
//!   NAT detection), so it applies to tunnel-mode ESP setups.
//! - `wireguard-go`: the user-space WireGuard (ChaCha20-Poly1305 only) on a
//!   TUN device in each gateway, configured over its UAPI socket; it
//!   applies to tunnel-mode setups, with its own suite.
//!
//! A peer that is not installed is skipped with a message (`lab run`
//! never installs anything; `scripts/test.sh` does, for CI).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::bed::{Mode, Setup, Step};
use crate::error::at;
use crate::swanctl::SwanctlConf;
use crate::topology::Topology;
use crate::LabError;

/// Why a peer implementation cannot take part: it is not installed here,
/// or it cannot carry the setup.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PeerError {
    /// A strongSwan file is missing.
    Missing {
        /// The file.
        file: &'static str,
    },
    /// `swanctl` is not on PATH.
    NoSwanctl,
    /// strongSwan's kernel-libipsec has no transport mode.
    NoTransportMode,
    /// kernel-libipsec carries one ESP transform (no AH, no IPComp).
    SeveralTransforms,
    /// kernel-libipsec was given a transform other than ESP.
    NotEsp,
    /// No strongSwan keyword for a setkey algorithm.
    NoProposal {
        /// The setkey algorithm.
        algorithm: &'static str,
    },
    /// WireGuard was asked for transport mode.
    WireGuardTunnel,
    /// `$WIREGUARD_GO` names something else.
    NotWireGuardGo {
        /// What it names.
        path: PathBuf,
    },
    /// wireguard-go is nowhere to be found.
    NoWireGuardGo,
}

impl std::fmt::Display for PeerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerError::Missing { file } => write!(
                f,
                "{file} is missing (apt-get install charon-systemd strongswan-swanctl \
                 libcharon-extra-plugins libstrongswan-standard-plugins)"
            ),
            PeerError::NoSwanctl => {
                f.write_str("swanctl is missing (apt-get install strongswan-swanctl)")
            }
            PeerError::NoTransportMode => f.write_str("kernel-libipsec has no transport mode"),
            PeerError::SeveralTransforms => {
                f.write_str("kernel-libipsec does ESP alone (no AH, no IPComp)")
            }
            PeerError::NotEsp => f.write_str("kernel-libipsec does ESP alone"),
            PeerError::NoProposal { algorithm } => {
                write!(f, "no strongSwan proposal here for {algorithm}")
            }
            PeerError::WireGuardTunnel => f.write_str("WireGuard is a tunnel"),
            PeerError::NotWireGuardGo { path } => {
                write!(f, "WIREGUARD_GO={}: not wireguard-go", path.display())
            }
            PeerError::NoWireGuardGo => f.write_str(
                "wireguard-go is missing (go install \
                 golang.zx2c4.com/wireguard@v0.0.0-20250521234502-f333402bd9cb)",
            ),
        }
    }
}

impl std::error::Error for PeerError {}

/// What protects the path, when a setup has transforms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    Flowsec,
    StrongSwan,
    WireGuardGo,
}

impl Peer {
    /// Every implementation, in `--impl` order (`none` is a setup without
    /// transforms, not a peer).
    pub const ALL: [Peer; 3] = [Peer::Flowsec, Peer::StrongSwan, Peer::WireGuardGo];
    /// The ones measured beside flowsec.
    pub const OTHERS: [Peer; 2] = [Peer::StrongSwan, Peer::WireGuardGo];

    /// The name `--impl` takes.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Flowsec => "flowsec",
            Peer::StrongSwan => "strongswan",
            Peer::WireGuardGo => "wireguard-go",
        }
    }

    /// How tables and plots call it.
    pub fn label(self) -> &'static str {
        match self {
            Peer::Flowsec => "flowsec",
            Peer::StrongSwan => "strongSwan (kernel-libipsec)",
            Peer::WireGuardGo => "wireguard-go",
        }
    }

    pub fn from_name(name: &str) -> Option<Peer> {
        Peer::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Whether it is installed here: `Err` says what is missing.
    pub fn installed(self) -> Result<(), PeerError> {
        match self {
            Peer::Flowsec => Ok(()),
            Peer::StrongSwan => {
                for file in [CHARON, LIBIPSEC_PLUGIN, OPENSSL_PLUGIN] {
                    if !Path::new(file).exists() {
                        return Err(PeerError::Missing { file });
                    }
                }
                which("swanctl").map(|_| ()).ok_or(PeerError::NoSwanctl)
            }
            Peer::WireGuardGo => wireguard_go().map(|_| ()),
        }
    }

    /// Whether it can carry `setup`: `Err` says why not.
    pub fn applies(self, setup: &Setup) -> Result<(), PeerError> {
        match self {
            Peer::Flowsec => Ok(()),
            Peer::StrongSwan => {
                if setup.mode != Mode::Tunnel {
                    return Err(PeerError::NoTransportMode);
                }
                match setup.steps.as_slice() {
                    [step] => esp_proposal(*step).map(|_| ()),
                    _ => Err(PeerError::SeveralTransforms),
                }
            }
            Peer::WireGuardGo => {
                if setup.mode != Mode::Tunnel {
                    return Err(PeerError::WireGuardTunnel);
                }
                Ok(())
            }
        }
    }
}

const CHARON: &str = "/usr/sbin/charon-systemd";
const LIBIPSEC_PLUGIN: &str = "/usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so";
/// 3DES, Blowfish, Camellia and CAST come from OpenSSL.
const OPENSSL_PLUGIN: &str = "/usr/lib/ipsec/plugins/libstrongswan-openssl.so";

/// `name` on PATH.
pub(crate) fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// strongSwan's ESP proposal for a setkey ESP transform (its algorithm
/// keywords; setkey's key sizes: AES and Camellia 128, Blowfish 192).
fn esp_proposal(step: Step) -> Result<String, PeerError> {
    let Step::Esp { enc, auth } = step else {
        return Err(PeerError::NotEsp);
    };
    let enc = match enc {
        "aes-cbc" => "aes128",
        "aes-ctr" => "aes128ctr",
        "3des-cbc" => "3des",
        "blowfish-cbc" => "blowfish192",
        "camellia-cbc" => "camellia128",
        "cast128-cbc" => "cast128",
        "aes-gcm-16" => "aes128gcm16",
        "aes-gcm-12" => "aes128gcm12",
        "aes-gcm-8" => "aes128gcm8",
        "chacha20-poly1305" => "chacha20poly1305",
        other => return Err(PeerError::NoProposal { algorithm: other }),
    };
    let integ = match auth {
        None => None,
        Some("hmac-md5") => Some("md5"),
        Some("hmac-sha1") => Some("sha1"),
        Some("hmac-sha256") => Some("sha256"),
        Some("hmac-sha384") => Some("sha384"),
        Some("hmac-sha512") => Some("sha512"),
        Some("aes-xcbc-mac") => Some("aesxcbc"),
        Some(other) => return Err(PeerError::NoProposal { algorithm: other }),
    };
    Ok(match integ {
        Some(i) => format!("{enc}-{i}"),
        None => enc.to_string(),
    })
}

/// How long a peer may take to come up (daemon start, IKE, handshake).
const READY: Duration = Duration::from_secs(15);

/// Wait for `path` (a daemon's control socket) to appear.
fn wait_for(path: &Path, what: &str) -> Result<(), LabError> {
    let start = Instant::now();
    while !path.exists() {
        crate::topology::check_interrupted()?;
        if start.elapsed() > READY {
            return Err(LabError::NoSocket {
                what: what.into(),
                path: path.to_path_buf(),
                secs: READY.as_secs(),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Start charon with kernel-libipsec in gwA and gwB, load the connection
/// and bring the Child SA up from gwA (files and logs in `work`).
pub(crate) fn strongswan(topo: &mut Topology, setup: &Setup, work: &Path) -> Result<(), LabError> {
    let esp = match setup.steps.as_slice() {
        [step] => esp_proposal(*step).map_err(LabError::PeerSetup)?,
        _ => return Err(LabError::OneTransform),
    };
    let (ga, gb) = setup.family.gateways();
    let ((_, na), (_, nb)) = setup.family.hosts();
    for (gw, local, remote, lnet, rnet) in [("gwA", ga, gb, na, nb), ("gwB", gb, ga, nb, na)] {
        charon_up(
            topo,
            gw,
            work,
            &swanctl_conf(local, remote, lnet, rnet, &esp).render(),
        )?;
    }
    swanctl_initiate(topo, work)
}

/// The vici socket of `gw`'s charon, in `work`.
pub(crate) fn vici_uri(work: &Path, gw: &str) -> String {
    format!("unix://{}", work.join(format!("{gw}.vici")).display())
}

/// Start charon with kernel-libipsec in `gw` and load `swanctl` (a
/// swanctl.conf's text) into it.
pub(crate) fn charon_up(
    topo: &mut Topology,
    gw: &str,
    work: &Path,
    swanctl: &str,
) -> Result<(), LabError> {
    let vici = work.join(format!("{gw}.vici"));
    let conf = work.join(format!("{gw}-strongswan.conf"));
    let file = work.join(format!("{gw}-swanctl.conf"));
    let _ = std::fs::remove_file(&vici);
    write(&conf, &strongswan_conf(&vici))?;
    write(&file, swanctl)?;
    let env = format!("STRONGSWAN_CONF={}", conf.display());
    topo.spawn(
        gw,
        &["env", &env, CHARON],
        &work.join(format!("{gw}-charon.log")),
        None,
    )?;
    wait_for(&vici, &format!("{gw}: charon"))?;
    let file = file.to_string_lossy().into_owned();
    topo.output(
        gw,
        &[
            "swanctl",
            "--load-all",
            "--noprompt",
            "--file",
            &file,
            "--uri",
            &vici_uri(work, gw),
        ],
    )?;
    Ok(())
}

/// IKE_SA_INIT and IKE_AUTH from gwA's charon, the Child SA `lab`
/// installed at both ends when this returns (swanctl waits for it).
pub(crate) fn swanctl_initiate(topo: &Topology, work: &Path) -> Result<(), LabError> {
    topo.output(
        "gwA",
        &[
            "swanctl",
            "--initiate",
            "--child",
            "lab",
            "--timeout",
            &READY.as_secs().to_string(),
            "--uri",
            &vici_uri(work, "gwA"),
        ],
    )?;
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), LabError> {
    std::fs::write(path, text).map_err(at(path))
}

/// One charon's strongswan.conf: the plugins libipsec needs
/// (kernel-libipsec before kernel-netlink), its own vici socket, its log
/// on stderr (the lab's log file).
fn strongswan_conf(vici: &Path) -> String {
    format!(
        "# written by flowsec lab
charon {{
  load = random nonce aes sha1 sha2 md5 hmac xcbc cmac gcm chapoly openssl gcrypt curve25519 gmp kdf kernel-libipsec kernel-netlink socket-default vici
  install_routes = yes
  filelog {{
    stderr {{
      default = 1
      flush_line = yes
      time_format = %T
    }}
  }}
  journal {{
    default = -1
  }}
  plugins {{
    vici {{
      socket = unix://{}
    }}
  }}
}}
",
        vici.display()
    )
}

/// One gateway's swanctl.conf: IKEv2 with a pre-shared key, one
/// tunnel-mode Child SA `lab` between the sites (a caller adds keys to
/// `connections[0]` and its `children[0]`). flowsec reads the same file.
pub(crate) fn swanctl_conf(
    local: &str,
    remote: &str,
    lnet: &str,
    rnet: &str,
    esp: &str,
) -> SwanctlConf {
    let mut conf = SwanctlConf::new("written by flowsec lab");
    let conn = conf.conn("lab");
    conn.key("version", "2")
        .key("local_addrs", local)
        .key("remote_addrs", remote)
        .key("proposals", "aes128-sha256-x25519")
        .ids("psk", local, remote);
    conn.child("lab")
        .key("local_ts", lnet)
        .key("remote_ts", rnet)
        .key("esp_proposals", esp)
        .key("mode", "tunnel")
        .key("start_action", "none");
    conf.secret("ike-lab")
        .key("id-a", local)
        .key("id-b", remote)
        .key("secret", "flowsec-lab-psk, not a secret");
    conf
}

/// The wireguard-go binary: `$WIREGUARD_GO`, `wireguard-go` or `wireguard`
/// on PATH, or `go install`'s `~/go/bin/wireguard`.
fn wireguard_go() -> Result<PathBuf, PeerError> {
    let is_it = |p: &Path| {
        Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).starts_with("wireguard-go"))
    };
    if let Some(p) = std::env::var_os("WIREGUARD_GO") {
        let p = PathBuf::from(p);
        return if is_it(&p) {
            Ok(p)
        } else {
            Err(PeerError::NotWireGuardGo { path: p })
        };
    }
    let gopath = std::env::var_os("GOPATH")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join("go")));
    which("wireguard-go")
        .into_iter()
        .chain(which("wireguard"))
        .chain(gopath.map(|g| g.join("bin/wireguard")))
        .find(|p| is_it(p))
        .ok_or(PeerError::NoWireGuardGo)
}

/// The lab's WireGuard keys (private, public), hex: fixed, as the setkey
/// keys are, for a throwaway tunnel between two namespaces.
const WG_KEYS: [(&str, &str); 2] = [
    (
        "e8636dab78cc73c991f3ae509803ca6d52f20059db564bec225605f9211fc77e",
        "35bd7a87aa8cc6a68be058f851cd771d8bea0ba0a23ebc13f671a70039ff1d36",
    ),
    (
        "d8284445b7e0f24a1f925b55be5525edb7154ba1becfc2e5cca68bee22746071",
        "be08c03e2c2ba36117ff5d42ed8221a9ef54cb8910c8d99a6ac143f78df8423c",
    ),
];
const WG_PORT: u16 = 51820;
/// wg-quick's default MTU: 1500 less an IPv6 outer header and WireGuard's
/// 32 bytes of UDP and framing, with room.
const WG_MTU: &str = "1420";
/// Where wireguard-go puts its UAPI sockets (not per namespace).
const WG_SOCKETS: &str = "/var/run/wireguard";

/// Start wireguard-go in gwA and gwB, configure both over UAPI and route
/// the remote site through them. Each UAPI socket goes into `sockets` as
/// its daemon starts, to remove once the processes are gone (a killed
/// wireguard-go leaves its socket).
pub(crate) fn wireguard(
    topo: &mut Topology,
    setup: &Setup,
    work: &Path,
    sockets: &mut Vec<PathBuf>,
) -> Result<(), LabError> {
    let bin = wireguard_go().map_err(LabError::PeerSetup)?;
    let bin = bin.to_string_lossy().into_owned();
    let (ga, gb) = setup.family.gateways();
    let ((_, na), (_, nb)) = setup.family.hosts();
    let v6 = setup.family == crate::bed::Family::V6;
    std::fs::create_dir_all(WG_SOCKETS).map_err(at(WG_SOCKETS))?;
    for (i, (gw, remote, rnet)) in [("gwA", gb, nb), ("gwB", ga, na)].into_iter().enumerate() {
        // Unique per run: the socket directory is shared by every namespace.
        let dev = topo.ns(&format!("wg{}", &gw[2..]));
        if dev.len() > 15 {
            return Err(LabError::InterfaceName { dev });
        }
        let sock = Path::new(WG_SOCKETS).join(format!("{dev}.sock"));
        if sock.exists() {
            return Err(LabError::SocketExists { path: sock });
        }
        topo.spawn(
            gw,
            &[
                "env",
                "WG_PROCESS_FOREGROUND=1",
                "LOG_LEVEL=error",
                &bin,
                "-f",
                &dev,
            ],
            &work.join(format!("{gw}-wireguard.log")),
            None,
        )?;
        sockets.push(sock.clone());
        wait_for(&sock, &format!("{gw}: wireguard-go"))?;
        let (private, _) = WG_KEYS[i];
        let (_, peer_public) = WG_KEYS[1 - i];
        let endpoint = if v6 {
            format!("[{remote}]:{WG_PORT}")
        } else {
            format!("{remote}:{WG_PORT}")
        };
        uapi_set(
            &sock,
            &format!(
                "private_key={private}\nlisten_port={WG_PORT}\nreplace_peers=true\n\
                 public_key={peer_public}\nendpoint={endpoint}\nreplace_allowed_ips=true\n\
                 allowed_ip={rnet}\n"
            ),
        )?;
        topo.exec(gw, &["ip", "link", "set", &dev, "mtu", WG_MTU, "up"])?;
        let family = if v6 { "-6" } else { "-4" };
        topo.exec(gw, &["ip", family, "route", "replace", rnet, "dev", &dev])?;
    }
    Ok(())
}

/// A UAPI `set` (wireguard.com/xplatform): the keys in `body`, one per
/// line; the answer must be `errno=0`.
fn uapi_set(sock: &Path, body: &str) -> Result<(), LabError> {
    let err = |error: std::io::Error| LabError::Io {
        path: sock.to_path_buf(),
        error,
    };
    let mut s = UnixStream::connect(sock).map_err(err)?;
    s.set_read_timeout(Some(READY)).map_err(err)?;
    write!(s, "set=1\n{body}\n").map_err(err)?;
    let mut answer = String::new();
    BufReader::new(s).read_line(&mut answer).map_err(err)?;
    if answer.trim() != "errno=0" {
        return Err(LabError::UapiRefused {
            socket: sock.to_path_buf(),
            answer: answer.trim().to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bed::Family;

    #[test]
    fn peers_apply_where_they_can() {
        let esp = |enc, auth| Step::Esp { enc, auth };
        let tunnel = Setup::new(
            Family::V4,
            Mode::Tunnel,
            &[esp("3des-cbc", Some("hmac-md5"))],
        );
        assert_eq!(Peer::StrongSwan.applies(&tunnel), Ok(()));
        assert_eq!(Peer::WireGuardGo.applies(&tunnel), Ok(()));
        let transport = Setup::new(Family::V4, Mode::Transport, &tunnel.steps);
        assert_eq!(
            Peer::StrongSwan.applies(&transport),
            Err(PeerError::NoTransportMode)
        );
        assert_eq!(
            Peer::WireGuardGo.applies(&transport),
            Err(PeerError::WireGuardTunnel)
        );
        let ah = Setup::new(Family::V4, Mode::Tunnel, &[Step::Ah { auth: "hmac-sha1" }]);
        let e = Peer::StrongSwan.applies(&ah).unwrap_err();
        assert_eq!(e, PeerError::NotEsp);
        assert_eq!(e.to_string(), "kernel-libipsec does ESP alone");
        assert_eq!(
            esp_proposal(esp("aes-cbc", Some("hmac-sha1"))).as_deref(),
            Ok("aes128-sha1")
        );
        assert_eq!(
            esp_proposal(esp("aes-gcm-16", None)).as_deref(),
            Ok("aes128gcm16")
        );
        let e = esp_proposal(esp("twofish-cbc", Some("hmac-sha1"))).unwrap_err();
        assert_eq!(
            e,
            PeerError::NoProposal {
                algorithm: "twofish-cbc"
            }
        );
        assert_eq!(e.to_string(), "no strongSwan proposal here for twofish-cbc");
        for p in Peer::ALL {
            assert_eq!(Peer::from_name(p.name()), Some(p));
        }
    }

    #[test]
    fn configs_name_both_ends() {
        let mut c = swanctl_conf(
            "192.0.2.1",
            "192.0.2.2",
            "10.1.0.0/24",
            "10.2.0.0/24",
            "3des-md5",
        );
        c.connections[0].children[0].key("rekey_time", "4s");
        let c = c.render();
        for want in [
            "local_addrs = 192.0.2.1",
            "remote_ts = 10.2.0.0/24",
            "esp_proposals = 3des-md5",
            "mode = tunnel",
            "                rekey_time = 4s\n            }",
            "        id-a = 192.0.2.1\n        id-b = 192.0.2.2\n",
        ] {
            assert!(c.contains(want), "{want}: {c}");
        }
        // flowsec reads the same file.
        let conf = flowsec_ike::config::parse("swanctl.conf", &c).unwrap();
        assert_eq!(conf.connections[0].children[0].rekey_time.as_secs(), 4);
        let s = strongswan_conf(Path::new("/tmp/x.vici"));
        // libipsec's kernel interface must load before kernel-netlink's.
        assert!(s.find("kernel-libipsec") < s.find("kernel-netlink"), "{s}");
        assert!(s.contains("unix:///tmp/x.vici"));
    }
}
