//! Starting and stopping the worker threads.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use super::setup::WorkerParts;
use super::Options;
use super::RunError;
use crate::channels::Mailbox;
use crate::datapath::Datapath;
use crate::stats::Stats;
use crate::worker::{Worker, WorkerError};

/// What every worker thread is started with.
pub(super) struct Spawn<'a> {
    pub(super) opts: &'a Options,
    pub(super) boxes: &'a [Mailbox],
    pub(super) stop: &'a Arc<AtomicBool>,
    pub(super) spd_epoch: &'a Arc<AtomicU64>,
    pub(super) ike: Option<crate::channels::IkeSink>,
    pub(super) stream: Option<crate::channels::StreamSink>,
    pub(super) start: Instant,
}

pub(super) type WorkerHandle = JoinHandle<Result<Stats, WorkerError>>;

impl Spawn<'_> {
    /// Start a thread per worker; if one cannot start, stop those started.
    pub(super) fn workers(&self, parts: Vec<WorkerParts>) -> Result<Vec<WorkerHandle>, RunError> {
        let workers = parts.len();
        let mut handles = Vec::new();
        for (index, (io, db, rx, wake)) in parts.into_iter().enumerate() {
            let w = Worker {
                spd_epoch: Arc::clone(self.spd_epoch),
                ike: self.ike.clone(),
                stream: self.stream.clone(),
                index,
                workers,
                io,
                dp: Datapath::new(index, workers, db).with_parallel(self.opts.parallel),
                rx,
                wake,
                peers: self.boxes.to_vec(),
                mtu: usize::from(self.opts.mtu),
                stop: Arc::clone(self.stop),
                start: self.start,
            };
            let spawned = std::thread::Builder::new()
                .name(format!("flowsec-w{index}"))
                .spawn(move || w.run());
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    stop_all(self.stop, self.boxes, handles);
                    return Err(RunError::Spawn { index, error: e });
                }
            }
        }
        Ok(handles)
    }
}

/// Stop every worker and collect what each returned.
pub(super) fn stop_all(
    stop: &AtomicBool,
    boxes: &[Mailbox],
    handles: Vec<WorkerHandle>,
) -> Vec<Result<Stats, WorkerError>> {
    stop.store(true, Ordering::SeqCst);
    for b in boxes {
        b.wake();
    }
    handles
        .into_iter()
        .map(|h| h.join().unwrap_or(Err(WorkerError::Panicked)))
        .collect()
}
