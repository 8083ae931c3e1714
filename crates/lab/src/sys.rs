//! The lab's system calls: the only `unsafe` in `flowsec-lab` (the crate
//! root denies it everywhere else). Each function is one direct libc call;
//! every `unsafe` block says why it is sound.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by [`on_signal`] when a caught signal arrives.
static CAUGHT: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    CAUGHT.store(true, Ordering::SeqCst);
}

/// Catch `signals`: instead of ending the process, each sets the flag
/// [`caught`] reads.
pub(crate) fn catch_signals(signals: &[libc::c_int]) {
    for &sig in signals {
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe.
        unsafe {
            libc::signal(
                sig,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

/// Whether a signal [`catch_signals`] asked for has arrived.
pub(crate) fn caught() -> bool {
    CAUGHT.load(Ordering::SeqCst)
}

/// kill(2): send `sig` to `pid`, which the caller knows to be its own
/// unreaped child (so the pid cannot have been reused).
pub(crate) fn kill(pid: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is an
    // unreaped child of the caller's.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// geteuid(2): the effective user id.
pub(crate) fn euid() -> libc::uid_t {
    // SAFETY: geteuid(2) has no preconditions.
    unsafe { libc::geteuid() }
}
