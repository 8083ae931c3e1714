//! CPU use of this process and of the machine over an interval, from
//! /proc/self/stat and /proc/stat (netperf's -c/-C, in percent).

use serde::{Deserialize, Serialize};
use std::time::Instant;

/// CPU use over an interval, in percent: this process (of one CPU, so it
/// can pass 100 with threads) and the whole machine (of all CPUs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUse {
    pub process_pct: f64,
    pub system_pct: f64,
}

/// A reading to compare a later one with.
#[derive(Debug, Clone, Copy)]
pub struct CpuMark {
    at: Instant,
    process_ticks: u64,
    busy_ticks: u64,
    all_ticks: u64,
}

/// Clock ticks per second of /proc's counters (USER_HZ, 100 on Linux).
const HZ: f64 = 100.0;

impl CpuMark {
    pub fn now() -> CpuMark {
        let (busy_ticks, all_ticks) = system_ticks().unwrap_or((0, 0));
        CpuMark {
            at: Instant::now(),
            process_ticks: process_ticks().unwrap_or(0),
            busy_ticks,
            all_ticks,
        }
    }

    /// Use since this mark.
    pub fn since(&self) -> CpuUse {
        let later = CpuMark::now();
        let wall = later.at.duration_since(self.at).as_secs_f64();
        let process = later.process_ticks.saturating_sub(self.process_ticks) as f64 / HZ;
        let all = later.all_ticks.saturating_sub(self.all_ticks) as f64;
        let busy = later.busy_ticks.saturating_sub(self.busy_ticks) as f64;
        CpuUse {
            process_pct: if wall > 0.0 {
                100.0 * process / wall
            } else {
                0.0
            },
            system_pct: if all > 0.0 { 100.0 * busy / all } else { 0.0 },
        }
    }
}

/// utime + stime of this process (fields 14 and 15 of /proc/self/stat,
/// counted after the parenthesised command name, which may hold spaces).
fn process_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): utime is field 14, stime 15.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// (busy, all) ticks of the `cpu` line of /proc/stat; idle and iowait are
/// not busy.
fn system_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let all: u64 = v.iter().take(8).sum();
    let idle = v.get(3)? + v.get(4).unwrap_or(&0);
    Some((all - idle, all))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_loop_shows_up_as_this_process() {
        let mark = CpuMark::now();
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed().as_millis() < 300 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let used = mark.since();
        assert!(used.process_pct > 10.0, "{used:?}");
        assert!(
            used.system_pct > 0.0 && used.system_pct <= 100.0,
            "{used:?}"
        );
    }
}
