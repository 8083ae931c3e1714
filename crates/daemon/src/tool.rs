//! The system tools the daemon runs (`ip`, `nft`): by absolute path from
//! the system directories only, with a fixed environment, so that neither
//! `$PATH` nor the caller's environment chooses what runs with the
//! daemon's privileges.

use core::fmt;
use std::path::PathBuf;
use std::process::Command;

/// Where the tools are looked for, in order (Debian's `ip` is in /usr/bin
/// or /bin, `nft` in /usr/sbin).
const SYSTEM_DIRS: [&str; 4] = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"];

/// Why a system tool did not do what it was asked. Displays as
/// `COMMAND: WHY`, the tool's own message where it gave one.
#[derive(Debug)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool is in none of the system directories.
    NotFound {
        /// Its name (`ip`, `nft`).
        tool: String,
    },
    /// It could not be started, fed or waited for.
    Run {
        /// The command as the message names it (`ip link set …`, `nft`).
        command: String,
        /// Why.
        error: std::io::Error,
    },
    /// It ran and failed.
    Failed {
        /// The command as the message names it.
        command: String,
        /// What it said on standard error, trimmed.
        stderr: String,
    },
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::NotFound { tool } => {
                write!(f, "{tool}: not found in {}", SYSTEM_DIRS.join(", "))
            }
            ToolError::Run { command, error } => write!(f, "{command}: {error}"),
            ToolError::Failed { command, stderr } => write!(f, "{command}: {stderr}"),
        }
    }
}

impl std::error::Error for ToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ToolError::Run { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// The absolute path of system tool `name`, or why there is none.
pub fn path(name: &str) -> Result<PathBuf, ToolError> {
    SYSTEM_DIRS
        .iter()
        .map(|dir| PathBuf::from(dir).join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| ToolError::NotFound { tool: name.into() })
}

/// A command for system tool `name`: its absolute path, an empty
/// environment but a system `PATH`, and the C locale (its messages are
/// quoted in ours).
pub fn command(name: &str) -> Result<Command, ToolError> {
    let mut c = Command::new(path(name)?);
    c.env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("LC_ALL", "C");
    Ok(c)
}

/// Run system tool `name` with `args`, `input` on its standard input:
/// `Run` if it could not be started, fed or waited for, `Failed` with what
/// it said when it exits non-zero. Errors name it `shown`.
pub fn run(name: &str, args: &[&str], input: Option<&[u8]>, shown: &str) -> Result<(), ToolError> {
    use std::io::Write as _;
    use std::process::Stdio;
    let run = |error| ToolError::Run {
        command: shown.into(),
        error,
    };
    let mut child = command(name)?
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(run)?;
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin.write_all(input).map_err(run)?;
    }
    let out = child.wait_with_output().map_err(run)?;
    match out.status.success() {
        true => Ok(()),
        false => Err(ToolError::Failed {
            command: shown.into(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_found_only_in_system_directories() {
        let e = path("no-such-tool-flowsec").unwrap_err();
        assert!(
            matches!(&e, ToolError::NotFound { tool } if tool == "no-such-tool-flowsec"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "no-such-tool-flowsec: not found in /usr/sbin, /usr/bin, /sbin, /bin"
        );
        if let Ok(p) = path("sh") {
            assert!(p.is_absolute());
            assert!(SYSTEM_DIRS.iter().any(|d| p.starts_with(d)));
        }
    }
}
