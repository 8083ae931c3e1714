//! What a worker's packet steps borrow of it (its datapath, IKE sink and
//! peers' mailboxes, apart from its descriptors, which the receive loops
//! hold): inbound delivery, and the pcrypt mode's dealing of crypto jobs
//! to the workers and release of their results in order
//! (`crate::pcrypt`).

use std::time::Duration;

use flowsec_ipsec::buf::{DEFAULT_HEADROOM, DEFAULT_TAILROOM};
use flowsec_ipsec::{PacketBuf, UdpEndpoints};

use super::State;
use crate::channels::{Mailbox, Msg};
use crate::datapath::{self, Datapath};
use crate::pcrypt::{self, Done, OpenJob, SealJob};

/// A copy of `packet` in a buffer that can travel to another worker: one
/// of the pool's, or (larger than the TUN MTU: a reassembled datagram, an
/// ESP packet of one) one of its own.
pub(super) fn owned_copy(packet: &[u8], mtu: usize, st: &mut State) -> Option<PacketBuf> {
    let fresh =
        |room: usize| PacketBuf::new(DEFAULT_HEADROOM + room + DEFAULT_TAILROOM, DEFAULT_HEADROOM);
    let mut buf = st.pool.pop().unwrap_or_else(|| fresh(mtu));
    buf.reset(DEFAULT_HEADROOM);
    if buf.set(packet).is_err() || buf.tailroom() < DEFAULT_TAILROOM {
        st.recycle(buf);
        buf = fresh(packet.len());
        buf.set(packet).ok()?;
    }
    Some(buf)
}

/// What the packet steps use of a worker, borrowed apart from its
/// descriptors (which the receive loops hold).
pub(super) struct Hands<'a> {
    pub(super) dp: &'a mut Datapath,
    pub(super) ike: Option<&'a crate::channels::IkeSink>,
    pub(super) peers: &'a [Mailbox],
    pub(super) index: usize,
    pub(super) mtu: usize,
}

impl Hands<'_> {
    /// A packet from the network: as the datapath decides.
    pub(super) fn inbound(
        &mut self,
        b: &mut PacketBuf,
        from: Option<&UdpEndpoints>,
        now: Duration,
        st: &mut State,
    ) {
        match self.dp.inbound(b, from, now, &mut st.stats) {
            datapath::Inbound::Crypto(a) => self.dispatch_open(b, from, a, now, st),
            verdict => self.deliver(b, verdict, from, st),
        }
    }

    /// Carry out an inbound verdict.
    pub(super) fn deliver(
        &mut self,
        b: &PacketBuf,
        verdict: datapath::Inbound,
        from: Option<&UdpEndpoints>,
        st: &mut State,
    ) {
        match verdict {
            datapath::Inbound::Deliver(queue) => {
                st.tun_out.deliver(b.as_slice(), queue, &mut st.stats)
            }
            // Without IKE, dropped here.
            datapath::Inbound::Ike => {
                if let (Some(sink), Some(from)) = (self.ike, from) {
                    sink.message(b.as_slice(), from);
                }
            }
            datapath::Inbound::Done | datapath::Inbound::Crypto(_) => {}
        }
    }

    /// Pcrypt, owner: open the packet in `b` on the worker whose turn it
    /// is; it is finished here in order ([`Hands::release`]). With
    /// nothing in flight and our own turn, in place at once.
    pub(super) fn dispatch_open(
        &mut self,
        b: &mut PacketBuf,
        from: Option<&UdpEndpoints>,
        a: pcrypt::Numbered,
        now: Duration,
        st: &mut State,
    ) {
        let to = st.pcrypt.next_turn(self.peers.len());
        if to == self.index && st.pcrypt.open.in_flight() == 0 {
            let stats = &mut st.stats;
            if let Some(opened) = self.dp.open_assigned(b, from, a, now, stats) {
                let verdict = self.dp.finish_inbound(b, a, opened, now, stats);
                self.deliver(b, verdict, from, st);
            }
            return;
        }
        // A worker that stopped answering holds the head of the order:
        // beyond a bound the packets are dropped, not queued forever.
        if st.pcrypt.open.in_flight() >= pcrypt::RETURNS {
            st.stats.crypto_backlog += 1;
            return;
        }
        let order = st.pcrypt.open.ticket();
        let job = OpenJob {
            owner: self.index,
            order,
            numbered: a,
            from: from.copied(),
        };
        let Some(mut buf) = owned_copy(b.as_slice(), self.mtu, st) else {
            st.stats.handoff_drops += 1;
            st.pcrypt.open.complete(
                order,
                Done::Opened {
                    job,
                    buf: PacketBuf::new(0, 0),
                    opened: None,
                },
            );
            return self.release(now, st);
        };
        if to != self.index && st.pcrypt.open.in_flight() <= pcrypt::WINDOW {
            match self.peers[to].hand(Msg::Open { buf, job }) {
                Ok(()) => {
                    st.to_wake[to] = true;
                    st.stats.crypto_dealt += 1;
                    return;
                }
                Err(m) => {
                    let Msg::Open { buf: back, .. } = m else {
                        unreachable!("the message sent")
                    };
                    buf = back;
                }
            }
        }
        let opened = self.dp.open_assigned(&mut buf, from, a, now, &mut st.stats);
        st.pcrypt
            .open
            .complete(order, Done::Opened { job, buf, opened });
        self.release(now, st);
    }

    /// Pcrypt, owner: seal the packet in `b` on the worker whose turn it
    /// is; it is sent here in order ([`Hands::release`]). With nothing in
    /// flight and our own turn, in place at once.
    pub(super) fn dispatch_seal(
        &mut self,
        b: &mut PacketBuf,
        a: pcrypt::Numbered,
        whole: bool,
        now: Duration,
        st: &mut State,
    ) {
        let to = st.pcrypt.next_turn(self.peers.len());
        if to == self.index && st.pcrypt.seal.in_flight() == 0 {
            if let Some(egress) = self.dp.seal_assigned(b, a, now, &mut st.stats) {
                send_sealed(b, egress, whole, st);
            }
            return;
        }
        if st.pcrypt.seal.in_flight() >= pcrypt::RETURNS {
            st.stats.crypto_backlog += 1;
            return;
        }
        let order = st.pcrypt.seal.ticket();
        let job = SealJob {
            owner: self.index,
            order,
            numbered: a,
            whole,
        };
        let Some(mut buf) = owned_copy(b.as_slice(), self.mtu, st) else {
            st.stats.handoff_drops += 1;
            st.pcrypt.seal.complete(
                order,
                Done::Sealed {
                    job,
                    buf: PacketBuf::new(0, 0),
                    egress: None,
                },
            );
            return self.release(now, st);
        };
        if to != self.index && st.pcrypt.seal.in_flight() <= pcrypt::WINDOW {
            match self.peers[to].hand(Msg::Seal { buf, job }) {
                Ok(()) => {
                    st.to_wake[to] = true;
                    st.stats.crypto_dealt += 1;
                    return;
                }
                Err(m) => {
                    let Msg::Seal { buf: back, .. } = m else {
                        unreachable!("the message sent")
                    };
                    buf = back;
                }
            }
        }
        let egress = self.dp.seal_assigned(&mut buf, a, now, &mut st.stats);
        st.pcrypt
            .seal
            .complete(order, Done::Sealed { job, buf, egress });
        self.release(now, st);
    }

    /// Pcrypt, owner: send and deliver the results that are next in
    /// order.
    pub(super) fn release(&mut self, now: Duration, st: &mut State) {
        while let Some(done) = st.pcrypt.seal.pop() {
            if let Done::Sealed { job, buf, egress } = done {
                if let Some(egress) = egress {
                    send_sealed(&buf, egress, job.whole, st);
                }
                st.recycle(buf);
            }
        }
        while let Some(done) = st.pcrypt.open.pop() {
            if let Done::Opened {
                job,
                mut buf,
                opened,
            } = done
            {
                if let Some(opened) = opened {
                    let stats = &mut st.stats;
                    let verdict =
                        self.dp
                            .finish_inbound(&mut buf, job.numbered, opened, now, stats);
                    self.deliver(&buf, verdict, job.from.as_ref(), st);
                }
                st.recycle(buf);
            }
        }
    }
}

/// Queue a sealed packet for sending (a reassembled datagram, `whole`,
/// as fragments where it must be).
fn send_sealed(b: &PacketBuf, egress: flowsec_ipsec::Egress, whole: bool, st: &mut State) {
    match whole {
        true => st.send.fragmenting(b.as_slice(), egress, &mut st.stats),
        false => st.send.sealed(b.as_slice(), egress, &mut st.stats),
    }
}
