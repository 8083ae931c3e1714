//! IKE configuration in a swanctl.conf-style file (`flowsec up -c FILE`),
//! with strongSwan's option names, value syntax and defaults (strongSwan
//! 5.9.8 `swanctl.opt`, `vici_config.c`, `load_creds.c`) wherever the
//! meaning is the same, so a strongSwan site-to-site PSK configuration can
//! be copied across:
//!
//! ```text
//! connections {
//!     gw-gw {
//!         version = 2
//!         local_addrs = 192.168.0.1
//!         remote_addrs = 192.168.0.2
//!         proposals = aes128-sha256-x25519
//!         local {
//!             auth = psk
//!             id = moon.strongswan.org
//!         }
//!         remote {
//!             auth = psk
//!             id = sun.strongswan.org
//!         }
//!         children {
//!             net-net {
//!                 local_ts = 10.1.0.0/16
//!                 remote_ts = 10.2.0.0/16
//!                 esp_proposals = aes128gcm16-x25519
//!                 rekey_time = 5400
//!                 start_action = trap
//!             }
//!         }
//!     }
//! }
//! secrets {
//!     ike-1 {
//!         id-1 = moon.strongswan.org
//!         id-2 = sun.strongswan.org
//!         secret = 0x45a30759df97dc26a15b88ff
//!     }
//! }
//! ```
//!
//! The syntax is strongSwan's settings syntax ([`lexer`]), with
//! `include` ([`include`]) and section templates (`name : base { }`,
//! [`template`]); proposals,
//! identities and selectors are strongSwan's ([`proposal`], [`identity`],
//! [`ts`]). What the keys mean and which values they take is in
//! [`swanctl`].
//!
//! Everything flowsec does not understand is refused with a [`ConfigError`]
//! naming the file, the line, the dotted key
//! (`connections.gw.children.net.esp_proposals`) and the problem —
//! strongSwan warns and goes on, flowsec does not, so nothing is silently
//! ignored. The exceptions are strongSwan keys accepted with any valid
//! value that change nothing on the wire or only things flowsec does not
//! do (listed with [`swanctl::IGNORED_KEYS`]): `mobike`,
//! `send_certreq`, `send_cert`, `pools`, `aggressive`, `pull`, `updown`,
//! `hostaccess`, `revocation`, and some keys accepted only at their
//! strongSwan default ([`swanctl::DEFAULT_ONLY_KEYS`]).
//!
//! Differences from strongSwan, beyond refusing: a key given twice in one
//! section is an error (strongSwan keeps the last); an `include` of a plain
//! path that does not exist, and a reference to a section that does not,
//! are errors (strongSwan ignores both); numbers are decimal only (strongSwan's `strtoul(.., 0)` also reads
//! `0x10` and octal `010`); every connection needs `local` and `remote`
//! sections with `auth = psk` (strongSwan's default is `pubkey`).

mod authority;
mod credentials;
mod key_secret;
pub(crate) use credentials::local_cert;
pub mod dn;
mod error;
pub mod identity;
pub mod include;
pub mod lexer;
pub mod negotiate;
pub mod proposal;
pub mod supported;
pub mod swanctl;
pub mod template;
pub mod ts;
mod value;
mod value_error;
mod warning;

use core::fmt;
use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use flowsec_crypto::Provider;
use zeroize::Zeroizing;

pub use authority::{Authority, AuthoritySource};
pub use error::{ConfigError, ConfigErrorKind, Found};
pub use identity::{IdMatch, Identity};
pub use key_secret::{KeySecret, KEY_SECRET_TYPES};
pub use negotiate::{
    child_accepts, child_answer, child_offer, ike_accepts, ike_answer, ike_offer, select_child,
    select_ike, ChildChosen, IkeChosen,
};
pub use proposal::{
    default_ah_proposal, default_esp_proposals, default_ike_proposals, parse_ah_proposal,
    parse_ah_proposals, parse_esp_proposal, parse_esp_proposals, parse_ike_proposal,
    parse_ike_proposals, ChildProposal, IkeProposal, ADDKE_SLOTS,
};
pub use supported::restrict_to;
pub use ts::{AddrSpec, TsSpec};
pub use value_error::{
    EmptyListItem, HexError, IdentityError, ProposalError, ProposalKind, ProtoPortError,
    SecretError, SelectorError, ValueError,
};
pub use warning::{ConfigWarning, ConfigWarningKind};

/// Largest configuration file [`load`] reads (implementation limit; a
/// large strongSwan site's file is a few hundred kilobytes).
pub const MAX_FILE_LEN: u64 = 16 << 20;

/// Parse configuration text; `name` is the file name used in errors, and
/// the path that relative `include` patterns start from ([`include`]).
pub fn parse(name: &str, text: &str) -> Result<Config, ConfigError> {
    let root = lexer::parse_tree(name, text)?;
    let root = template::resolve(name, root)?;
    swanctl::interpret(name, &root)
}

/// Interpret a settings tree built elsewhere (a vici `load-conn`'s
/// message, `lexer::Section` by `lexer::Section`): the same keys, values
/// and checks as a file; `name` is what errors call its source.
pub fn from_tree(name: &str, root: &lexer::Section) -> Result<Config, ConfigError> {
    swanctl::interpret(name, root)
}

/// Read and parse a configuration file, with the credentials of the
/// swanctl directories next to it ([`load_with`]).
pub fn load(provider: &Provider, path: &Path) -> Result<Config, ConfigError> {
    load_with(provider, path, None)
}

/// Read and parse a configuration file and the credentials under
/// `swanctl_dir` (default: the file's directory): `x509/`, `x509ca/`,
/// `x509crl/`, `private/`, `rsa/`, `ecdsa/`, `pkcs8/` ([`crate::cert`]),
/// and the CA certificates of `authorities` as trust anchors.
/// A credential file that cannot be used, a `certs`/`cacerts` entry
/// naming no loaded file, or a connection authenticating with `pubkey`
/// but no certificate and key for it, is an error naming the file (and
/// line); our certificate not validating to a CA we hold is one of
/// [`Config::warnings`]. Keys are loaded and certificates checked with
/// `provider`'s algorithms.
pub fn load_with(
    provider: &Provider,
    path: &Path,
    swanctl_dir: Option<&Path>,
) -> Result<Config, ConfigError> {
    let mut config = load_text(path)?;
    let name = path.display().to_string();
    let dir = match swanctl_dir {
        Some(d) => d.to_path_buf(),
        None => path.parent().unwrap_or(Path::new(".")).to_path_buf(),
    };
    let anchors = authority::extra_anchors(&name, &config.authorities, &dir)?;
    key_secret::check_files(&name, &config.key_secrets, &dir)?;
    let keys = &config.key_secrets;
    config.credentials = crate::cert::Credentials::load_with(provider, &dir, &anchors, keys)
        .map_err(|e| {
            ConfigError::new(
                &e.file.display().to_string(),
                0,
                String::new(),
                ConfigErrorKind::Credential(e.reason),
            )
        })?;
    authority::attach(&mut config.authorities, &config.credentials, &dir);
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    config.warnings = credentials::check(provider, &config, &name, &dir, unix)?;
    Ok(config)
}

fn load_text(path: &Path) -> Result<Config, ConfigError> {
    // The file holds the secrets: its text is wiped once parsed.
    let text = include::read_text(path)?;
    parse(&path.display().to_string(), &text)
}

/// A connection as the IKE SAs made with it share it: a reload replaces
/// the host's, never an SA's.
pub type ConnRef = std::sync::Arc<Connection>;

/// A whole configuration: connections and pre-shared keys, in file order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Config {
    /// `connections.*`.
    pub connections: Vec<Connection>,
    /// `secrets.ike*`.
    pub secrets: Vec<Secret>,
    /// Certificates and keys from the swanctl directories
    /// ([`load`]/[`load_with`]); none from [`parse`].
    pub credentials: crate::cert::Credentials,
    /// Where `certs`/`cacerts` name files, for errors naming the line.
    pub(crate) cred_refs: Vec<CredRef>,
    /// `pools.*`: virtual IP addresses for road warriors.
    pub pools: Vec<Pool>,
    /// `authorities.*`: CAs with their revocation URIs (their certificates
    /// loaded by [`load_with`] as trust anchors).
    pub authorities: Vec<Authority>,
    /// `secrets.eap*`: EAP passwords by user name.
    pub eap_secrets: Vec<Secret>,
    /// `secrets.ppk*`: post-quantum preshared keys by PPK_ID (RFC 8784).
    pub ppk_secrets: Vec<PpkSecret>,
    /// `secrets.rsa*`, `ecdsa*`, `pkcs8*`, `private*`: the passwords of
    /// encrypted private keys ([`load_with`] decrypts them).
    pub key_secrets: Vec<KeySecret>,
    /// What [`load_with`] noticed and let pass, for the caller to log;
    /// none from [`parse`].
    pub warnings: Vec<ConfigWarning>,
}

/// One `pools.NAME` section (swanctl.conf(5)): addresses handed out to
/// initiators that ask (RFC 7296 §3.15), and attributes sent with them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pool {
    /// The section name.
    pub name: String,
    /// `addrs`: the first and last address handed out (a subnet without
    /// its network and broadcast address, as strongSwan's; a range as
    /// given; one address).
    pub first: IpAddr,
    /// Last address.
    pub last: IpAddr,
    /// `dns`: DNS servers sent with an address.
    pub dns: Vec<IpAddr>,
}

/// A file name in `certs` or `cacerts`, and where it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CredRef {
    pub at: lexer::Origin,
    pub key: String,
    pub file: String,
    /// The swanctl directory it is in: `x509`, `x509ca` or `pubkey`.
    pub dir: &'static str,
}

/// One `connections.NAME` section: an IKE SA's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// The section name.
    pub name: String,
    /// `version`: 0 (any; flowsec speaks IKEv2 only) or 2.
    pub version: u8,
    /// `local_addrs` (default `%any`).
    pub local_addrs: Vec<AddrSpec>,
    /// `remote_addrs` (default `%any`).
    pub remote_addrs: Vec<AddrSpec>,
    /// `local_port` (default 500).
    pub local_port: u16,
    /// `remote_port` (default 500).
    pub remote_port: u16,
    /// `proposals` (default `default`), in preference order.
    pub proposals: Vec<IkeProposal>,
    /// The `local` section.
    pub local: AuthConfig,
    /// The `remote` section.
    pub remote: AuthConfig,
    /// `children.*`, in file order.
    pub children: Vec<ChildConfig>,
    /// `rekey_time` (default 4h, or 0 when only `reauth_time` is set).
    pub rekey_time: Duration,
    /// `reauth_time` (default 0: off).
    pub reauth_time: Duration,
    /// `over_time`: hard lifetime after rekey/reauth time (default 10% of
    /// the larger of the two).
    pub over_time: Duration,
    /// `rand_time`: at most this much is subtracted at random from the
    /// rekey/reauth time (default `over_time`, but at most half of the
    /// rekey/reauth time — the smaller one if both are set).
    pub rand_time: Duration,
    /// `dpd_delay` (default 0: no liveness checks).
    pub dpd_delay: Duration,
    /// `dpd_timeout` (IKEv1 only in strongSwan; default 0).
    pub dpd_timeout: Duration,
    /// `encap`: force UDP encapsulation (default no).
    pub encap: bool,
    /// `mobike` (default yes): MOBIKE (RFC 4555), the IKE SA and its
    /// Child SAs follow an original initiator that moves.
    pub mobike: bool,
    /// `keyingtries` (default 1; 0 = forever).
    pub keyingtries: u32,
    /// `unique` (default `no`).
    pub unique: Unique,
    /// `tcp_encap`, `tcp_port`, `tcp_tls`, `tcp_fallback_time`: IKE and
    /// ESP over TCP (RFC 9329; flowsec's keys, strongSwan has none).
    pub tcp: TcpConfig,
    /// `fragmentation` (default `yes`): IKE fragmentation (RFC 7383).
    pub fragmentation: Fragmentation,
    /// `send_cert` (default `ifasked`).
    pub send_cert: SendCert,
    /// `send_certreq` (default yes): CERTREQ payloads naming our CAs.
    pub send_certreq: bool,
    /// `vips`: virtual IPs to ask the responder for (RFC 7296 §3.15:
    /// `0.0.0.0` or `::` for any of that family).
    pub vips: Vec<IpAddr>,
    /// `pools`: the pools (names in `pools { }`) a responder hands out
    /// virtual IPs from.
    pub pools: Vec<String>,
    /// `ppk_id`: the post-quantum preshared key to use (RFC 8784), by its
    /// PPK_ID; as responder, the only one accepted.
    pub ppk_id: Option<String>,
    /// `ppk_required`: no IKE SA without a PPK.
    pub ppk_required: bool,
    /// `redirect_to` (flowsec's key): send each new client of this
    /// connection to one of these gateways (RFC 5685), the least loaded.
    pub redirect_to: Vec<crate::gateway::GatewayId>,
    /// `redirect_on` (default `init`): at IKE_SA_INIT, before any state,
    /// or (`auth`) in the last IKE_AUTH answer, once the client is
    /// authenticated.
    pub redirect_on: RedirectOn,
    /// `redirect_load`: for each `redirect_to` gateway, in order, the vici
    /// socket (`unix://PATH`) where the daemon reads how many IKE SAs it
    /// holds (vici `stats`).
    pub redirect_load: Vec<String>,
}

/// When a gateway with `redirect_to` redirects a new client (RFC 5685).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RedirectOn {
    /// In its IKE_SA_INIT answer (§5), keeping no state.
    #[default]
    Init,
    /// In its last IKE_AUTH answer (§6), once the client authenticated.
    Auth,
}

/// `fragmentation` (swanctl.conf(5)): IKE message fragmentation (RFC 7383).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fragmentation {
    /// `yes` (default): announced (IKEV2_FRAGMENTATION_SUPPORTED), and
    /// messages larger than the fragment size are fragmented when the
    /// peer announced it too.
    Yes,
    /// `accept`: announced and received, never sent.
    Accept,
    /// `force`: as `yes`, and fragmented even when the peer did not
    /// announce it.
    Force,
    /// `no`: not announced; received fragments are dropped.
    No,
}

impl Fragmentation {
    /// IKEV2_FRAGMENTATION_SUPPORTED goes in IKE_SA_INIT.
    pub fn announced(self) -> bool {
        self != Fragmentation::No
    }
}

/// Whether a connection's IKE SA runs over UDP or a TCP stream
/// (RFC 9329), as initiator; as responder the peer's choice is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TcpEncap {
    /// `no` (default): UDP only.
    No,
    /// `yes`: IKE_SA_INIT goes over TCP at once.
    Yes,
    /// `fallback`: UDP first; with no IKE_SA_INIT answer after
    /// `tcp_fallback_time`, a new IKE_SA_INIT over TCP (RFC 9329 §5.1).
    Fallback,
}

/// A connection's TCP encapsulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TcpConfig {
    /// `tcp_encap` (default `no`).
    pub encap: TcpEncap,
    /// `tcp_port`: the peer's TCP port (default 4500, RFC 9329 §11; 443
    /// with `tcp_tls = yes`).
    pub port: u16,
    /// `tcp_tls`: the stream inside TLS 1.3 (RFC 9329 Appendix A), for
    /// middleboxes that pass only TLS; IKE still authenticates the peers.
    pub tls: bool,
    /// `tcp_fallback_time` (default 5 s: after the first UDP
    /// retransmission, RFC 9329 §5.1 recommends at least one).
    pub fallback_after: Duration,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            encap: TcpEncap::No,
            port: TCP_PORT,
            tls: false,
            fallback_after: Duration::from_secs(5),
        }
    }
}

/// The TCP port of RFC 9329 (§11: implementations MUST support it).
pub const TCP_PORT: u16 = 4500;
/// The TCP port with `tcp_tls = yes` (where TLS-only middleboxes let
/// traffic through).
pub const TLS_PORT: u16 = 443;

/// The `unique` policy (swanctl.conf(5)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unique {
    /// `never`: never enforce, even on INITIAL_CONTACT.
    Never,
    /// `no`: replace existing SAs of the same identity on INITIAL_CONTACT.
    No,
    /// `keep`: refuse a new SA while one exists.
    Keep,
    /// `replace`: delete the old SA when a new one is established.
    Replace,
}

/// How a side authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AuthKind {
    /// `psk`: a pre-shared key (RFC 7296 §2.15).
    Psk,
    /// `pubkey` (strongSwan's default), `rsa`, `ecdsa`, `ed25519`,
    /// `rsa/pss`, each optionally with hashes (`ecdsa-sha384`,
    /// `rsa/pss-sha256-sha512`): a signature with a certificate's key
    /// (RFC 7296 §2.15, RFC 7427).
    Pubkey(PubkeyAuth),
    /// `eap-mschapv2` (or `eap`): EAP-MSCHAPv2 (RFC 7296 §2.16) —
    /// locally, we answer with a user name and password from an `eap-…`
    /// secret; remotely, we (the gateway) ask the peer for them.
    Eap,
}

/// The key kinds and hashes `auth = …` allows for signatures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PubkeyAuth {
    /// `rsa`, `ecdsa`, `ed25519`; `None` for `pubkey` (any).
    pub key: Option<KeyFamily>,
    /// `rsa/pss`: RSASSA-PSS (locally: sign with it; remotely: require it).
    pub pss: bool,
    /// The hashes given (`-sha256` …); empty: any.
    pub hashes: crate::cert::HashSet,
}

/// A public key's family in `auth = …`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyFamily {
    /// `rsa`, `rsa/pss`.
    Rsa,
    /// `ecdsa`.
    Ecdsa,
    /// `ed25519`.
    Ed25519,
}

impl PubkeyAuth {
    /// Whether a signature by `scheme` with a key of `kind` meets it.
    pub fn allows(&self, scheme: crate::cert::Scheme, kind: crate::cert::KeyKind) -> bool {
        use crate::cert::{KeyKind as K, Scheme as S};
        let family = match kind {
            K::Rsa(_) => KeyFamily::Rsa,
            K::Ecdsa(_) => KeyFamily::Ecdsa,
            K::Ed25519 => KeyFamily::Ed25519,
        };
        #[allow(clippy::unnecessary_map_or)] // MSRV 1.80: no Option::is_none_or
        let key_ok = self.key.map_or(true, |k| k == family);
        key_ok
            && (!self.pss || matches!(scheme, S::RsaPss(_)))
            && (self.hashes.is_empty() || self.hashes.has(scheme.hash()))
    }
}

/// A `local` or `remote` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthConfig {
    /// `auth` (default `pubkey`, as strongSwan).
    pub auth: AuthKind,
    /// `id`. Unset: locally the certificate's subject with `pubkey`, the
    /// IKE address with `psk` (as strongSwan); remotely any identity is
    /// accepted (`%any`).
    pub id: Option<Identity>,
    /// `certs`: our certificates, file names in `x509/` (the first is
    /// used); unset: the certificate in `x509/` that holds `id` and whose
    /// key we have.
    pub certs: Vec<String>,
    /// `cacerts` (remote): the CAs, file names in `x509ca/`, that the
    /// peer's certificate must chain to; unset: any in `x509ca/`.
    pub cacerts: Vec<String>,
    /// `pubkeys`: raw public keys, file names in `pubkey/`. Remote: the
    /// peer's signature must verify with one of them (it may send no
    /// certificate; one it sends must hold that key), and no CA is
    /// consulted. Local: we sign with the private key of the first and
    /// send no certificate. `id` must be set with them.
    pub pubkeys: Vec<String>,
    /// `revocation` (remote): `strict` refuses a peer certificate no CRL
    /// we hold covers; `relaxed` (default) and `ifuri` (flowsec fetches no
    /// CRLs) accept it unless a CRL revokes it.
    pub revocation_strict: bool,
    /// `eap_id`: the EAP identity (local: the user name we answer with,
    /// default `id`; remote: the one the peer must give, `%any` or unset
    /// for any).
    pub eap_id: Option<Identity>,
}

impl AuthConfig {
    /// An `auth = psk` section with `id`.
    pub fn psk(id: Option<Identity>) -> AuthConfig {
        AuthConfig {
            auth: AuthKind::Psk,
            id,
            certs: Vec::new(),
            cacerts: Vec::new(),
            pubkeys: Vec::new(),
            revocation_strict: false,
            eap_id: None,
        }
    }
}

/// `send_cert` (swanctl.conf(5)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SendCert {
    /// `ifasked` (default): when the peer sent a CERTREQ.
    IfAsked,
    /// `always`.
    Always,
    /// `never`.
    Never,
}

/// One `children.NAME` section: a Child SA's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildConfig {
    /// The section name.
    pub name: String,
    /// `local_ts` (default `dynamic`).
    pub local_ts: Vec<TsSpec>,
    /// `remote_ts` (default `dynamic`).
    pub remote_ts: Vec<TsSpec>,
    /// `esp_proposals` (default strongSwan's AEAD then classic defaults,
    /// unless `ah_proposals` is set).
    pub esp_proposals: Vec<ChildProposal>,
    /// `ah_proposals` (default none).
    pub ah_proposals: Vec<ChildProposal>,
    /// `mode` (default tunnel).
    pub mode: flowsec_ipsec::Mode,
    /// `rekey_time` (default 1h).
    pub rekey_time: Duration,
    /// `life_time` (default `rekey_time` + 10%).
    pub life_time: Duration,
    /// `rand_time` (default `life_time` - `rekey_time`).
    pub rand_time: Duration,
    /// `rekey_bytes` (default 0: off).
    pub rekey_bytes: u64,
    /// `life_bytes` (default `rekey_bytes` + 10%).
    pub life_bytes: u64,
    /// `rand_bytes` (default `life_bytes` - `rekey_bytes`).
    pub rand_bytes: u64,
    /// `rekey_packets` (default 0: off).
    pub rekey_packets: u64,
    /// `life_packets` (default `rekey_packets` + 10%).
    pub life_packets: u64,
    /// `rand_packets` (default `life_packets` - `rekey_packets`).
    pub rand_packets: u64,
    /// `start_action` (default none).
    pub start_action: StartAction,
    /// `dpd_action` (default clear).
    pub dpd_action: DpdAction,
    /// `close_action` (default none).
    pub close_action: CloseAction,
    /// `ipcomp` (default no).
    pub ipcomp: bool,
    /// `replay_window` in packets (default 32).
    pub replay_window: u32,
    /// `per_cpu_sas` (strongSwan 6.0.2; default no): per-resource Child
    /// SAs (RFC 9611), one per worker beside the fallback.
    pub per_cpu_sas: bool,
    /// `rekey_switch` (flowsec only; default `loss-free`): when each end
    /// moves its traffic to a rekeyed CHILD_SA's successor.
    pub rekey_switch: RekeySwitch,
}

/// `rekey_switch`: how the two ends hand traffic from a CHILD_SA to the
/// one that rekeys it (RFC 7296 §2.8, which leaves the moment open).
///
/// Only [`RekeySwitch::LossFree`] is meant for use; the other two exist to
/// reproduce study S2's measurements (`flowsec lab run s2-rekey`) and lose
/// packets at every rekey.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RekeySwitch {
    /// `loss-free`: the initiator of the rekey sends on the new SA once it
    /// has it, the responder only once the old one is deleted, and each end
    /// keeps its old inbound SA a few seconds after the DELETE (what
    /// strongSwan does).
    #[default]
    LossFree,
    /// `prefer-new`: both ends send on the new SA as soon as it is
    /// installed and remove the old one at once.
    PreferNew,
    /// `keep-old`: both ends keep sending on the old SA until its own
    /// lifetime expires and then remove it without a DELETE; with skewed
    /// lifetimes one end drops what the other still sends on it.
    KeepOld,
}

impl RekeySwitch {
    /// The configuration keyword.
    pub fn as_str(self) -> &'static str {
        match self {
            RekeySwitch::LossFree => "loss-free",
            RekeySwitch::PreferNew => "prefer-new",
            RekeySwitch::KeepOld => "keep-old",
        }
    }
}

/// `start_action`: what to do once the configuration is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StartAction {
    /// `none` (also `clear`): wait as responder or for a manual start.
    None,
    /// `start` (also `restart`): initiate now.
    Start,
    /// `trap` (also `route`): install trap policies; initiate on traffic.
    Trap,
}

/// `dpd_action`: what to do with the Child SA when the peer is found dead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DpdAction {
    /// `clear` (also `none`): close it.
    Clear,
    /// `trap` (also `route`): close it and install trap policies.
    Trap,
    /// `restart` (also `start`): re-create it at once.
    Restart,
}

/// `close_action`: what to do when the peer closes the Child SA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CloseAction {
    /// `none` (also `clear`).
    None,
    /// `trap` (also `route`).
    Trap,
    /// `start` (also `restart`).
    Start,
}

/// One `secrets.ppkSUFFIX` section: a post-quantum preshared key
/// (RFC 8784) and the PPK_IDs it is known by.
#[derive(Clone, PartialEq, Eq)]
pub struct PpkSecret {
    /// The section name (`ppk-1`).
    pub name: String,
    /// Its PPK_IDs.
    pub ids: Vec<String>,
    /// The key bytes.
    pub secret: Zeroizing<Vec<u8>>,
}

impl fmt::Debug for PpkSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PpkSecret")
            .field("name", &self.name)
            .field("ids", &self.ids)
            .finish_non_exhaustive()
    }
}

/// One `secrets.ikeSUFFIX` section: a pre-shared key and the identities
/// it belongs to (`id`, `idSUFFIX` keys; none = `%any`).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    /// The section name (`ike-1`).
    pub name: String,
    /// The owners, in file order.
    pub ids: Vec<Identity>,
    /// The key bytes.
    pub secret: Zeroizing<Vec<u8>>,
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secret")
            .field("name", &self.name)
            .field("ids", &self.ids)
            .field("secret", &format_args!("<{} bytes>", self.secret.len()))
            .finish()
    }
}

impl Config {
    /// The pre-shared key for local identity `a` and remote identity `b`,
    /// by strongSwan's rule (`credential_manager.c` `get_shared()`,
    /// `mem_cred.c`): a secret qualifies if one of its owners matches `a`
    /// or one matches `b` (an owner `%any`, or no owner, matches every
    /// identity, weakly); of those, the best match for `b` wins, then the
    /// best for `a`, then the first in the file.
    pub fn find_psk(&self, a: &Identity, b: &Identity) -> Option<&[u8]> {
        let any = [Identity::Any];
        let mut best: Option<(&Secret, IdMatch, IdMatch)> = None;
        for s in &self.secrets {
            let owners: &[Identity] = if s.ids.is_empty() { &any } else { &s.ids };
            let quality = |id: &Identity| {
                owners
                    .iter()
                    .map(|o| id.match_quality(o))
                    .max()
                    .unwrap_or(IdMatch::None)
            };
            let (me, other) = (quality(a), quality(b));
            if me == IdMatch::None && other == IdMatch::None {
                continue;
            }
            let better = match best {
                None => true,
                Some((_, bme, bother)) => other > bother || (other == bother && me > bme),
            };
            if better {
                best = Some((s, me, other));
                if me == IdMatch::Perfect && other == IdMatch::Perfect {
                    break;
                }
            }
        }
        best.map(|(s, _, _)| s.secret.as_slice())
    }

    /// The post-quantum preshared key known by PPK_ID `id` (RFC 8784),
    /// compared as bytes.
    pub fn find_ppk(&self, id: &[u8]) -> Option<&[u8]> {
        self.ppk_secrets
            .iter()
            .find(|s| s.ids.iter().any(|i| i.as_bytes() == id))
            .map(|s| s.secret.as_slice())
    }

    /// The password of EAP user `user` (an `eap-…` secret with an `id`
    /// matching it; one without ids matches anyone), as strongSwan looks
    /// up SHARED_EAP keys.
    pub fn find_eap(&self, user: &Identity) -> Option<&[u8]> {
        self.eap_secrets
            .iter()
            .filter_map(|s| {
                let q = if s.ids.is_empty() {
                    IdMatch::Any
                } else {
                    s.ids
                        .iter()
                        .map(|o| user.match_quality(o))
                        .max()
                        .unwrap_or(IdMatch::None)
                };
                (q != IdMatch::None).then_some((q, s))
            })
            .max_by_key(|(q, _)| *q)
            .map(|(_, s)| s.secret.as_slice())
    }

    /// The connection named `name`.
    pub fn connection(&self, name: &str) -> Option<&Connection> {
        self.connections.iter().find(|c| c.name == name)
    }
}

impl Connection {
    /// The first single address of `remote_addrs` (what an initiator
    /// connects to, as strongSwan picks it), if any.
    pub fn remote_host(&self) -> Option<IpAddr> {
        self.remote_addrs.iter().find_map(|a| match a {
            AddrSpec::Addr(ip) => Some(*ip),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_errors;
#[cfg(test)]
mod tests_include;
#[cfg(test)]
mod tests_tcp;
