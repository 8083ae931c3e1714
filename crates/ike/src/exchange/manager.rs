//! The exchange manager of one IKE SA (RFC 7296 §2.1–2.3): the only place
//! that touches message IDs, the request window, retransmission, the
//! replay of a cached response to a retransmitted request, and collisions
//! (a request of the peer crossing ours, §2.8.1–2.8.2).
//!
//! The window is 1 in both directions (§2.3: the default without
//! SET_WINDOW_SIZE): one request of ours outstanding at a time, and the
//! peer's requests answered strictly in order.
//!
//! It holds the tasks, as strongSwan's task manager does: the active one
//! (`T`), which sent our request and waits for its response, and a
//! passive one (`P`), which waits for the peer's next request (the
//! responder's IKE_AUTH after its IKE_SA_INIT answer).

use core::time::Duration;

use flowsec_wire::iana::ExchangeType;

use crate::settings::Retransmit;

/// A retransmitted request of the peer is answered again at most once in
/// this long (our tuning): an honest initiator waits 4 s or more between
/// sends (strongSwan's `retransmit_timeout`), and a replayed request from
/// a forged source must not make us a reflector of our cached answer.
pub(crate) const RESEND_INTERVAL: Duration = Duration::from_secs(1);
/// ... and at most this many times per request (our tuning: above the
/// 5 retransmissions of strongSwan's `retransmit_tries`).
pub(crate) const RESEND_MAX: u8 = 8;

/// The datagrams of one message as sent: one, or its fragments (RFC 7383).
pub(crate) use crate::transport::Wire;

/// A request of ours waiting for its response.
pub(crate) struct Outstanding<T> {
    /// Its message ID.
    pub mid: u32,
    /// Its exchange type (a response must be of the same).
    pub exchange: ExchangeType,
    /// The datagrams as sent, for retransmission.
    pub data: Wire,
    /// Sends so far (1 after the first).
    pub sends: u32,
    /// When to retransmit, or give up.
    pub deadline: Duration,
    /// What the task waiting for the response needs to go on.
    pub task: T,
}

/// What to do with a request of the peer, by its message ID.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum RequestVerdict {
    /// The next one: process it.
    Process,
    /// The last one again: send the cached response.
    Replay,
    /// Anything else: drop it (§2.3).
    Drop,
}

/// A task in flight that a request of the peer may cross (§2.8.1: a
/// rekey of the same Child SA, §2.8.2: of the IKE SA).
pub(crate) trait Collide {
    /// What crossed it.
    type Collision;
    /// Take note of `c`, if it concerns this task; whether it did.
    fn collide(&mut self, c: Self::Collision) -> bool;
}

/// Message IDs, the outstanding request and the tasks of one IKE SA.
pub(crate) struct Exchanges<T, P = ()> {
    /// The ID of our next request.
    next_mid: u32,
    /// Our request in flight.
    pending: Option<Outstanding<T>>,
    /// The ID we expect on the peer's next request.
    peer_next: u32,
    /// Our response to the peer's last request, with its ID.
    last_response: Option<(u32, Wire)>,
    /// SHA-256 of the peer's last request (a retransmission is the same
    /// bytes; anything else with its ID is not answered).
    request_digest: Option<[u8; 32]>,
    /// Our last response sent again: how often, and when last; to the
    /// IKE SA's own peer address `[0]` and to any other `[1]` (a forged copy
    /// must not use up the peer's retransmissions).
    resent: [(u8, Option<Duration>); 2],
    /// The task that waits for the peer's next request, if one does.
    passive: Option<P>,
}

impl<T, P> Exchanges<T, P> {
    /// A fresh manager; the first request of either side is ID `first`.
    pub fn new(first: u32) -> Self {
        Exchanges {
            next_mid: first,
            pending: None,
            peer_next: first,
            last_response: None,
            request_digest: None,
            resent: [(0, None); 2],
            passive: None,
        }
    }

    /// Our IKE_SA_INIT again (after a COOKIE or INVALID_KE_PAYLOAD,
    /// §2.6, §1.2): ID 0 again, and a fresh retransmission schedule.
    pub fn restart(
        &mut self,
        exchange: ExchangeType,
        data: Wire,
        task: T,
        now: Duration,
        rt: &Retransmit,
    ) {
        *self = Exchanges::new(0);
        self.sent(exchange, data, task, now, rt);
    }

    /// The task waiting for the response to our request, if one is.
    pub fn task(&self) -> Option<&T> {
        self.pending.as_ref().map(|p| &p.task)
    }

    /// The task of our request `mid`/`exchange`, if that is the one in
    /// flight (it stays there).
    pub fn waiting(&self, mid: u32, exchange: ExchangeType) -> Option<&T> {
        self.pending
            .as_ref()
            .filter(|p| p.mid == mid && p.exchange == exchange)
            .map(|p| &p.task)
    }

    /// Give up our request in flight, if any: its task.
    pub fn take_task(&mut self) -> Option<T> {
        self.pending.take().map(|p| p.task)
    }

    /// Let `task` wait for the peer's next request.
    pub fn await_request(&mut self, task: P) {
        self.passive = Some(task);
    }

    /// The task waiting for the peer's next request, if one is.
    pub fn passive(&self) -> Option<&P> {
        self.passive.as_ref()
    }

    /// Take the task waiting for the peer's next request (it is here).
    pub fn take_passive(&mut self) -> Option<P> {
        self.passive.take()
    }

    /// The peer's request with this SHA-256 is processed: a
    /// retransmission of it gets the same answer.
    pub fn processing(&mut self, digest: [u8; 32]) {
        self.request_digest = Some(digest);
    }

    /// Our response to the peer's last request, if a request with
    /// `digest` is that request again.
    pub fn cached_response(&self, digest: &[u8; 32]) -> Option<&[Vec<u8>]> {
        match &self.last_response {
            Some((_, last)) if self.request_digest.as_ref() == Some(digest) => Some(last),
            _ => None,
        }
    }

    /// Whether our last answer may go out again at `now` for a
    /// retransmission of the request it answered, to the SA's own peer
    /// (`to_peer`) or elsewhere: at most [`RESEND_MAX`] times,
    /// [`RESEND_INTERVAL`] apart, each on its own count. Counts the send
    /// if so.
    pub fn may_resend(&mut self, now: Duration, to_peer: bool) -> bool {
        let slot = &mut self.resent[usize::from(!to_peer)];
        let (count, last) = *slot;
        let due = last.is_none_or(|t| now >= t + RESEND_INTERVAL);
        if count >= RESEND_MAX || !due {
            return false;
        }
        *slot = (count + 1, Some(now));
        true
    }

    /// Whether a new request may be sent now.
    pub fn idle(&self) -> bool {
        self.pending.is_none()
    }

    /// Record that request `data` went out with the next ID, and return
    /// that ID.
    pub fn sent(
        &mut self,
        exchange: ExchangeType,
        data: Wire,
        task: T,
        now: Duration,
        rt: &Retransmit,
    ) -> u32 {
        let mid = self.next_mid;
        self.next_mid = self.next_mid.wrapping_add(1);
        self.pending = Some(Outstanding {
            mid,
            exchange,
            data,
            sends: 1,
            deadline: now + rt.wait(0),
            task,
        });
        mid
    }

    /// The ID the next request will carry.
    pub fn peek_mid(&self) -> u32 {
        self.next_mid
    }

    /// Take the outstanding request if `mid`/`exchange` answer it.
    pub fn answered(&mut self, mid: u32, exchange: ExchangeType) -> Option<Outstanding<T>> {
        match &self.pending {
            Some(p) if p.mid == mid && p.exchange == exchange => self.pending.take(),
            _ => None,
        }
    }

    /// How to treat a request of the peer with ID `mid`.
    pub fn classify(&self, mid: u32) -> RequestVerdict {
        if mid == self.peer_next {
            RequestVerdict::Process
        } else if self
            .last_response
            .as_ref()
            .is_some_and(|(last, _)| *last == mid)
        {
            RequestVerdict::Replay
        } else {
            RequestVerdict::Drop
        }
    }

    /// Record our response to request `mid`.
    pub fn responded(&mut self, mid: u32, data: Wire) {
        self.peer_next = mid.wrapping_add(1);
        self.last_response = Some((mid, data));
        self.resent = [(0, None); 2];
    }

    /// At `now`: `Some(bytes)` to retransmit, `Err(())` if the peer is
    /// past its last chance, `Ok(None)` if nothing is due.
    pub fn poll(&mut self, now: Duration, rt: &Retransmit) -> Result<Option<Wire>, ()> {
        let Some(p) = &mut self.pending else {
            return Ok(None);
        };
        if now < p.deadline {
            return Ok(None);
        }
        if p.sends > rt.tries {
            return Err(());
        }
        p.deadline = now + rt.wait(p.sends);
        p.sends += 1;
        Ok(Some(p.data.clone()))
    }

    /// Our request in flight, as sent.
    pub fn outstanding(&self) -> Option<&[Vec<u8>]> {
        self.pending.as_ref().map(|p| p.data.as_slice())
    }

    /// When [`Exchanges::poll`] next has something to do.
    pub fn deadline(&self) -> Option<Duration> {
        self.pending.as_ref().map(|p| p.deadline)
    }
}

impl<T: Collide, P> Exchanges<T, P> {
    /// A request of the peer crossed ours (we answered it while ours is in
    /// flight): the task in flight takes note, if it concerns it; whether
    /// it did.
    pub fn collided(&mut self, c: T::Collision) -> bool {
        self.pending.as_mut().is_some_and(|p| p.task.collide(c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strongswan_back_off() {
        let rt = Retransmit::default();
        let mut x: Exchanges<()> = Exchanges::new(0);
        let t0 = Duration::ZERO;
        assert_eq!(
            x.sent(ExchangeType::INFORMATIONAL, vec![vec![1]], (), t0, &rt),
            0
        );
        let mut sends = vec![0.0];
        let mut now;
        loop {
            now = x.deadline().unwrap();
            match x.poll(now, &rt) {
                Ok(Some(_)) => sends.push(now.as_secs_f64()),
                Ok(None) => unreachable!(),
                Err(()) => break,
            }
        }
        let want = [0.0, 4.0, 11.2, 24.16, 47.488, 89.4784];
        assert_eq!(sends.len(), want.len());
        for (a, b) in sends.iter().zip(want) {
            assert!((a - b).abs() < 1e-6, "{sends:?}");
        }
        assert!((now.as_secs_f64() - 165.0611).abs() < 1e-3, "{now:?}");
    }

    #[test]
    fn requests_in_order_last_one_replayed() {
        let mut x: Exchanges<()> = Exchanges::new(1);
        assert_eq!(x.classify(1), RequestVerdict::Process);
        assert_eq!(x.classify(2), RequestVerdict::Drop);
        x.responded(1, vec![vec![9]]);
        assert_eq!(x.classify(1), RequestVerdict::Replay);
        assert_eq!(x.classify(0), RequestVerdict::Drop);
        assert_eq!(x.classify(2), RequestVerdict::Process);
        let rt = Retransmit::default();
        x.sent(
            ExchangeType::INFORMATIONAL,
            vec![vec![]],
            (),
            Duration::ZERO,
            &rt,
        );
        assert!(x.answered(1, ExchangeType::CREATE_CHILD_SA).is_none());
        assert!(x.answered(2, ExchangeType::INFORMATIONAL).is_none());
        assert!(x.answered(1, ExchangeType::INFORMATIONAL).is_some());
        assert!(x.idle());
    }

    #[test]
    fn a_cached_answer_goes_again_at_most_once_a_second_and_eight_times() {
        let mut x: Exchanges<()> = Exchanges::new(1);
        x.responded(1, vec![vec![9]]);
        let s = Duration::from_secs;
        assert!(x.may_resend(s(10), false));
        assert!(
            !x.may_resend(s(10), false),
            "a burst of copies gets one answer"
        );
        assert!(!x.may_resend(Duration::from_millis(10_999), false));
        let sent = (1..=20).filter(|i| x.may_resend(s(10 + i), false)).count();
        assert_eq!(sent, usize::from(RESEND_MAX) - 1);
        // Forged copies from elsewhere did not use up the peer's.
        assert!(x.may_resend(s(40), true));
        // The next request's answer starts afresh.
        x.responded(2, vec![vec![8]]);
        assert!(x.may_resend(s(40), false));
    }
}
