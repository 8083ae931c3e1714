//! A progress bar with an ETA on standard error: redrawn in place on a
//! terminal, one line per step otherwise (CI logs).

use std::io::{IsTerminal, Write};
use std::time::Instant;

/// Progress of one scenario through its steps.
pub struct Progress {
    scenario: &'static str,
    total: usize,
    done: usize,
    start: Instant,
    tty: bool,
}

impl Progress {
    pub fn new(scenario: &'static str, total: usize) -> Progress {
        Progress {
            scenario,
            total: total.max(1),
            done: 0,
            start: Instant::now(),
            tty: std::io::stderr().is_terminal(),
        }
    }

    /// Say that step `what` begins.
    pub fn step(&mut self, what: &str) {
        let line = self.line(what);
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
        self.done += 1;
    }

    fn line(&self, what: &str) -> String {
        const WIDTH: usize = 24;
        let filled = self.done * WIDTH / self.total;
        let elapsed = self.start.elapsed().as_secs_f64();
        let eta = if self.done == 0 {
            "ETA ?".to_string()
        } else {
            let left = elapsed / self.done as f64 * (self.total - self.done.min(self.total)) as f64;
            format!("ETA {}", clock(left))
        };
        format!(
            "{} [{}{}] {}/{} {} {what}",
            self.scenario,
            "#".repeat(filled),
            "-".repeat(WIDTH - filled),
            self.done + 1,
            self.total,
            eta
        )
    }

    /// End the bar (a newline after the last redraw).
    pub fn finish(&self) {
        if self.tty {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(
                err,
                "\r\x1b[2K{} done in {}",
                self.scenario,
                clock(self.start.elapsed().as_secs_f64())
            );
        }
    }
}

/// `1m05s`, `42s`.
fn clock(seconds: f64) -> String {
    let s = seconds.round() as u64;
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_fills_and_counts() {
        let mut p = Progress::new("s9", 4);
        p.tty = false;
        assert!(p
            .line("a")
            .starts_with("s9 [------------------------] 1/4 ETA ?"));
        p.done = 2;
        let l = p.line("b");
        assert!(
            l.starts_with("s9 [############------------] 3/4 ETA "),
            "{l}"
        );
        assert_eq!(clock(65.0), "1m05s");
        assert_eq!(clock(4.4), "4s");
    }
}
