//! Signals: SIGINT and SIGTERM end the daemon, SIGHUP reloads it; each
//! handler only sets a flag that a loop polls.

use std::sync::atomic::{AtomicBool, Ordering};

static SHUTDOWN: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    SHUTDOWN.store(true, Ordering::SeqCst);
}

static RELOAD: AtomicBool = AtomicBool::new(false);

extern "C" fn on_hangup(_: libc::c_int) {
    RELOAD.store(true, Ordering::SeqCst);
}

/// Route SIGHUP to a flag the control loop polls (and clears): read the
/// configuration again, as `flowsec ctl reload`.
pub fn catch_reload_signal() -> &'static AtomicBool {
    // SAFETY: the handler only stores to an atomic, which is
    // async-signal-safe.
    unsafe {
        libc::signal(
            libc::SIGHUP,
            on_hangup as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
    &RELOAD
}

/// Route SIGINT and SIGTERM to a flag the worker loop polls.
pub fn catch_shutdown_signals() -> &'static AtomicBool {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe.
        unsafe {
            libc::signal(
                sig,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
    &SHUTDOWN
}
