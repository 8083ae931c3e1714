//! The passwords of encrypted private keys: `secrets.rsa<suffix>`,
//! `ecdsa<suffix>`, `pkcs8<suffix>` and `private<suffix>` sections
//! (swanctl.conf(5); `load_creds.c` `decrypt_with_config()`):
//!
//! ```text
//! secrets.rsa-sun.file     the key file, relative to rsa/ (ecdsa/, pkcs8/, private/)
//!                .secret*  its password(s), tried in order (plain text: no 0x/0s decoding)
//! ```
//!
//! As in swanctl, `file` is compared with the key's file name in the
//! directory of the section's type without regard to case. flowsec
//! refuses a section naming no key file of that directory (swanctl
//! passes over it), and `pkcs12` sections (PKCS#12 containers are not
//! read).

use core::fmt;

use zeroize::Zeroizing;

use super::lexer::{join, Origin, Section};
use super::{ConfigError, ConfigErrorKind};

/// The secret section types that hold key passwords, which are also the
/// swanctl directories of their keys.
pub const KEY_SECRET_TYPES: [&str; 4] = ["private", "rsa", "ecdsa", "pkcs8"];

/// One `secrets.rsa…`/`ecdsa…`/`pkcs8…`/`private…` section.
#[derive(Clone, PartialEq, Eq)]
pub struct KeySecret {
    /// The section name (`rsa-sun`).
    pub name: String,
    /// Its type, the directory of its key (`rsa`).
    pub dir: &'static str,
    /// `file`: the key's file name in that directory.
    pub file: String,
    /// `secret…`: the passwords, in file order.
    pub passwords: Vec<Zeroizing<String>>,
    /// Where `file` was given, for errors.
    pub(crate) at: Origin,
}

impl fmt::Debug for KeySecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeySecret")
            .field("name", &self.name)
            .field("dir", &self.dir)
            .field("file", &self.file)
            .field("passwords", &self.passwords.len())
            .finish()
    }
}

impl KeySecret {
    /// Whether it is the password section of `dir/file`.
    pub fn names(&self, dir: &str, file: &str) -> bool {
        self.dir == dir && self.file.eq_ignore_ascii_case(file)
    }

    /// Its dotted key `secrets.NAME.file`.
    pub(crate) fn key(&self) -> String {
        join(&join("secrets", &self.name), "file")
    }
}

/// The key type of secret section `name`, if it is a key password's.
pub(crate) fn key_type(name: &str) -> Option<&'static str> {
    KEY_SECRET_TYPES.into_iter().find(|t| name.starts_with(t))
}

/// Reads section `sec` of type `dir` (from [`key_type`]); `file` names
/// the main configuration file.
pub(crate) fn read(file: &str, sec: &Section, dir: &'static str) -> Result<KeySecret, ConfigError> {
    let path = join("secrets", &sec.name);
    let err = |at: Origin, key: &str, kind| {
        ConfigError::new(at.file_or(file), at.line, join(&path, key), kind)
    };
    sec.settings_only(file, &path)?;
    let mut key_file = None;
    let mut passwords = Vec::new();
    for s in &sec.settings {
        let Some(v) = s.value.as_deref() else {
            continue;
        };
        if s.key == "file" {
            key_file = Some((v.to_string(), s.origin()));
        } else if s.key.starts_with("secret") {
            passwords.push(Zeroizing::new(v.to_string()));
        } else {
            return Err(err(s.origin(), &s.key, ConfigErrorKind::UnknownSecretKey));
        }
    }
    let Some((key_file, at)) = key_file else {
        return Err(err(sec.origin(), "file", ConfigErrorKind::MissingKeyFile));
    };
    if passwords.is_empty() {
        return Err(err(sec.origin(), "secret", ConfigErrorKind::MissingSecret));
    }
    Ok(KeySecret {
        name: sec.name.clone(),
        dir,
        file: key_file,
        passwords,
        at,
    })
}

/// Each key secret names a file of its directory under `swanctl_dir`:
/// an error naming its line otherwise.
pub(crate) fn check_files(
    file: &str,
    secrets: &[KeySecret],
    swanctl_dir: &std::path::Path,
) -> Result<(), ConfigError> {
    for s in secrets {
        let dir = swanctl_dir.join(s.dir);
        let found = std::fs::read_dir(&dir).ok().is_some_and(|entries| {
            entries.filter_map(Result::ok).any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .eq_ignore_ascii_case(&s.file)
            })
        });
        if !found {
            return Err(ConfigError::new(
                s.at.file_or(file),
                s.at.line,
                s.key(),
                ConfigErrorKind::UnknownCredential {
                    file: s.file.clone(),
                    dir: dir.display().to_string(),
                },
            ));
        }
    }
    Ok(())
}
