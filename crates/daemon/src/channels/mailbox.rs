//! A worker's mailbox: what the control plane, the other workers and the
//! stream thread send it ([`Msg`]), taken between two batches, and the
//! return channel of its pcrypt jobs. A worker never waits on it: a
//! handoff to a full mailbox is dropped (and counted by the sender).

use std::os::fd::{AsFd, OwnedFd};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use flowsec_ipsec::{PacketBuf, UdpEndpoints};

use crate::apply::WorkerChange;
use crate::pcrypt::{self, Done, OpenJob, SealJob};
use crate::stats::Report;
use crate::sys;

/// Messages a mailbox holds; a handoff to a full one is dropped (counted).
const MAILBOX: usize = 1024;

/// What a worker is sent.
pub enum Msg {
    /// Apply these changes, in order, at once, then say so (with the
    /// worker's index).
    Apply(Vec<WorkerChange>, mpsc::Sender<usize>),
    /// Send a [`Report`] back.
    Report(mpsc::Sender<Report>),
    /// An outbound packet read by worker `from` for SAs this one owns;
    /// `whole`: a datagram reassembled from fragments (fragmented again
    /// after sealing where it must be).
    Packet {
        buf: PacketBuf,
        from: usize,
        whole: bool,
    },
    /// A handoff buffer coming back to its worker, for reuse.
    Recycle(PacketBuf),
    /// Pcrypt: seal this packet for its SA's owner ([`crate::pcrypt`]).
    Seal { buf: PacketBuf, job: SealJob },
    /// Pcrypt: open this packet for its SA's owner.
    Open { buf: PacketBuf, job: OpenJob },
    /// ESP read from a TCP stream (RFC 9329) for SAs this worker owns
    /// (SPI mod workers), with the stream's ends.
    Stream(Vec<(UdpEndpoints, Vec<u8>)>),
}

/// The receiving ends of a worker's mailbox: messages, and the pcrypt
/// results of its jobs (a channel of their own that is never full, see
/// [`crate::pcrypt`]).
pub struct Inbox {
    pub msgs: Receiver<Msg>,
    pub done: Receiver<Done>,
}

/// What became of a message for a worker.
pub enum Delivery {
    /// In its mailbox.
    Sent,
    /// Its mailbox stayed full until the deadline: here it is back.
    Late(Msg),
    /// The worker is gone.
    Gone,
}

/// The way to reach one worker.
#[derive(Clone)]
pub struct Mailbox {
    tx: SyncSender<Msg>,
    done: SyncSender<Done>,
    wake: Arc<OwnedFd>,
}

impl Mailbox {
    /// A mailbox and the receiving end for the worker.
    pub fn new() -> std::io::Result<(Mailbox, Inbox, Arc<OwnedFd>)> {
        Mailbox::with_capacity(MAILBOX)
    }

    /// A mailbox that holds `capacity` messages.
    pub fn with_capacity(capacity: usize) -> std::io::Result<(Mailbox, Inbox, Arc<OwnedFd>)> {
        let (tx, msgs) = mpsc::sync_channel(capacity);
        let (done_tx, done) = mpsc::sync_channel(pcrypt::RETURNS);
        let wake = Arc::new(sys::eventfd()?);
        Ok((
            Mailbox {
                tx,
                done: done_tx,
                wake: Arc::clone(&wake),
            },
            Inbox { msgs, done },
            wake,
        ))
    }

    /// Deliver `msg` and wake the worker, waiting for room in the mailbox
    /// until `deadline` at most (the control plane only, which marks a
    /// worker that missed it late).
    pub fn send_by(&self, msg: Msg, deadline: Instant) -> Delivery {
        let mut msg = msg;
        loop {
            match self.tx.try_send(msg) {
                Ok(()) => {
                    self.wake();
                    return Delivery::Sent;
                }
                Err(TrySendError::Disconnected(_)) => return Delivery::Gone,
                Err(TrySendError::Full(back)) => {
                    self.wake();
                    if Instant::now() >= deadline {
                        return Delivery::Late(back);
                    }
                    msg = back;
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }

    /// Deliver `msg` if there is room, and wake the worker; false if the
    /// mailbox is full (never waits: the stream thread's packets).
    pub fn offer(&self, msg: Msg) -> bool {
        let sent = self.tx.try_send(msg).is_ok();
        self.wake();
        sent
    }

    /// Deliver `msg` if there is room, without waking the worker (a
    /// worker handing packets to another wakes it once, after its batch);
    /// the message back if the mailbox is full or the worker gone.
    // The message comes back by value, as `try_send` gives it: boxing it
    // would cost an allocation per refused handoff on the data path.
    #[allow(clippy::result_large_err)]
    pub fn hand(&self, msg: Msg) -> Result<(), Msg> {
        self.tx.try_send(msg).map_err(|e| match e {
            TrySendError::Full(back) | TrySendError::Disconnected(back) => back,
        })
    }

    /// Pcrypt: give a job done for this worker back, through its return
    /// channel (never full: see [`crate::pcrypt`]), without waking it;
    /// false only when the worker is gone.
    pub fn return_job(&self, done: Done) -> bool {
        self.done.try_send(done).is_ok()
    }

    /// Make the worker look at its mailbox.
    pub fn wake(&self) {
        sys::wake(self.wake.as_fd());
    }
}
