//! The state the core keeps per IKE SA and per Child SA, and the tasks an
//! IKE SA has queued (those in flight are its exchange manager's,
//! task.rs).

use core::time::Duration;
use std::collections::VecDeque;
use std::net::SocketAddr;

use flowsec_crypto::suite::Encr;
use flowsec_ipsec::Mode;
use flowsec_wire::iana::{DhGroup, IntegId};
use flowsec_wire::ike::TrafficSelector;
use zeroize::Zeroizing;

use crate::config::{ConnRef, Identity};
use crate::crypto::{IkeSuite, SkCrypto};
use crate::exchange::Manager;

/// Where an IKE SA stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IkeState {
    /// Initiator: waits for the IKE_SA_INIT response (its `IkeInit` task
    /// is in flight).
    Connecting,
    /// Responder: IKE_SA_INIT answered, waits for IKE_AUTH (its
    /// `AwaitingAuth` task holds what AUTH is checked against).
    HalfOpen,
    /// Initiator: waits for the IKE_AUTH response (`IkeAuth` in flight).
    Authenticating,
    /// Authenticated; Child SAs can be made.
    Established,
    /// Replaced by a rekeyed IKE SA; waiting for the old one's DELETE.
    Rekeyed,
    /// Our DELETE for it is in flight: waits for its answer.
    Deleting,
}

impl IkeState {
    /// strongSwan's word for it in `swanctl --list-sas`.
    pub fn name(self) -> &'static str {
        match self {
            IkeState::Connecting | IkeState::Authenticating | IkeState::HalfOpen => "CONNECTING",
            IkeState::Established => "ESTABLISHED",
            IkeState::Rekeyed => "REKEYED",
            IkeState::Deleting => "DELETING",
        }
    }
}

/// Where a Child SA stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildState {
    /// Installed and carrying traffic.
    Installed,
    /// Our rekey of it is in flight.
    Rekeying,
    /// Replaced by a newer SA: kept (inbound) until it is deleted.
    Rekeyed,
    /// Our DELETE for it is in flight.
    Deleting,
}

impl ChildState {
    /// strongSwan's word for it.
    pub fn name(self) -> &'static str {
        match self {
            ChildState::Installed => "INSTALLED",
            ChildState::Rekeying => "REKEYING",
            ChildState::Rekeyed => "REKEYED",
            ChildState::Deleting => "DELETING",
        }
    }
}

/// The keys of an established (or half-established) IKE SA.
pub(crate) struct IkeKeyState {
    pub suite: IkeSuite,
    /// The additional key exchanges done (RFC 9370), by slot: NONE for
    /// one skipped.
    pub addke: Vec<flowsec_wire::iana::DhGroup>,
    /// A post-quantum preshared key went into SK_d, SK_pi and SK_pr (RFC
    /// 8784), here or in the IKE SA this one rekeyed.
    pub ppk: bool,
    pub sk_d: Zeroizing<Vec<u8>>,
    pub sk_pi: Zeroizing<Vec<u8>>,
    pub sk_pr: Zeroizing<Vec<u8>>,
    /// Protects what we send.
    pub out: SkCrypto,
    /// Opens what we receive.
    pub inn: SkCrypto,
}

/// What a Child SA's exchange negotiated.
pub(crate) struct ChildSuite {
    pub mode: Mode,
    pub encr: Option<Encr>,
    pub integ: IntegId,
    pub dh: DhGroup,
    /// The additional key exchanges after `dh` (RFC 9370 §2.2.4), by
    /// slot: NONE for one skipped.
    pub addke: Vec<DhGroup>,
    pub esn: bool,
    /// ESP in UDP (a NAT was detected).
    pub encap: bool,
}

/// A Child SA's times.
pub(crate) struct ChildTimes {
    pub installed: Duration,
    pub rekey_at: Option<Duration>,
    pub expire_at: Option<Duration>,
}

/// What a Child SA put in the data plane.
pub(crate) struct InPlane {
    /// The inbound and outbound SA as installed (their destinations are
    /// the IKE SA's addresses then, which may change later, §2.23).
    pub sa_in: flowsec_ipsec::SaId,
    pub sa_out: flowsec_ipsec::SaId,
    /// The IPComp SAs (inbound, outbound), when negotiated (§2.22).
    pub ipcomp: Option<(flowsec_ipsec::SaId, flowsec_ipsec::SaId)>,
    /// Responder of a rekey: the outbound SAs, installed when the SA they
    /// replace goes (ARCHITECTURE.md "Rekeying without loss").
    pub deferred_out: Vec<flowsec_ipsec::SaConfig>,
    /// Its SAs have left the data plane already (`rekey_switch =
    /// prefer-new` removes a replaced SA's at once); removing the record
    /// must not delete them again: their SPIs may be someone else's by
    /// then.
    pub gone: bool,
}

/// One Child SA: a pair of SAs (inbound and outbound) and their selectors.
pub(crate) struct ChildSa {
    /// Index of its `children` entry in the connection.
    pub cfg: usize,
    /// Ties the SAs to their policies.
    pub reqid: u32,
    /// Our inbound SPI (the peer sends with it).
    pub spi_in: u32,
    /// The peer's inbound SPI (we send with it).
    pub spi_out: u32,
    pub state: ChildState,
    pub suite: ChildSuite,
    pub local_ts: Vec<TrafficSelector>,
    pub remote_ts: Vec<TrafficSelector>,
    pub times: ChildTimes,
    pub plane: InPlane,
    /// The smallest nonce of the exchange that made it (RFC 7296
    /// §2.8.1: a rekey collision is resolved by the lowest nonce).
    pub min_nonce: Vec<u8>,
    /// Negotiated with SA_RESOURCE_INFO (RFC 9611): one of a group of
    /// Child SAs with the same selectors.
    pub per_cpu: bool,
    /// In that group, the resource (worker) whose SA this is; `None` for
    /// the group's fallback (and for every other Child SA).
    pub cpu: Option<u32>,
}

/// Something queued to start once the window is free.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Todo {
    /// A new Child SA of config `children[i]`.
    CreateChild(usize),
    /// A per-resource Child SA of config `children[i]` for resource `cpu`
    /// (RFC 9611).
    CreateResource(usize, u32),
    /// Rekey the Child SA with this inbound SPI.
    RekeyChild(u32),
    /// Rekey the IKE SA.
    RekeyIke,
    /// Delete the Child SA with this inbound SPI.
    DeleteChild(u32),
    /// Delete the IKE SA.
    DeleteIke,
    /// Check the peer is alive.
    Dpd,
    /// Tell the peer where the IKE SA moved (MOBIKE, RFC 4555 §3.5).
    UpdateAddresses,
    /// Send the client to this gateway (RFC 5685).
    Redirect(crate::gateway::GatewayId),
}

/// Where an IKE SA's messages and its Child SAs' ESP travel: the
/// addresses (which follow a NAT's rebinding, RFC 7296 §2.23, and will
/// follow a MOBIKE move), the transport and what NAT detection found.
pub(crate) struct Path {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    /// UDP, or the TCP stream (RFC 9329) its messages and its Child SAs'
    /// ESP travel in; for a stream, `remote` names the connection (the
    /// peer's port is its TCP port).
    pub transport: crate::transport::Transport,
    /// We opened that stream (the TCP Originator, RFC 9329 §6.1): only we
    /// reconnect it, and our side of it is `local`'s address with port 0
    /// (any port).
    pub stream_originator: bool,
    /// A NAT is in front of us / of the peer (§2.23).
    pub nat_local: bool,
    pub nat_remote: bool,
}

/// An IKE SA's times: when it began, what is due when.
pub(crate) struct Times {
    pub created: Duration,
    pub established: Option<Duration>,
    pub rekey_at: Option<Duration>,
    pub expire_at: Option<Duration>,
    /// Last time a valid message of the peer arrived.
    pub last_heard: Duration,
    /// Last time we sent on it (a NAT-keepalive is due after a quiet
    /// `keep_alive`, RFC 3948 §2.3).
    pub last_sent: Duration,
}

/// The identities IKE_AUTH established (ours as we sent it).
#[derive(Default)]
pub(crate) struct Ids {
    pub local: Option<Identity>,
    pub peer: Option<Identity>,
}

/// What the peer announced in IKE_SA_INIT.
#[derive(Default)]
pub(crate) struct Announced {
    /// IKEV2_FRAGMENTATION_SUPPORTED (and so did we, RFC 7383).
    pub fragments: bool,
    /// The hashes of SIGNATURE_HASH_ALGORITHMS (RFC 7427 §4); empty if it
    /// sent none.
    pub hashes: crate::cert::HashSet,
    /// CERTREQ in its IKE_SA_INIT response (initiator; `send_cert =
    /// ifasked` then sends our certificate).
    pub certreq: bool,
    /// USE_PPK (and so did we, RFC 8784 §3).
    pub ppk: bool,
    /// MOBIKE (RFC 4555), announced in IKE_AUTH.
    pub mobike: Mobility,
    /// REDIRECT_SUPPORTED or REDIRECTED_FROM (RFC 5685 §4): a client we
    /// may redirect.
    pub redirect: bool,
}

/// MOBIKE (RFC 4555) on an IKE SA: whether both ends announced it, who
/// moves the SAs, and where else the peer can be reached. An IKE rekey
/// carries it over (strongSwan's `inherit_post` does).
#[derive(Default, Clone)]
pub(crate) struct Mobility {
    /// Both sent MOBIKE_SUPPORTED (§3.2).
    pub on: bool,
    /// The peer's addresses beyond the one in use (ADDITIONAL_IP4/6_ADDRESS,
    /// §3.6; each list replaces the last), at most
    /// [`crate::exchange::mobike::MAX_ADDRESSES`].
    pub peer_addrs: Vec<std::net::IpAddr>,
}

/// Virtual IPs (RFC 7296 §3.15) of an IKE SA, either role.
#[derive(Default)]
pub(crate) struct Vips {
    /// Those the responder gave us (initiator, `vips`), on our TUN while
    /// the IKE SA lives.
    pub local: Vec<std::net::IpAddr>,
    /// DNS servers the responder sent with them.
    pub dns: Vec<std::net::IpAddr>,
    /// Those we gave the peer (responder), with their pools.
    pub remote: Vec<(String, std::net::IpAddr)>,
}

/// One IKE SA: who it is (SPIs, role, connection), its keys, its
/// exchanges and queue, its Child SAs, and its state in parts.
pub(crate) struct IkeSa {
    /// The connection it was made with: a reload that changes or removes
    /// it gives the host another, and this SA keeps its own
    /// ([`crate::reload`]).
    pub conn: ConnRef,
    /// Its unique id, for `flowsec ctl` (strongSwan's `#N`).
    pub uid: u32,
    pub spi_i: u64,
    pub spi_r: u64,
    /// We are its initiator (§2.2: the I flag; of a rekeyed SA, the
    /// rekey's).
    pub initiator: bool,
    /// We made the first IKE SA of its chain (the I flag of the first,
    /// kept across rekeys): the client, who moves the SAs (RFC 4555 §3.5)
    /// and whom a gateway may redirect (RFC 5685).
    pub original_initiator: bool,
    /// Redirects this client followed (RFC 5685).
    pub redirected: crate::gateway::Redirected,
    pub state: IkeState,
    pub keys: Option<IkeKeyState>,
    pub path: Path,
    pub times: Times,
    pub ids: Ids,
    pub announced: Announced,
    pub vips: Vips,
    /// Message IDs, retransmission and the tasks of its exchanges.
    pub exch: Manager,
    pub queue: VecDeque<Todo>,
    pub children: Vec<ChildSa>,
    /// The peer's request `[0]` and response `[1]` being put back together
    /// from fragments (RFC 7383).
    pub reassembly: [Option<crate::fragmentation::Reassembly>; 2],
    /// How and when the peer authenticated (kept across IKE rekeys).
    pub auth: PeerAuth,
}

impl IkeSa {
    /// Its DELETE is queued or under way already.
    pub fn deleting(&self) -> bool {
        self.queue.contains(&Todo::DeleteIke)
            || self
                .exch
                .task()
                .is_some_and(|t| t.kind() == crate::exchange::Kind::DeleteIke)
    }

    /// The name of child config `cfg` of its connection.
    pub fn child_name(&self, cfg: usize) -> String {
        self.conn
            .children
            .get(cfg)
            .map_or_else(|| "?".into(), |c| c.name.clone())
    }

    /// Its `<name|id>` in a log.
    pub fn tag(&self) -> crate::event_log::SaTag {
        crate::event_log::SaTag {
            name: self.conn.name.clone(),
            unique_id: self.uid,
        }
    }

    /// The SPI that names this SA on our side.
    pub fn our_spi(&self) -> u64 {
        if self.initiator {
            self.spi_i
        } else {
            self.spi_r
        }
    }
}

/// How a peer authenticated, for as long as the IKE SA and its
/// successors (IKE rekeys) live.
#[derive(Clone, Default)]
pub(crate) struct PeerAuth {
    /// When it authenticated (IKE_AUTH, or the end of EAP).
    pub at: Duration,
    /// When we authenticate again (`reauth_time`, jittered by
    /// `rand_time`), if we do: only the side that initiated the IKE SA
    /// (both would double the SAs at every `reauth_time`, neither deleting
    /// the other's); the other waits for the hard limit, as strongSwan's
    /// responder does.
    pub reauth_at: Option<Duration>,
    /// The IKE SA (our SPI) authenticating again in this one's place.
    pub reauth_by: Option<u64>,
    /// The certificates it sent (end entity first), to check again when
    /// the credentials change.
    pub certs: Vec<Vec<u8>>,
    /// A reload's credentials no longer let it in: this IKE SA and any
    /// successor a rekey in flight makes are deleted.
    pub revoked: bool,
}
