//! `flowsec setkey`: manual keying in KAME/ipsec-tools syntax, against the
//! running daemon (its control socket): `-f FILE` and `-c` apply commands,
//! all or nothing; `-D`/`-DP` dump the SAD/SPD (without keys), `-F`/`-FP`
//! flush them. `-n` checks input without a daemon and prints what it would
//! install, in `setkey -D`/`-DP` form without keys, with the RFC 8221
//! warnings.

use std::io::Read;
use std::path::PathBuf;

use clap::Args;
use flowsec_daemon::answers::SetkeyDone;
use flowsec_setkey::{format_policy, format_sa};
use flowsec_wire::vici::Section;
use zeroize::Zeroizing;

use crate::{CliError, UsageError};

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
    /// The daemon's control socket.
    #[arg(long, env = "FLOWSEC_SOCKET", default_value = flowsec_daemon::DEFAULT_SOCKET)]
    pub socket: PathBuf,
}

pub fn run(args: &SetkeyArgs) -> Result<(), CliError> {
    if args.dump && args.flush {
        return Err(UsageError::DumpAndFlush.into());
    }
    if args.policy && !(args.dump || args.flush) {
        return Err(UsageError::PolicyAlone.into());
    }
    let (name, text) = match (&args.file, args.stdin, args.dump || args.flush) {
        (Some(_), true, _) => return Err(UsageError::FileAndStdin.into()),
        (Some(_), _, true) | (_, true, true) => return Err(UsageError::DumpWithInput.into()),
        (Some(path), false, false) => {
            let text = std::fs::read_to_string(path).map_err(|error| CliError::Read {
                what: path.clone(),
                error,
            })?;
            (path.clone(), Zeroizing::new(text))
        }
        (None, true, false) => {
            let mut text = Zeroizing::new(String::new());
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|error| CliError::Read {
                    what: "stdin".into(),
                    error,
                })?;
            ("(stdin)".to_string(), text)
        }
        (None, false, true) => {
            if args.check_only {
                return Err(UsageError::CheckWithoutInput.into());
            }
            let (flag, statement) = match (args.dump, args.policy) {
                (true, false) => ("-D", "dump;"),
                (true, true) => ("-DP", "spddump;"),
                (false, false) => ("-F", "flush;"),
                (false, true) => ("-FP", "spdflush;"),
            };
            (flag.to_string(), Zeroizing::new(statement.to_string()))
        }
        (None, false, false) => return Err(UsageError::NothingToDo.into()),
    };
    if args.check_only {
        return check(&name, &text);
    }
    // vici's `flowsec-setkey`; the text (and so the request) holds
    // keys: wiped once sent.
    let request = Section::default()
        .with("name", name.as_str())
        .with("text", text.as_str());
    let target = crate::ctl::target(None, &args.socket);
    let done: SetkeyDone = crate::ctl::ask(&target, "flowsec-setkey", request)?;
    for w in &done.warnings {
        eprintln!("flowsec setkey: warning: {w}");
    }
    print!("{}", done.output);
    Ok(())
}

/// `-n`: check the input as the daemon would against an empty SAD and SPD
/// (keys, duplicate SPIs, missing SAs, overlapping policies), apply
/// nothing, and print what it would install.
fn check(name: &str, text: &str) -> Result<(), CliError> {
    let caps = flowsec_daemon::Capabilities {
        udp4: true,
        udp6: true,
    };
    let staged = flowsec_daemon::stage(
        &flowsec_daemon::Model::default(),
        name,
        text,
        &flowsec_crypto::Provider::fastest(),
        caps,
        std::time::Duration::ZERO,
    )
    .map_err(CliError::Config)?;
    for w in &staged.warnings {
        eprintln!("flowsec setkey: warning: {w}");
    }
    for config in staged.model.sas.values() {
        print!("{}", format_sa(config, None));
    }
    for policy in staged.model.spd.iter() {
        print!("{}", format_policy(policy));
    }
    eprintln!(
        "{name}: {} statements checked: {} SAs and {} policies would be installed",
        staged.statements,
        staged.model.sas.len(),
        staged.model.spd.len()
    );
    Ok(())
}
