//! The way to the stream thread (RFC 9329), for the workers and the
//! control thread: [`StreamSink`], two bounded queues (IKE's apart, so
//! that a burst of ESP never crowds out its messages) and the thread's
//! counters; and [`ConnId`], the name IKE and the thread give a
//! connection.

use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;

use flowsec_ike::Transport;
use flowsec_ipsec::UdpEndpoints;

use crate::sys;

mod counters;
pub use counters::{count, StreamCounters};

/// Batches from the workers and messages from IKE waiting for the thread.
pub(crate) const QUEUE: usize = 1024;

/// A connection's name for its whole life, never reused (issue 29 item
/// 12: a new connection from the same address and port is another
/// connection). Answers to a message go back on the connection it came
/// on, by this name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(u64);

impl ConnId {
    /// The first; each next one with [`ConnId::next`].
    pub const FIRST: ConnId = ConnId(1);

    /// The id after this one.
    pub fn next(self) -> ConnId {
        ConnId(self.0 + 1)
    }

    /// Any id (tests).
    #[cfg(test)]
    pub fn for_tests(n: u64) -> ConnId {
        ConnId(n)
    }
}

/// What the workers and IKE hand the thread.
pub(crate) enum Out {
    /// Sealed ESP packets, each to the stream between its endpoints.
    Esp(Vec<(UdpEndpoints, Vec<u8>)>),
    /// An IKE message for the stream between `local` and `remote`: on
    /// connection `conn` (an answer to a message that came on it), or on
    /// the one that carries that pair's traffic.
    Ike {
        transport: Transport,
        local: SocketAddr,
        remote: SocketAddr,
        data: Vec<u8>,
        conn: Option<ConnId>,
    },
    /// IKE authenticated a message that came on this connection.
    Authenticated(ConnId),
}

/// The way to the stream thread, for workers and the control thread.
#[derive(Clone)]
pub struct StreamSink {
    tx: SyncSender<Out>,
    /// IKE's own queue: a burst of ESP never crowds out its messages,
    /// which nothing resends over TCP.
    ike_tx: SyncSender<Out>,
    wake: Arc<OwnedFd>,
    counters: Arc<StreamCounters>,
}

impl StreamSink {
    /// A worker's sealed ESP packets of one loop; `Err` with the batch's
    /// size if the thread's queue is full (the packets are dropped).
    pub fn esp(&self, batch: Vec<(UdpEndpoints, Vec<u8>)>) -> Result<(), usize> {
        let n = batch.len();
        match self.tx.try_send(Out::Esp(batch)) {
            Ok(()) => {
                sys::wake(self.wake.as_fd());
                Ok(())
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => Err(n),
        }
    }

    /// An IKE message to send over the stream between `local` and
    /// `remote` (opened first if it is ours to open).
    pub fn ike(&self, transport: Transport, local: SocketAddr, remote: SocketAddr, data: Vec<u8>) {
        self.to_ike_queue(Out::Ike {
            transport,
            local,
            remote,
            data,
            conn: None,
        });
    }

    /// An IKE message that answers one that came on connection `conn`:
    /// sent there, or nowhere if it closed.
    pub fn ike_on(
        &self,
        conn: ConnId,
        transport: Transport,
        local: SocketAddr,
        remote: SocketAddr,
        data: Vec<u8>,
    ) {
        self.to_ike_queue(Out::Ike {
            transport,
            local,
            remote,
            data,
            conn: Some(conn),
        });
    }

    /// IKE authenticated a message that came on connection `conn` (an
    /// established IKE SA's): it counts as established, and carries the
    /// traffic for its endpoints.
    pub fn authenticated(&self, conn: ConnId) {
        self.to_ike_queue(Out::Authenticated(conn));
    }

    fn to_ike_queue(&self, out: Out) {
        match self.ike_tx.try_send(out) {
            Ok(()) => sys::wake(self.wake.as_fd()),
            Err(TrySendError::Full(_)) => count(&self.counters.ike_queue_full, 1),
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// The thread's counters.
    pub fn counters(&self) -> &StreamCounters {
        &self.counters
    }
}

/// The thread's end of the queues.
pub(crate) struct StreamQueues {
    /// ESP from the workers.
    pub rx: Receiver<Out>,
    /// IKE's messages and notices.
    pub ike_rx: Receiver<Out>,
    /// Written when something is queued.
    pub wake: Arc<OwnedFd>,
    pub counters: Arc<StreamCounters>,
}

/// The queues to the stream thread; `wake` is written when something is
/// queued.
pub(crate) fn channel(wake: Arc<OwnedFd>) -> (StreamSink, StreamQueues) {
    let (tx, rx) = mpsc::sync_channel(QUEUE);
    let (ike_tx, ike_rx) = mpsc::sync_channel(QUEUE);
    let counters = Arc::new(StreamCounters::default());
    let sink = StreamSink {
        tx,
        ike_tx,
        wake: Arc::clone(&wake),
        counters: Arc::clone(&counters),
    };
    let queues = StreamQueues {
        rx,
        ike_rx,
        wake,
        counters,
    };
    (sink, queues)
}
