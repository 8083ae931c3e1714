//! The daemon's log: `tracing` events with a subsystem as their target,
//! a level per subsystem as strongSwan's `filelog` (`ike 2, cfg 1`), and
//! lines in strongSwan's shape: `[IKE] <gw|3> IKE_SA gw[3] established …`.
//!
//! ```text
//!  tracing::info!(target: "ike", sa = %tag, "…") ─► Targets filter (--log) ─► Shape ─► stderr or --log-file
//! ```
//!
//! Subsystems: `ike` (IKE SAs, exchanges), `chd` (Child SAs, traps),
//! `cfg` (configuration, start, reload, stop), `net` (sockets, TCP,
//! routes, the plaintext filter), `esp` (the data plane's SAs and
//! workers), `ctl` (control socket, metrics). Levels as strongSwan's:
//! -1 nothing, 0 failures and warnings, 1 what happens to SAs (the
//! default), 2 more detail, 3 and 4 everything (flowsec writes no keys
//! and no packets at any level, so 4 is 3). Nothing on the per-packet
//! path logs: the data plane counts.

use core::fmt;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;

/// The subsystems, as targets and in `--log`.
pub const SUBSYSTEMS: [&str; 6] = ["ike", "chd", "cfg", "net", "esp", "ctl"];

/// A level per subsystem (`--log ike=2,cfg=1`, or strongSwan's
/// `ike 2, cfg 1`; `default` or `any` sets every other one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Levels {
    default: i8,
    each: BTreeMap<&'static str, i8>,
}

impl Default for Levels {
    fn default() -> Self {
        Levels {
            default: 1,
            each: BTreeMap::new(),
        }
    }
}

/// Why `--log` was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelsError {
    item: String,
    why: &'static str,
}

impl fmt::Display for LevelsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.item, self.why)
    }
}

impl std::error::Error for LevelsError {}

impl core::str::FromStr for Levels {
    type Err = LevelsError;

    fn from_str(text: &str) -> Result<Levels, LevelsError> {
        let mut levels = Levels::default();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let bad = |why| LevelsError {
                item: item.to_string(),
                why,
            };
            let (name, level) = item
                .split_once(['=', ' '])
                .map(|(n, l)| (n.trim(), l.trim()))
                .ok_or_else(|| bad("expected SUBSYSTEM=LEVEL"))?;
            let level: i8 = level
                .parse()
                .ok()
                .filter(|l| (-1..=4).contains(l))
                .ok_or_else(|| bad("the level is a number from -1 to 4"))?;
            match name {
                "default" | "any" => levels.default = level,
                _ => {
                    let name = SUBSYSTEMS
                        .iter()
                        .find(|s| **s == name)
                        .ok_or_else(|| bad("subsystems: ike, chd, cfg, net, esp, ctl, default"))?;
                    levels.each.insert(name, level);
                }
            }
        }
        Ok(levels)
    }
}

impl Levels {
    /// The level of `subsystem`.
    pub fn of(&self, subsystem: &str) -> i8 {
        self.each.get(subsystem).copied().unwrap_or(self.default)
    }

    /// The `tracing` filter: -1 off, 0 warnings, 1 info, 2 debug, 3 and
    /// 4 trace.
    fn targets(&self) -> Targets {
        let filter = |level: i8| match level {
            i8::MIN..=-1 => LevelFilter::OFF,
            0 => LevelFilter::WARN,
            1 => LevelFilter::INFO,
            2 => LevelFilter::DEBUG,
            _ => LevelFilter::TRACE,
        };
        SUBSYSTEMS
            .iter()
            .fold(Targets::new().with_default(filter(self.default)), |t, s| {
                t.with_target(*s, filter(self.of(s)))
            })
    }
}

/// Where the lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sink {
    /// Standard error, each line begun with `flowsec: ` (journald adds
    /// the time).
    Stderr,
    /// A file, appended to, each line begun with the local time.
    File(PathBuf),
}

/// Install the log for this process: `levels` per subsystem, to `sink`.
/// Fails only if the file cannot be opened (named in the error).
pub fn init(levels: &Levels, sink: &Sink) -> Result<(), LogFileError> {
    let (writer, time): (Box<dyn Fn() -> Box<dyn Write> + Send + Sync>, bool) = match sink {
        Sink::Stderr => (Box::new(|| Box::new(std::io::stderr())), false),
        Sink::File(path) => {
            use std::os::unix::fs::OpenOptionsExt;
            // The daemon runs as root: its own file only (0600, not
            // through a symlink someone left there).
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(path)
                .map_err(|error| LogFileError {
                    path: path.clone(),
                    error,
                })?;
            let file = std::sync::Arc::new(Mutex::new(file));
            (
                Box::new(move || Box::new(Locked(std::sync::Arc::clone(&file)))),
                true,
            )
        }
    };
    let layer = tracing_subscriber::fmt::layer()
        .event_format(Shape { time })
        .with_writer(writer);
    let subscriber = tracing_subscriber::registry()
        .with(layer)
        .with(levels.targets());
    // Set once per process; a second call (tests) keeps the first.
    let _ = tracing::subscriber::set_global_default(subscriber);
    Ok(())
}

/// The log file could not be opened.
#[derive(Debug)]
pub struct LogFileError {
    path: PathBuf,
    error: std::io::Error,
}

impl fmt::Display for LogFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.error)
    }
}

impl std::error::Error for LogFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// The file, written a line at a time under its lock.
struct Locked(std::sync::Arc<Mutex<std::fs::File>>);

impl Write for Locked {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut f = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f.write_all(buf).map(|()| buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// strongSwan's line: `[IKE] <gw|3> message` (with `sa`), warnings and
/// errors said so.
struct Shape {
    time: bool,
}

impl<S, N> FormatEvent<S, N> for Shape
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let meta = event.metadata();
        write!(
            w,
            "{}",
            line(
                meta.target(),
                *meta.level(),
                &fields,
                self.time.then(crate::sys::local_time)
            )
        )
    }
}

/// One line, newline included.
fn line(target: &str, level: Level, fields: &Fields, time: Option<String>) -> String {
    let mut out = match time {
        Some(t) => format!("{t} "),
        None => "flowsec: ".to_string(),
    };
    out += &format!("[{}] ", target.to_uppercase());
    if let Some(sa) = &fields.sa {
        out += &format!("<{sa}> ");
    }
    match level {
        Level::ERROR => out += "error: ",
        Level::WARN => out += "warning: ",
        _ => {}
    }
    out += &fields.message;
    out.push('\n');
    out
}

/// The fields of an event this shape prints: its message and `sa`.
#[derive(Default)]
struct Fields {
    message: String,
    sa: Option<String>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "sa" => self.sa = Some(value.to_string()),
            "message" => self.message = value.to_string(),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            "sa" => self.sa = Some(format!("{value:?}")),
            "message" => self.message = format!("{value:?}"),
            _ => {}
        }
    }
}

/// An IKE event as its line: under its subsystem, a failure as a
/// warning, with its IKE SA's `<name|id>`.
pub(crate) fn ike_event(logged: &flowsec_ike::Logged) {
    use flowsec_ike::{Severity, Subsystem};
    let sa = logged.sa.as_ref().map(ToString::to_string);
    let sa = sa.as_deref();
    let e = &logged.event;
    match (e.subsystem(), e.severity()) {
        (Subsystem::Ike, Severity::Failure) => tracing::warn!(target: "ike", sa, "{e}"),
        (Subsystem::Ike, Severity::Lifecycle) => tracing::info!(target: "ike", sa, "{e}"),
        (Subsystem::Chd, Severity::Failure) => tracing::warn!(target: "chd", sa, "{e}"),
        (Subsystem::Chd, Severity::Lifecycle) => tracing::info!(target: "chd", sa, "{e}"),
        (Subsystem::Cfg, Severity::Failure) => tracing::warn!(target: "cfg", sa, "{e}"),
        (Subsystem::Cfg, Severity::Lifecycle) => tracing::info!(target: "cfg", sa, "{e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_both_spellings_and_refuse_the_rest() {
        let l: Levels = "ike=2, cfg 0,default=-1".parse().unwrap();
        assert_eq!((l.of("ike"), l.of("cfg"), l.of("net")), (2, 0, -1));
        assert_eq!(Levels::default().of("esp"), 1);
        for bad in ["ike", "ike=5", "ike=x", "knl=1"] {
            assert!(bad.parse::<Levels>().is_err(), "{bad}");
        }
    }

    #[test]
    fn lines_have_strongswans_shape() {
        let f = Fields {
            message: "IKE_SA gw[3] established".into(),
            sa: Some("gw|3".into()),
        };
        assert_eq!(
            line("ike", Level::INFO, &f, None),
            "flowsec: [IKE] <gw|3> IKE_SA gw[3] established\n"
        );
        let f = Fields {
            message: "UDP port 4500: in use".into(),
            sa: None,
        };
        assert_eq!(
            line("net", Level::WARN, &f, Some("Nov 27 17:40:05".into())),
            "Nov 27 17:40:05 [NET] warning: UDP port 4500: in use\n"
        );
    }

    /// Each subsystem at its own level, through a real subscriber.
    #[test]
    fn each_subsystem_is_filtered_at_its_level() {
        let path = std::env::temp_dir().join(format!("flowsec-log-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let levels: Levels = "ike=2,cfg=0,net=-1".parse().unwrap();
        init(&levels, &Sink::File(path.clone())).unwrap();
        tracing::debug!(target: "ike", sa = "gw|1", "ike detail");
        tracing::trace!(target: "ike", "ike too much");
        tracing::info!(target: "cfg", "cfg info");
        tracing::warn!(target: "cfg", "cfg warning");
        tracing::error!(target: "net", "net error");
        tracing::info!(target: "esp", "esp info");
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text
            .lines()
            .map(|l| l.split_once(' ').map_or(l, |x| x.1))
            .collect();
        let kept: Vec<&str> = lines
            .iter()
            .map(|l| l.trim_start_matches(|c: char| c != '['))
            .collect();
        assert_eq!(
            kept,
            [
                "[IKE] <gw|1> ike detail",
                "[CFG] warning: cfg warning",
                "[ESP] esp info"
            ],
            "{text}"
        );
        let _ = std::fs::remove_file(&path);
    }
}
