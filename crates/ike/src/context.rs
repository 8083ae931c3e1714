//! [`Cx`]: what one call of the caller's lends the code that serves it —
//! the time it came at, the kernel, and this host's state — so that no
//! handler threads `now` and a kernel through its arguments. A handler
//! takes the IKE SA it works on beside it ([`crate::table::SaMut`]):
//! one call may touch two (a rekey's old and new SA).

use core::ops::{Deref, DerefMut};
use core::time::Duration;

use flowsec_wire::iana::ExchangeType;
use flowsec_wire::ike::Payload;

use crate::exchange::Task;
use crate::host::Host;
use crate::kernel::Kernel;
use crate::sa::IkeSa;

/// One call's context: `now`, the kernel, and the host's state (which it
/// dereferences to).
pub(crate) struct Cx<'a> {
    /// When the call came (time is an argument: nothing here reads a
    /// clock).
    pub now: Duration,
    /// The data plane's SAs and policies.
    pub k: &'a mut dyn Kernel,
    pub host: &'a mut Host,
    /// The (local, remote) addresses of the request being answered, when
    /// it came over UDP to an IKE SA past IKE_AUTH: the answer goes back
    /// there (RFC 7296 §2.11; RFC 4555 §3.5: a MOBIKE probe or update
    /// from a new address), not necessarily on the IKE SA's path.
    pub arrival: Option<(std::net::SocketAddr, std::net::SocketAddr)>,
}

impl<'a> Cx<'a> {
    /// The context of a call at `now`.
    pub fn new(host: &'a mut Host, now: Duration, k: &'a mut dyn Kernel) -> Self {
        Cx {
            now,
            k,
            host,
            arrival: None,
        }
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

impl Cx<'_> {
    /// Send a request on `sa` for `task`.
    pub(crate) fn request(
        &mut self,
        sa: &mut IkeSa,
        exchange: ExchangeType,
        payloads: Vec<Payload>,
        task: Task,
    ) {
        let mid = sa.exch.peek_mid();
        let data = self.host.protect(sa, exchange, false, mid, &payloads);
        sa.exch.sent(
            exchange,
            data.clone(),
            task,
            self.now,
            &self.host.settings.retransmit,
        );
        sa.times.last_sent = self.now;
        self.host
            .push_all(sa.path.transport, sa.path.local, sa.path.remote, data);
    }

    /// Answer request `mid` of `sa`.
    pub(crate) fn respond(
        &mut self,
        sa: &mut IkeSa,
        exchange: ExchangeType,
        mid: u32,
        payloads: Vec<Payload>,
    ) {
        let data = self.host.protect(sa, exchange, true, mid, &payloads);
        sa.exch.responded(mid, data.clone());
        sa.times.last_sent = self.now;
        let (local, remote) = self.arrival.unwrap_or((sa.path.local, sa.path.remote));
        self.host.push_all(sa.path.transport, local, remote, data);
    }
}
