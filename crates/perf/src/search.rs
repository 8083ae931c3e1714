//! Tests made of tests: `MAXRATE` (the highest loss-free CBR rate, study
//! S2's E2a) and `PING` (RTT samples at a list of payload sizes, E2b).

use serde::{Deserialize, Serialize};

use crate::spec::{Spec, Test};
use crate::{PerfError, Thread};

/// The highest rate a search may probe (1 Tbit/s): doubling and sums stay
/// far from overflowing a u64.
pub const MAX_BPS: u64 = 1_000_000_000_000;

/// One CBR probe of a MAXRATE search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub rate_bps: u64,
    pub packets_sent: u64,
    pub lost: u64,
    /// The sender could not send at the rate asked (counted not clean: a
    /// rate never reached is not a loss-free one).
    pub sender_limited: bool,
    /// How far a queue on the path grew (the receiver's `max_queue_ms`).
    #[serde(default)]
    pub queue_ms: f64,
    /// The queue grew by more than a tenth of the hold time: the path does
    /// not keep up with the rate, though it may deliver every packet late
    /// (counted not clean).
    #[serde(default)]
    pub queued: bool,
    /// Whether the probe counted as loss-free at its rate.
    pub clean: bool,
}

/// What MAXRATE found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MaxRate {
    pub test: String,
    /// The highest rate whose probe was loss-free (0 if none was).
    pub max_rate_bps: u64,
    pub payload: usize,
    pub hold_s: f64,
    pub step_bps: u64,
    /// Every probe, in the order run.
    pub probes: Vec<Probe>,
}

/// What a CBR probe's receiver saw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Delivery {
    pub sent: u64,
    pub received: u64,
    /// The receiver's `max_queue_ms`.
    pub queue_ms: f64,
}

/// The queueing a probe of `hold_s` seconds may show and still count:
/// a tenth of the hold (a path at 1.1× its capacity builds that much),
/// plus 20 ms of scheduling noise on a shared machine.
fn queue_allowed_ms(hold_s: f64) -> f64 {
    100.0 * hold_s + 20.0
}

/// The highest CBR rate (bit/s of payload, `base.msg_size`-byte datagrams,
/// each probe held `base.seconds`, a failing one tried twice) that the
/// sender reached (95% of it at
/// least) with a loss fraction at most `tolerance` and without a queue
/// growing on the path (RFC 2544 §26.1 counts frames that arrive over 2 s
/// after the trial as lost; a growing queue is the same failure seen
/// early), to within `step_bps`: doubling from `step_bps` until a
/// probe loses packets or `max_bps` is reached, then bisecting. `run` runs
/// one CBR probe (the server round trip; a parameter so the search itself
/// can be tested).
pub fn max_rate(
    base: &Spec,
    step_bps: u64,
    max_bps: u64,
    tolerance: f64,
    run: impl FnMut(&Spec) -> Result<Delivery, PerfError>,
) -> Result<MaxRate, PerfError> {
    if step_bps == 0 || max_bps < step_bps || max_bps > MAX_BPS {
        return Err(PerfError::MaxRateBounds);
    }
    let mut prober = Prober {
        base,
        tolerance,
        run,
        probes: Vec::new(),
    };
    let (good, bad) = prober.grow(step_bps, max_bps)?;
    let good = prober.bisect(good, bad, step_bps)?;
    Ok(MaxRate {
        test: "MAXRATE".into(),
        max_rate_bps: good,
        payload: base.msg_size,
        hold_s: base.seconds,
        step_bps,
        probes: prober.probes,
    })
}

/// MAXRATE's probes at the rates its search asks for, each recorded.
struct Prober<'a, F> {
    base: &'a Spec,
    tolerance: f64,
    /// One CBR probe: the server round trip.
    run: F,
    probes: Vec<Probe>,
}

impl<F: FnMut(&Spec) -> Result<Delivery, PerfError>> Prober<'_, F> {
    /// Doubling from `step_bps` until a probe fails or `max_bps` is
    /// reached: (`good`, which passed, 0 if none did; `bad`, which failed,
    /// or one step past `max_bps` if it passed).
    fn grow(&mut self, step_bps: u64, max_bps: u64) -> Result<(u64, u64), PerfError> {
        let (mut good, mut bad) = (0u64, None);
        let mut rate = step_bps;
        while rate <= max_bps {
            if self.passes(rate)? {
                good = rate;
                rate = rate.saturating_mul(2);
            } else {
                bad = Some(rate);
                break;
            }
        }
        let bad = match bad {
            Some(b) => b,
            None if good == max_bps => max_bps + step_bps,
            None => {
                // max itself was never probed.
                if self.passes(max_bps)? {
                    good = max_bps;
                    max_bps + step_bps
                } else {
                    max_bps
                }
            }
        };
        Ok((good, bad))
    }

    /// Bisecting between `good` and `bad` on the step grid, to within
    /// `step_bps`: the highest rate that passed.
    fn bisect(&mut self, mut good: u64, mut bad: u64, step_bps: u64) -> Result<u64, PerfError> {
        while bad - good > step_bps {
            // Midpoint, on the step grid.
            let mid = good + ((bad - good) / 2 / step_bps).max(1) * step_bps;
            if mid >= bad {
                break;
            }
            if self.passes(mid)? {
                good = mid;
            } else {
                bad = mid;
            }
        }
        Ok(good)
    }

    /// Whether `rate` is loss-free. A rate fails only if two probes in a
    /// row fail at it: on a shared machine one probe can lose a packet to
    /// a scheduling hiccup, and a single one would end the search far too
    /// low.
    fn passes(&mut self, rate: u64) -> Result<bool, PerfError> {
        let spec = Spec {
            test: Test::Cbr,
            rate_bps: Some(rate),
            ..self.base.clone()
        };
        for _ in 0..2 {
            let d = (self.run)(&spec)?;
            let probe = Probe::judge(&spec, rate, &d, self.tolerance);
            let clean = probe.clean;
            self.probes.push(probe);
            if clean {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl Probe {
    /// The probe of `spec` at `rate` that delivered `d`: clean if the
    /// sender reached 95% of the rate, no queue grew, and at most
    /// `tolerance` of the packets were lost.
    fn judge(spec: &Spec, rate: u64, d: &Delivery, tolerance: f64) -> Probe {
        let (sent, lost) = (d.sent, d.sent.saturating_sub(d.received));
        let achieved = sent as f64 * spec.msg_size as f64 * 8.0 / spec.seconds;
        let sender_limited = achieved < 0.95 * rate as f64;
        let queued = d.queue_ms > queue_allowed_ms(spec.seconds);
        let clean =
            sent > 0 && !sender_limited && !queued && (lost as f64) <= tolerance * sent as f64;
        Probe {
            rate_bps: rate,
            packets_sent: sent,
            lost,
            sender_limited,
            queue_ms: d.queue_ms,
            queued,
            clean,
        }
    }
}

/// RTT at one payload size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingRow {
    pub payload: usize,
    pub sent: u64,
    pub received: u64,
    pub min_ms: f64,
    pub avg_ms: f64,
    pub max_ms: f64,
    /// ping's mdev: the standard deviation.
    pub mdev_ms: f64,
    /// The background load asked for, bit/s (0: none).
    #[serde(default)]
    pub load_bps: u64,
}

/// Payload of the background load's datagrams (study S2's iperf size).
const LOAD_PAYLOAD: usize = 1300;

/// `count` echoes (UDP, to the server's UDP_RR) per payload size, one per
/// `interval_s`, like `ping -c COUNT -i INTERVAL -s SIZE`; with `load`, a
/// CBR stream of that many bit/s runs to the same server meanwhile.
pub fn ping(
    host: &str,
    port: u16,
    sizes: &[usize],
    count: u64,
    interval_s: f64,
    load: Option<u64>,
) -> Result<Vec<PingRow>, PerfError> {
    let Some(bps) = load else {
        return echoes(host, port, sizes, count, interval_s, 0);
    };
    let spec = Spec {
        msg_size: LOAD_PAYLOAD,
        rate_bps: Some(bps),
        // As long as the echoes take (each size's last echo may wait for
        // its answer a little longer, unloaded).
        seconds: (sizes.len() as f64 * count as f64 * interval_s).clamp(0.1, 3600.0),
        ..Spec::new(Test::Cbr)
    };
    spec.check()?;
    std::thread::scope(|s| {
        let loader = s.spawn(|| crate::run(host, port, &spec));
        let rows = echoes(host, port, sizes, count, interval_s, bps);
        let loaded = loader
            .join()
            .map_err(|_| PerfError::Panicked(Thread::Load))?;
        loaded.map_err(|e| PerfError::BackgroundLoad(Box::new(e)))?;
        rows
    })
}

fn echoes(
    host: &str,
    port: u16,
    sizes: &[usize],
    count: u64,
    interval_s: f64,
    load_bps: u64,
) -> Result<Vec<PingRow>, PerfError> {
    let mut rows = Vec::new();
    for &size in sizes {
        let spec = Spec {
            req_size: size,
            rsp_size: size,
            count: Some(count),
            interval_s: Some(interval_s),
            // Room for every echo and the last one's timeout.
            seconds: count as f64 * interval_s + 1.0,
            ..Spec::new(Test::UdpRr)
        };
        let o = crate::run(host, port, &spec)?;
        rows.push(PingRow {
            payload: size,
            sent: o.packets_sent,
            received: o.transactions,
            min_ms: o.latency_min_us / 1e3,
            avg_ms: o.latency_mean_us / 1e3,
            max_ms: o.latency_max_us / 1e3,
            mdev_ms: o.latency_stddev_us / 1e3,
            load_bps,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path that loses 1% above `limit` bit/s; the sender keeps up
    /// with every rate.
    fn path(limit: u64) -> impl FnMut(&Spec) -> Result<Delivery, PerfError> {
        move |s: &Spec| {
            let rate = s.rate_bps.unwrap();
            let sent = (rate as f64 * s.seconds / (s.msg_size as f64 * 8.0)).ceil() as u64;
            Ok(if rate <= limit {
                delivered(sent, sent)
            } else {
                delivered(sent, sent - sent / 100)
            })
        }
    }

    fn delivered(sent: u64, received: u64) -> Delivery {
        Delivery {
            sent,
            received,
            queue_ms: 1.0,
        }
    }

    #[test]
    fn the_search_finds_the_limit_to_the_step() {
        let base = Spec::new(Test::Cbr);
        for limit in [1_000_000, 37_000_000, 93_000_000, 499_000_000] {
            let r = max_rate(&base, 1_000_000, 1_000_000_000, 0.0, path(limit)).unwrap();
            assert_eq!(r.max_rate_bps, limit, "{r:?}");
            // Doubling then bisecting: a few dozen probes, not hundreds.
            assert!(r.probes.len() < 25, "{}", r.probes.len());
        }
        // Nothing passes; everything passes (capped at max).
        assert_eq!(
            max_rate(&base, 1_000_000, 8_000_000, 0.0, path(0))
                .unwrap()
                .max_rate_bps,
            0
        );
        assert_eq!(
            max_rate(&base, 1_000_000, 10_000_000, 0.0, path(u64::MAX))
                .unwrap()
                .max_rate_bps,
            10_000_000
        );
        // A tolerance of 1% lets the 1%-lossy probes pass.
        assert_eq!(
            max_rate(&base, 1_000_000, 16_000_000, 0.01, path(0))
                .unwrap()
                .max_rate_bps,
            16_000_000
        );
        assert!(max_rate(&base, 0, 1, 0.0, path(0)).is_err());
        // A sender that cannot pass 30 Mbit/s: no rate above it counts,
        // however little is lost.
        let slow = |s: &Spec| {
            let rate = s.rate_bps.unwrap().min(30_000_000);
            let sent = (rate as f64 * s.seconds / (s.msg_size as f64 * 8.0)) as u64;
            Ok(delivered(sent, sent))
        };
        let r = max_rate(&base, 1_000_000, 1_000_000_000, 0.0, slow).unwrap();
        // 31 Mbit/s asked, 30 sent: within the 5% allowed; 32 is not.
        assert_eq!(r.max_rate_bps, 31_000_000, "{r:?}");
        assert!(r.probes.iter().any(|p| p.sender_limited));
        // One lossy probe (a hiccup) at 64 Mbit/s: retried, and the search
        // goes on to the real limit.
        let mut first = true;
        let flaky = |s: &Spec| {
            let rate = s.rate_bps.unwrap();
            let sent = (rate as f64 * s.seconds / (s.msg_size as f64 * 8.0)) as u64;
            if rate == 64_000_000 && std::mem::take(&mut first) {
                return Ok(delivered(sent, sent - 1));
            }
            Ok(if rate <= 100_000_000 {
                delivered(sent, sent)
            } else {
                delivered(sent, 0)
            })
        };
        let r = max_rate(&base, 1_000_000, 1_000_000_000, 0.0, flaky).unwrap();
        assert_eq!(r.max_rate_bps, 100_000_000, "{r:?}");
        // A deep queue: every packet arrives, but above 50 Mbit/s ever
        // later (the queue grows by the excess over the hold time).
        let deep = |s: &Spec| {
            let rate = s.rate_bps.unwrap();
            let sent = (rate as f64 * s.seconds / (s.msg_size as f64 * 8.0)) as u64;
            let excess = (rate as f64 / 50e6 - 1.0).max(0.0);
            Ok(Delivery {
                sent,
                received: sent,
                queue_ms: excess * s.seconds * 1e3,
            })
        };
        let r = max_rate(&base, 1_000_000, 1_000_000_000, 0.0, deep).unwrap();
        // Up to 10% over (and the 20 ms of noise) passes.
        assert!((55e6..58e6).contains(&(r.max_rate_bps as f64)), "{r:?}");
        assert!(r.probes.iter().any(|p| p.queued && p.lost == 0));
        assert!(max_rate(&base, 1, u64::MAX, 0.0, path(0)).is_err());
    }
}
