//! `flowsec setkey`: manual keying in KAME/ipsec-tools syntax.
//!
//! Today only `-n` (check a file, apply nothing) works: applying commands
//! to a running daemon is not there yet (`flowsec up --setkey` loads a file
//! at start). `-n` prints what the file would install, in
//! `setkey -D`/`-DP` form without keys, and the RFC 8221 warnings.

use std::io::Read;

use clap::Args;
use flowsec_setkey::{format_policy, format_sa, Command};

use crate::CliError;

/// Arguments of `flowsec setkey`, named as setkey(8) names them.
#[derive(Args, Debug)]
pub struct SetkeyArgs {
    /// Read commands from FILE.
    #[arg(short = 'f', value_name = "FILE")]
    pub file: Option<String>,
    /// Read commands from standard input.
    #[arg(short = 'c')]
    pub stdin: bool,
    /// Check the input, apply nothing (setkey -n).
    #[arg(short = 'n')]
    pub check_only: bool,
    /// Dump the SAD (with -P: the SPD).
    #[arg(short = 'D')]
    pub dump: bool,
    /// Flush the SAD (with -P: the SPD).
    #[arg(short = 'F')]
    pub flush: bool,
    /// With -D or -F: the SPD instead of the SAD.
    #[arg(short = 'P')]
    pub policy: bool,
}

pub fn run(args: &SetkeyArgs) -> Result<(), CliError> {
    let (name, text) = match (&args.file, args.stdin) {
        (Some(path), false) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| CliError::Runtime(format!("{path}: {e}")))?;
            (path.clone(), text)
        }
        (None, true) => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| CliError::Runtime(format!("stdin: {e}")))?;
            ("(stdin)".to_string(), text)
        }
        (Some(_), true) => return Err(CliError::Usage("-f and -c are exclusive".into())),
        (None, false) if args.dump || args.flush => return Err(no_daemon()),
        (None, false) => {
            return Err(CliError::Usage(
                "nothing to do: give -f FILE, -c, -D or -F".into(),
            ))
        }
    };
    if args.dump || args.flush {
        return Err(CliError::Usage("-D/-F take no -f/-c".into()));
    }
    let commands =
        flowsec_setkey::parse(&name, &text).map_err(|e| CliError::Runtime(e.to_string()))?;
    if !args.check_only {
        return Err(no_daemon());
    }
    let (mut sas, mut policies) = (0, 0);
    for command in &commands {
        match command {
            Command::Add(config) => {
                sas += 1;
                for w in config.warnings() {
                    eprintln!("flowsec setkey: warning: {name}: {w}");
                }
                print!("{}", format_sa(config, None));
            }
            Command::SpdAdd(policy) => {
                policies += 1;
                print!("{}", format_policy(policy));
            }
            _ => {}
        }
    }
    eprintln!(
        "{name}: {} statements checked: {sas} SAs and {policies} policies would be added",
        commands.len()
    );
    Ok(())
}

fn no_daemon() -> CliError {
    CliError::Runtime(
        "applying setkey commands to a running daemon is not implemented yet: load the file with `flowsec up --setkey FILE` (-n checks a file without applying it)".into(),
    )
}
