//! MOBIKE's original initiator on the engine's side (RFC 4555 §3.5):
//! after an address or route change, each IKE SA that may move asks the
//! kernel for its path to the peer and moves (exchange/mobike.rs).

use core::time::Duration;

use crate::context::Cx;
use crate::host::Ike;
use crate::kernel::Kernel;

/// The body of [`crate::Ike::roam`]: each IKE SA that may move asks the
/// kernel for its source address towards the peer, or towards one of the
/// peer's other addresses when its own has no route (an SA with no route
/// at all stays where it is until the next change, as strongSwan defers
/// its update).
pub(crate) fn roam_all(ike: &mut Ike, now: Duration, k: &mut dyn Kernel) {
    let spis: Vec<u64> = ike
        .sas
        .values()
        .filter(|sa| crate::exchange::mobike::may_move(sa))
        .map(|sa| sa.our_spi())
        .collect();
    for spi in spis {
        let Some((_, mut sa)) = ike.sas.find(spi) else {
            continue;
        };
        // The peer's address in use, else the first of its others (§3.6)
        // that has a route.
        let current = sa.path.remote.ip();
        let others = sa.announced.mobike.peer_addrs.clone();
        let Some(path) = std::iter::once(current)
            .chain(others)
            .find_map(|peer| k.source_for(peer).map(|source| (source, peer)))
        else {
            continue;
        };
        let mut cx = Cx::new(&mut ike.host, now, k);
        crate::exchange::mobike::roam(&mut cx, &mut sa, path);
        crate::timers::kick(&mut cx, &mut sa);
    }
}
