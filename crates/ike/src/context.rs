//! [`Cx`]: what one call of the caller's lends the code that serves it —
//! the time it came at, the kernel, and this host's state — so that no
//! handler threads `now` and a kernel through its arguments. A handler
//! takes the IKE SA it works on beside it ([`crate::table::SaMut`]):
//! one call may touch two (a rekey's old and new SA).

use core::ops::{Deref, DerefMut};
use core::time::Duration;

use crate::host::Host;
use crate::kernel::Kernel;

/// One call's context: `now`, the kernel, and the host's state (which it
/// dereferences to).
pub(crate) struct Cx<'a> {
    /// When the call came (time is an argument: nothing here reads a
    /// clock).
    pub now: Duration,
    /// The data plane's SAs and policies.
    pub k: &'a mut dyn Kernel,
    pub host: &'a mut Host,
}

impl<'a> Cx<'a> {
    /// The context of a call at `now`.
    pub fn new(host: &'a mut Host, now: Duration, k: &'a mut dyn Kernel) -> Self {
        Cx { now, k, host }
    }
}

impl Deref for Cx<'_> {
    type Target = Host;

    fn deref(&self) -> &Host {
        self.host
    }
}

impl DerefMut for Cx<'_> {
    fn deref_mut(&mut self) -> &mut Host {
        self.host
    }
}
