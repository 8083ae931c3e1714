//! The system tools the daemon runs (`ip`, `nft`): by absolute path from
//! the system directories only, with a fixed environment, so that neither
//! `$PATH` nor the caller's environment chooses what runs with the
//! daemon's privileges.

use std::path::PathBuf;
use std::process::Command;

/// Where the tools are looked for, in order (Debian's `ip` is in /usr/bin
/// or /bin, `nft` in /usr/sbin).
const SYSTEM_DIRS: [&str; 4] = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"];

/// The absolute path of system tool `name`, or why there is none.
pub fn path(name: &str) -> Result<PathBuf, String> {
    SYSTEM_DIRS
        .iter()
        .map(|dir| PathBuf::from(dir).join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("{name}: not found in {}", SYSTEM_DIRS.join(", ")))
}

/// A command for system tool `name`: its absolute path, an empty
/// environment but a system `PATH`, and the C locale (its messages are
/// quoted in ours).
pub fn command(name: &str) -> Result<Command, String> {
    let mut c = Command::new(path(name)?);
    c.env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("LC_ALL", "C");
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_found_only_in_system_directories() {
        assert!(path("no-such-tool-flowsec")
            .unwrap_err()
            .contains("/usr/sbin"));
        if let Ok(p) = path("sh") {
            assert!(p.is_absolute());
            assert!(SYSTEM_DIRS.iter().any(|d| p.starts_with(d)));
        }
    }
}
