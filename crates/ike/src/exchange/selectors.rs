//! The responder's test of proposed traffic selectors against a child
//! config (RFC 7296 §2.9), shared by CREATE_CHILD_SA's responder and by
//! IKE_AUTH's choice among connections that differ only in their children
//! (a leaf: it names no exchange).

use flowsec_wire::ike::{Message, TrafficSelector};

use crate::config::{ChildConfig, Connection};
use crate::sa::IkeSa;
use crate::ts;

/// The selectors of `child` and those proposed (`tsi`, `tsr`) narrowed
/// to each other (§2.9): ours, then the peer's; `None` where they do not
/// meet, or would need more than [`ts::MAX_SELECTORS`] policies.
pub(crate) fn narrowed(
    sa: &IkeSa,
    child: &ChildConfig,
    tsi: &[TrafficSelector],
    tsr: &[TrafficSelector],
) -> Option<(Vec<TrafficSelector>, Vec<TrafficSelector>)> {
    let ours_remote = ts::from_config_dynamic(&child.remote_ts, &crate::vip::remote_dynamic(sa));
    let ours_local = ts::from_config(&child.local_ts, sa.path.local.ip());
    let remote_ts = ts::narrow(tsi, &ours_remote);
    let local_ts = ts::narrow(tsr, &ours_local);
    let fits = !remote_ts.is_empty()
        && !local_ts.is_empty()
        && ts::selector_count(&local_ts, &remote_ts) <= ts::MAX_SELECTORS;
    fits.then_some((local_ts, remote_ts))
}

/// Whether a child of `conn` takes the selectors `msg` proposes (TSi,
/// TSr) for a Child SA on `sa`: for the responder choosing among
/// connections that differ only in their children
/// (`exchange::auth::reselect`). A message without selectors asks for no
/// Child SA: any connection takes it.
pub(crate) fn takes_selectors(sa: &IkeSa, conn: &Connection, msg: &Message) -> bool {
    let c = crate::host::parts(msg);
    let (Some(tsi), Some(tsr)) = (c.tsi, c.tsr) else {
        return true;
    };
    conn.children
        .iter()
        .any(|child| narrowed(sa, child, tsi, tsr).is_some())
}
