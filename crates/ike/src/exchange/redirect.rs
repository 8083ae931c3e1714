//! Redirect (RFC 5685): a gateway sends a client to another gateway — at
//! IKE_SA_INIT, keeping no state (§5); in its last IKE_AUTH answer, once
//! the client is authenticated (§6); or for an established IKE SA, in an
//! INFORMATIONAL (§5 of the active session case) — and a client follows,
//! at most [`MAX_REDIRECTS`] times in [`LOOP_PERIOD`] (§9's loop rule, as
//! strongSwan's compile-time constants).
//!
//! ```text
//! Client                                   Gateway
//! HDR, SAi1, KEi, Ni, N(REDIRECT_SUPPORTED)  -->
//!                         <--  HDR(SPIr = 0), N(REDIRECT{GW, Ni})      (IKE_SA_INIT)
//! HDR, SK {IDi, …}                           -->
//!                         <--  HDR, SK {IDr, AUTH, N(REDIRECT{GW})}    (IKE_AUTH: no SA, TS, CP)
//!                         <--  HDR, SK {N(REDIRECT{GW})}               (INFORMATIONAL)
//! HDR, SK {}                                 -->
//! (then, to the new gateway)
//! HDR, SAi1, KEi, Ni, N(REDIRECTED_FROM{old GW})  -->
//! ```
//!
//! An IKE_SA_INIT REDIRECT is unauthenticated: the client takes it only
//! if it echoes its Ni, else keeps waiting for the real answer. The
//! others come under the IKE SA's keys, and in IKE_AUTH only after the
//! gateway's AUTH verified. A client redirected after IKE_SA_INIT makes
//! before it breaks: the new IKE SA and its Child SAs come up at the new
//! gateway, then the old IKE SA is deleted (reauth.rs's handover); the
//! gateway deletes it itself after [`LINGER`] if the client does not
//! (strongSwan's `half_open_timeout`).

use core::time::Duration;

use flowsec_wire::iana::{ExchangeType, NotifyType};
use flowsec_wire::ike::{Message, Payload};

use crate::config::{ConnRef, RedirectOn};
use crate::context::Cx;
use crate::event::IkeEvent;
use crate::exchange::{Exchange, Kind};
use crate::gateway::{GatewayId, RedirectDue};
use crate::host::{has_notify, notifies, notify, Host};
use crate::sa::{ChildState, IkeSa, IkeState, Todo};
use crate::table::{SaMut, Then};
use crate::transport::Arrival;

/// Redirects a client follows in [`LOOP_PERIOD`], at most.
pub(crate) const MAX_REDIRECTS: usize = 5;
/// The window of the loop rule.
pub(crate) const LOOP_PERIOD: Duration = Duration::from_secs(300);
/// How long a gateway keeps an IKE SA it redirected, if the client does
/// not delete it.
pub(crate) const LINGER: Duration = Duration::from_secs(30);

/// A gateway's `redirect` selectors (vici `redirect`, `flowsec ctl
/// redirect`): every one given must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedirectSelector {
    /// The connection's name.
    pub ike: Option<String>,
    /// The IKE SA's unique id.
    pub ike_id: Option<u32>,
    /// The client's address: an address, a CIDR prefix or `from-to`.
    pub peer_ip: Option<String>,
    /// The client's identity (a `*` prefix matches any ending).
    pub peer_id: Option<String>,
}

/// Client, IKE_SA_INIT request: REDIRECTED_FROM the gateway that sent us
/// here, else REDIRECT_SUPPORTED (§4).
pub(crate) fn announce(sa: &IkeSa) -> Payload {
    match sa.redirected.from {
        Some(from) => notify(NotifyType::REDIRECTED_FROM, GatewayId::Addr(from).emit(&[])),
        None => notify(NotifyType::REDIRECT_SUPPORTED, vec![]),
    }
}

/// Gateway, IKE_SA_INIT request: whether the client announced redirect.
pub(crate) fn announced(msg: &Message) -> bool {
    has_notify(msg, NotifyType::REDIRECT_SUPPORTED) || has_notify(msg, NotifyType::REDIRECTED_FROM)
}

/// The REDIRECT notify's gateway and what follows it, if `msg` has a
/// well-formed one.
fn redirect_in(msg: &Message) -> Option<(GatewayId, Vec<u8>)> {
    let n = notifies(msg).find(|n| n.ty == NotifyType::REDIRECT)?;
    GatewayId::parse(&n.data).map(|(gw, tail)| (gw, tail.to_vec()))
}

/// The gateway of `conn`'s `redirect_to` with the fewest IKE SAs as last
/// known (the daemon reads them, [`Ike::set_gateway_load`]), counting
/// those sent there since: the first such on a tie.
fn least_loaded(host: &mut Host, conn: &ConnRef) -> Option<GatewayId> {
    let gw = conn
        .redirect_to
        .iter()
        .min_by_key(|g| host.gateway_load.get(*g).copied().unwrap_or(0))?
        .clone();
    *host.gateway_load.entry(gw.clone()).or_insert(0) += 1;
    Some(gw)
}

/// Gateway, IKE_SA_INIT (§5): if the connection `conn` redirects there
/// and the client announced it, the REDIRECT data (with the client's Ni)
/// that is the whole answer; no state is kept.
pub(crate) fn at_init(
    host: &mut Host,
    arrival: &Arrival<'_>,
    msg: &Message,
    conn: &ConnRef,
    ni: &[u8],
) -> Option<Vec<u8>> {
    if conn.redirect_to.is_empty() || conn.redirect_on != RedirectOn::Init || !announced(msg) {
        return None;
    }
    let gw = least_loaded(host, conn)?;
    host.stats.redirects += 1;
    host.events.push(IkeEvent::Redirecting {
        name: conn.name.clone(),
        unique_id: None,
        peer: arrival.remote.ip(),
        to: gw.to_string(),
        phase: "IKE_SA_INIT",
    });
    Some(gw.emit(ni))
}

/// Gateway, the last IKE_AUTH answer (§6): the REDIRECT it carries, if
/// the connection redirects there and the client announced it; the IKE
/// SA then carries no Child SA and goes after [`LINGER`].
pub(crate) fn at_auth(cx: &mut Cx<'_>, sa: &mut IkeSa) -> Option<Payload> {
    let conn = sa.conn.clone();
    if conn.redirect_to.is_empty() || conn.redirect_on != RedirectOn::Auth || !sa.announced.redirect
    {
        return None;
    }
    let gw = least_loaded(cx.host, &conn)?;
    cx.host.stats.redirects += 1;
    sa.times.expire_at = Some(cx.now + LINGER);
    let event = IkeEvent::Redirecting {
        name: conn.name.clone(),
        unique_id: Some(sa.uid),
        peer: sa.path.remote.ip(),
        to: gw.to_string(),
        phase: "IKE_AUTH",
    };
    cx.host.report(sa, event);
    Some(notify(NotifyType::REDIRECT, gw.emit(&[])))
}

/// The child configs `sa` carries or is to bring up, in order.
fn child_configs(sa: &IkeSa, first: Option<usize>) -> Vec<usize> {
    let mut cfgs: Vec<usize> = first.into_iter().collect();
    let installed = sa
        .children
        .iter()
        .filter(|c| matches!(c.state, ChildState::Installed | ChildState::Rekeying))
        .map(|c| c.cfg);
    let queued = sa.queue.iter().filter_map(|t| match t {
        Todo::CreateChild(cfg) => Some(*cfg),
        _ => None,
    });
    for cfg in installed.chain(queued) {
        if !cfgs.contains(&cfg) {
            cfgs.push(cfg);
        }
    }
    cfgs
}

/// Client: follow a redirect of `sa` to `to` (at the end of the call).
fn follow(
    cx: &mut Cx<'_>,
    sa: &mut IkeSa,
    to: GatewayId,
    first: Option<usize>,
    phase: &'static str,
) {
    // One redirect of an IKE SA at a time: a second REDIRECT (a gateway
    // that repeats itself) is not followed again.
    if sa.redirected.left {
        cx.host.stats.redirect_refused += 1;
        return;
    }
    sa.redirected.left = true;
    let old = (phase != "IKE_SA_INIT").then(|| sa.our_spi());
    cx.host.stats.redirected += 1;
    let event = IkeEvent::Redirected {
        name: sa.conn.name.clone(),
        unique_id: sa.uid,
        to: to.to_string(),
        phase,
    };
    cx.host.report(sa, event);
    cx.host.redirect_due.push(RedirectDue {
        conn: sa.conn.clone(),
        children: child_configs(sa, first),
        to,
        from: sa.path.remote.ip(),
        history: sa.redirected.history.clone(),
        old,
    });
}

/// Client, the answer to our IKE_SA_INIT carries a REDIRECT (§5): taken
/// if its nonce is our Ni (this IKE SA goes, a new one starts at the new
/// gateway), else dropped and counted (an off-path forgery: the real
/// answer may still come).
pub(crate) fn in_init_answer(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    msg: &Message,
    (ni, first): (&[u8], Option<usize>),
) -> Option<Then> {
    if !has_notify(msg, NotifyType::REDIRECT) {
        return None;
    }
    match redirect_in(msg) {
        Some((gw, nonce)) if nonce == ni => {
            follow(cx, sa, gw, first, "IKE_SA_INIT");
            Some(Then::Destroy(Vec::new()))
        }
        _ => {
            cx.host.stats.redirect_refused += 1;
            Some(Then::Stay)
        }
    }
}

/// Whether `msg` carries a well-formed REDIRECT.
pub(crate) fn redirects(msg: &Message) -> bool {
    redirect_in(msg).is_some()
}

/// Client, the gateway's last IKE_AUTH answer (its AUTH verified) carries
/// a REDIRECT (§6): the IKE SA (up without Child SAs) stays until the new
/// one is, then goes.
pub(crate) fn in_auth_answer(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    msg: &Message,
    first: Option<usize>,
) {
    if let Some((gw, _)) = redirect_in(msg) {
        follow(cx, sa, gw, first, "IKE_AUTH");
    }
}

/// Client, an INFORMATIONAL request with REDIRECT (an established SA,
/// §5): answered empty and followed, when we are the client; `None`
/// when it has none (or we are the gateway: then it is an ordinary
/// request).
pub(crate) fn informational(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    mid: u32,
    msg: &Message,
) -> Option<Then> {
    if !sa.original_initiator || sa.state != IkeState::Established {
        return None;
    }
    let (gw, _) = redirect_in(msg)?;
    cx.respond(sa, ExchangeType::INFORMATIONAL, mid, vec![]);
    follow(cx, sa, gw, None, "INFORMATIONAL");
    Some(Then::Stay)
}

/// Gateway: INFORMATIONAL with REDIRECT for an established SA.
pub(crate) fn start(cx: &mut Cx<'_>, sa: &mut IkeSa, gw: GatewayId) {
    cx.host.stats.redirects += 1;
    sa.redirected.sent = true;
    let event = IkeEvent::Redirecting {
        name: sa.conn.name.clone(),
        unique_id: Some(sa.uid),
        peer: sa.path.remote.ip(),
        to: gw.to_string(),
        phase: "INFORMATIONAL",
    };
    cx.host.report(sa, event);
    let n = notify(NotifyType::REDIRECT, gw.emit(&[]));
    cx.request(sa, ExchangeType::INFORMATIONAL, vec![n], Box::new(Redirect));
}

/// INFORMATIONAL with REDIRECT, gateway: waits for the (empty) answer.
pub(crate) struct Redirect;

impl Exchange for Redirect {
    fn kind(&self) -> Kind {
        Kind::Redirect
    }

    /// The client goes to the new gateway and deletes this SA once up
    /// there; if it does not, the SA goes after [`LINGER`].
    fn process(self: Box<Self>, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, _: Message) -> Then {
        let linger = cx.now + LINGER;
        sa.times.expire_at = Some(sa.times.expire_at.map_or(linger, |t| t.min(linger)));
        Then::Stay
    }
}
