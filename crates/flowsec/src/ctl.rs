//! `flowsec ctl`: ask a running `flowsec up` about its SAs, policies and
//! counters over its control socket; text like `swanctl --list-sas`, or
//! `--json`.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};
use serde_json::Value;

use crate::CliError;

/// Arguments of `flowsec ctl`.
#[derive(Args, Debug)]
pub struct CtlArgs {
    /// What to show.
    pub what: What,
    /// The daemon's control socket.
    #[arg(long, env = "FLOWSEC_SOCKET", default_value = flowsec_daemon::DEFAULT_SOCKET)]
    pub socket: PathBuf,
    /// Print the daemon's JSON answer as it is.
    #[arg(long)]
    pub json: bool,
}

/// The questions `flowsec ctl` can ask.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum What {
    /// Daemon overview.
    Status,
    /// Security associations with their counters.
    Sas,
    /// Security policies.
    Policies,
    /// Counters per worker and per drop reason.
    Stats,
}

pub fn run(args: &CtlArgs) -> Result<(), CliError> {
    let cmd = match args.what {
        What::Status => "status",
        What::Sas => "sas",
        What::Policies => "policies",
        What::Stats => "stats",
    };
    let reply = request(&args.socket, &serde_json::json!({ "cmd": cmd }))?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&reply).unwrap_or_default()
        );
        return Ok(());
    }
    match args.what {
        What::Status => print_object(&reply),
        What::Sas => print_sas(&reply),
        What::Policies => {
            for p in reply.as_array().into_iter().flatten() {
                println!("{}", p["setkey"].as_str().unwrap_or_default());
            }
        }
        What::Stats => print_stats(&reply),
    }
    Ok(())
}

/// Send one request to the daemon at `socket` and read its answer; an
/// answer with an "error" becomes the error.
pub fn request(socket: &Path, request: &Value) -> Result<Value, CliError> {
    let path = socket.display();
    let stream = UnixStream::connect(socket).map_err(|e| {
        CliError::Runtime(format!("{path}: {e} (is `flowsec up` running? --socket)"))
    })?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    (&stream)
        .write_all(format!("{request}\n").as_bytes())
        .map_err(|e| CliError::Runtime(format!("{path}: {e}")))?;
    let mut line = String::new();
    BufReader::new(&stream)
        .read_line(&mut line)
        .map_err(|e| CliError::Runtime(format!("{path}: {e}")))?;
    let reply: Value = serde_json::from_str(&line)
        .map_err(|e| CliError::Runtime(format!("{path}: bad answer: {e}")))?;
    match reply.get("error").and_then(Value::as_str) {
        Some(err) => Err(CliError::Runtime(err.to_string())),
        None => Ok(reply),
    }
}

fn print_object(v: &Value) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                match v {
                    Value::Array(items) => {
                        for (i, item) in items.iter().enumerate() {
                            println!("{k}[{i}]:");
                            if let Value::Object(m) = item {
                                for (k2, v2) in m {
                                    println!("  {k2}: {v2}");
                                }
                            }
                        }
                    }
                    _ => println!("{k}: {v}"),
                }
            }
        }
        other => println!("{other}"),
    }
}

/// One line per worker and one for the total: counters that are not zero,
/// then drops by reason.
fn print_stats(v: &Value) {
    let line = |label: String, c: &Value| {
        let mut parts = Vec::new();
        for (k, n) in c.as_object().into_iter().flatten() {
            match n {
                Value::Object(drops) => {
                    for (reason, n) in drops {
                        parts.push(format!("{reason}={n}"));
                    }
                }
                n if n.as_u64() != Some(0) || k == "sent" || k == "delivered" => {
                    parts.push(format!("{k}={n}"))
                }
                _ => {}
            }
        }
        println!("{label}: {}", parts.join(" "));
    };
    for (k, w) in v["workers"].as_array().into_iter().flatten().enumerate() {
        line(format!("worker {k}"), w);
    }
    line("total".into(), &v["total"]);
}

/// Like `swanctl --list-sas`: one line for the SA, one for its traffic.
fn print_sas(v: &Value) {
    for sa in v.as_array().into_iter().flatten() {
        let s = |k: &str| sa[k].as_str().unwrap_or("?").to_string();
        let n = |k: &str| sa[k].as_u64().unwrap_or(0);
        let encap = if sa["encap"].is_null() {
            String::new()
        } else {
            ", UDP-encapsulated".to_string()
        };
        let algs = if s("integ") == "NONE" {
            s("encr")
        } else {
            format!("{}/{}", s("encr"), s("integ"))
        };
        println!(
            "{} SPI {} {} {} -> {} {}, {}{}, reqid {}",
            s("protocol"),
            s("spi"),
            s("mode"),
            s("src"),
            s("dst"),
            s("state").to_uppercase(),
            algs,
            encap,
            n("reqid")
        );
        println!(
            "  {} bytes, {} packets, seq {}, {}s ago added; replay window {}: {} replay drops, {} auth failures, {} other drops",
            n("bytes"),
            n("packets"),
            n("seq"),
            n("age_s"),
            n("replay_window"),
            n("replay_drops"),
            n("auth_failures"),
            n("other_drops")
        );
    }
}
