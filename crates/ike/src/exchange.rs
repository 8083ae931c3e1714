//! The exchange manager of one IKE SA (RFC 7296 §2.1–2.3): the only place
//! that touches message IDs, the request window, retransmission and the
//! replay of a cached response to a retransmitted request.
//!
//! The window is 1 in both directions (§2.3: the default without
//! SET_WINDOW_SIZE): one request of ours outstanding at a time, and the
//! peer's requests answered strictly in order.

use core::time::Duration;

use flowsec_wire::iana::ExchangeType;

/// Retransmission as strongSwan does it by default (strongswan.conf
/// `charon.retransmit_timeout` 4.0 s, `retransmit_base` 1.8,
/// `retransmit_tries` 5): sends at 0, 4, 11.2, 24.2, 47.5 and 89.5 s, and
/// gives up 165.5 s after the first send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retransmit {
    /// Wait before the first retransmission.
    pub timeout: Duration,
    /// Each wait is this many times the one before.
    pub base: f64,
    /// Retransmissions before the peer is declared dead.
    pub tries: u32,
}

impl Default for Retransmit {
    fn default() -> Self {
        Retransmit {
            timeout: Duration::from_secs(4),
            base: 1.8,
            tries: 5,
        }
    }
}

impl Retransmit {
    /// How long to wait after send number `n` (0 = the first send).
    pub fn wait(&self, n: u32) -> Duration {
        // Capped at a day: large settings must not overflow a Duration.
        let secs = self.timeout.as_secs_f64() * self.base.powi(n.min(64) as i32);
        Duration::try_from_secs_f64(secs.min(86_400.0)).unwrap_or(Duration::from_secs(86_400))
    }
}

/// A request of ours waiting for its response.
pub(crate) struct Outstanding<T> {
    /// Its message ID.
    pub mid: u32,
    /// Its exchange type (a response must be of the same).
    pub exchange: ExchangeType,
    /// The bytes as sent, for retransmission.
    pub data: Vec<u8>,
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

/// Message IDs and the outstanding request of one IKE SA.
pub(crate) struct Exchanges<T> {
    /// The ID of our next request.
    pub next_mid: u32,
    /// Our request in flight.
    pub pending: Option<Outstanding<T>>,
    /// The ID we expect on the peer's next request.
    pub peer_next: u32,
    /// Our response to the peer's last request, with its ID.
    pub last_response: Option<(u32, Vec<u8>)>,
    /// SHA-256 of the peer's last request (a retransmission is the same
    /// bytes; anything else with its ID is not answered).
    pub request_digest: Option<[u8; 32]>,
}

impl<T> Exchanges<T> {
    /// A fresh manager; the first request of either side is ID `first`.
    pub fn new(first: u32) -> Self {
        Exchanges {
            next_mid: first,
            pending: None,
            peer_next: first,
            last_response: None,
            request_digest: None,
        }
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
        data: Vec<u8>,
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
    pub fn responded(&mut self, mid: u32, data: Vec<u8>) {
        self.peer_next = mid.wrapping_add(1);
        self.last_response = Some((mid, data));
    }

    /// At `now`: `Some(bytes)` to retransmit, `Err(())` if the peer is
    /// past its last chance, `Ok(None)` if nothing is due.
    pub fn poll(&mut self, now: Duration, rt: &Retransmit) -> Result<Option<Vec<u8>>, ()> {
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

    /// When [`Exchanges::poll`] next has something to do.
    pub fn deadline(&self) -> Option<Duration> {
        self.pending.as_ref().map(|p| p.deadline)
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
        assert_eq!(x.sent(ExchangeType::INFORMATIONAL, vec![1], (), t0, &rt), 0);
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
        x.responded(1, vec![9]);
        assert_eq!(x.classify(1), RequestVerdict::Replay);
        assert_eq!(x.classify(0), RequestVerdict::Drop);
        assert_eq!(x.classify(2), RequestVerdict::Process);
        let rt = Retransmit::default();
        x.sent(ExchangeType::INFORMATIONAL, vec![], (), Duration::ZERO, &rt);
        assert!(x.answered(1, ExchangeType::CREATE_CHILD_SA).is_none());
        assert!(x.answered(2, ExchangeType::INFORMATIONAL).is_none());
        assert!(x.answered(1, ExchangeType::INFORMATIONAL).is_some());
        assert!(x.idle());
    }
}
