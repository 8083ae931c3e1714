//! The channels between the daemon's threads and the messages on them,
//! apart from both ends so that each end imports them and neither the
//! other: a worker's [`Mailbox`], IKE's queues ([`IkeSink`]) and the
//! stream thread's ([`StreamSink`]). None of them is ever waited on by a
//! worker: each is bounded, and what finds one full is dropped and
//! counted (the control plane alone waits, by a deadline).
//!
//! ```text
//! control plane ─► Mailbox: Apply, Report ──────────────┐
//! worker ────────► Mailbox: Packet, Seal, Open, Recycle ─┼─► worker
//! stream thread ─► Mailbox: Stream (ESP) ────────────────┘
//! worker 0 (UDP 4500), workers (acquires), stream thread ─► IkeSink ─► control thread
//! workers (ESP), control thread (IKE) ─► StreamSink ─► stream thread
//! ```

mod ike;
mod mailbox;
mod stream;

pub(crate) use ike::{channel as ike_channel, IkeIn, IkeQueues, MAX_MESSAGE};
pub use ike::{IkeQueueCounters, IkeSink};
pub use mailbox::{Delivery, Inbox, Mailbox, Msg};
pub(crate) use stream::{channel as stream_channel, Out, StreamQueues, QUEUE as STREAM_QUEUE};
pub use stream::{count, ConnId, StreamSink};
