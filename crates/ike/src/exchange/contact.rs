//! INITIAL_CONTACT (RFC 7296 §2.4, §3.10.1), both roles. The notify
//! "asserts that this IKE SA is the only IKE SA currently active between
//! the authenticated identities" (§3.10.1), and its recipient may delete
//! the others as left over from a crash (§2.4). So the initiator sends it
//! in its first IKE_AUTH only when it holds no other IKE SA with the peer
//! — a second connection to the same peer must not, or the peer deletes
//! the first — and the responder deletes the stale ones it names.
//!
//! ```text
//! HDR, SK {IDi, [IDr,] AUTH, [N(INITIAL_CONTACT),] ...}  -->
//!     (responder: the other IKE SAs between IDi and IDr go)
//! ```

use crate::config::{Identity, Unique};
use crate::context::Cx;
use crate::event::IkeEvent;
use crate::host::Host;
use crate::sa::{IkeSa, IkeState};
use crate::table::SaMut;

/// Initiator: whether the first IKE_AUTH of `sa`, from `me` to `peer`
/// (configured, or `%any`), carries INITIAL_CONTACT. As charon's ike_auth
/// (`ike_sa_manager->has_contact`): not with `unique = never`, and not
/// while another IKE SA of ours, established or being set up, is between
/// the same identities over the same address family. With the peer's
/// identity not configured (charon sends nothing then), an IKE SA with
/// the same remote address stands in for it. A replaced connection's old
/// SA (reload.rs, make before break) is such a one: it goes after this
/// one is up.
pub(crate) fn send_initial_contact(
    host: &Host,
    sa: &SaMut<'_>,
    me: &Identity,
    peer: &Identity,
) -> bool {
    if sa.conn.unique == Unique::Never {
        return false;
    }
    let family = sa.path.remote.is_ipv4();
    !sa.others.values().any(|o| {
        let live = matches!(
            o.state,
            IkeState::Connecting | IkeState::Authenticating | IkeState::Established
        );
        let same_peer = match peer {
            Identity::Any => o.path.remote.ip() == sa.path.remote.ip(),
            peer => peer_of(o).is_some_and(|p| p.same_as(peer)),
        };
        live && o.path.remote.is_ipv4() == family && same_peer && local_of(host, o).same_as(me)
    })
}

/// The peer's identity on `o`: authenticated, or else configured.
fn peer_of(o: &IkeSa) -> Option<&Identity> {
    o.ids.peer.as_ref().or(o.conn.remote.id.as_ref())
}

/// Our identity on `o`: sent, or else the one we will send.
fn local_of(host: &Host, o: &IkeSa) -> Identity {
    o.ids
        .local
        .clone()
        .unwrap_or_else(|| crate::auth::our_id(host, o))
}

/// Responder: the peer says it has no other IKE SA with us (§2.4,
/// INITIAL_CONTACT): those we still hold between the same identities
/// (for the same connection) are stale (it restarted); they go without a
/// word to it, unless `unique = never`.
pub(crate) fn initial_contact(cx: &mut Cx<'_>, sa: &mut SaMut<'_>) {
    if sa.conn.unique == Unique::Never {
        return;
    }
    let stale: Vec<u64> = sa
        .others
        .values()
        .filter(|o| {
            std::sync::Arc::ptr_eq(&o.conn, &sa.conn)
                && same(&o.ids.peer, &sa.ids.peer)
                && same(&o.ids.local, &sa.ids.local)
                && o.state != IkeState::HalfOpen
        })
        .map(|o| o.our_spi())
        .collect();
    for spi in stale {
        if let Some(mut old) = sa.others.take(spi) {
            cx.host.report(
                sa,
                IkeEvent::InitialContact {
                    name: cx.host.conn_name(&old),
                    unique_id: old.uid,
                },
            );
            crate::install::destroy(cx, &mut SaMut::detached(&mut old, sa.others.reborrow()));
        }
    }
}

/// Both unknown, or the same peer ([`Identity::same_as`]).
fn same(a: &Option<Identity>, b: &Option<Identity>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.same_as(b),
        (a, b) => a.is_none() && b.is_none(),
    }
}
