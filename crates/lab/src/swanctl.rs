//! The one writer of swanctl.conf text (issue 30): the lab's gateways
//! ([`crate::peers`], [`crate::bed`]) and every end-to-end script
//! (through `flowsec lab conf`, [`SwanctlConf::from_args`]) describe a
//! file as a [`SwanctlConf`] and print it with [`SwanctlConf::render`].
//! strongSwan's charon (through `swanctl --load-all --file`) and
//! `flowsec up -c` read the same text.
//!
//! The words `flowsec lab conf` takes, sections in the order they are
//! to appear, each section's keys in the order given:
//!
//! ```text
//! [--comment TEXT]...
//! conn NAME   [--KEY VALUE]... [--local-KEY VALUE]... [--remote-KEY VALUE]... [--auth psk]
//! child NAME  [--KEY VALUE]...        (a Child SA of the last conn)
//! pool NAME   [--KEY VALUE]...
//! secret NAME [--KEY VALUE]...        (--id, --id-SUFFIX, --secret; the secret is quoted)
//! ```
//!
//! `--KEY` is swanctl's key with `-` for `_` (`--esp-proposals`); a key
//! neither implementation knows is refused ([`ConfArgError`]), so a typo
//! fails here and not in one daemon of two. `--auth psk` puts `auth = psk`
//! in both the local and the remote section.
#![forbid(unsafe_code)]

use core::fmt;

/// `key = value` lines, in order.
pub type Keys = Vec<(String, String)>;

/// A swanctl.conf: its header comment, `connections`, `pools` and
/// `secrets`. The default value is an empty file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwanctlConf {
    /// Lines of the header comment (each printed after `# `).
    pub comment: Vec<String>,
    pub connections: Vec<Conn>,
    /// `pools { NAME { addrs = …  dns = … } }`.
    pub pools: Vec<Section>,
    /// `secrets { ike-NAME { id = …  secret = "…" } }`.
    pub secrets: Vec<Section>,
}

/// One connection: its keys, its `local` and `remote` sections and its
/// Child SAs (no `children` section when there are none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conn {
    pub name: String,
    pub keys: Keys,
    pub local: Keys,
    pub remote: Keys,
    pub children: Vec<Section>,
}

/// A named section of `key = value` lines: a Child SA, a pool, a secret.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub keys: Keys,
}

/// Why `flowsec lab conf`'s words describe no swanctl.conf.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfArgError {
    /// A word that is neither a section (`conn`, `child`, `pool`,
    /// `secret`) nor a `--KEY`.
    UnknownWord(String),
    /// A section word without its name.
    NoName(&'static str),
    /// A `--KEY` without its value.
    NoValue(String),
    /// A `--KEY` before the first section it could belong to.
    Outside(String),
    /// A `child` before the first `conn`.
    ChildOutsideConn,
    /// A key the section does not have (in swanctl.conf or in flowsec).
    UnknownKey {
        /// conn, local, remote, child, pool or secret.
        section: &'static str,
        /// The flag as given.
        flag: String,
    },
    /// A value with a character the file's syntax would take for its own
    /// (a brace, `#`, a newline, a quote but around the whole value).
    Unquotable {
        /// The flag.
        flag: String,
    },
}

impl fmt::Display for ConfArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfArgError::UnknownWord(w) => write!(
                f,
                "{w}: not a section (conn, child, pool, secret) nor a --KEY"
            ),
            ConfArgError::NoName(s) => write!(f, "{s}: no name"),
            ConfArgError::NoValue(flag) => write!(f, "{flag}: no value"),
            ConfArgError::Outside(flag) => write!(f, "{flag}: before any section"),
            ConfArgError::ChildOutsideConn => f.write_str("child: before any conn"),
            ConfArgError::UnknownKey { section, flag } => {
                write!(f, "{flag}: no such key in a {section} section")
            }
            ConfArgError::Unquotable { flag } => {
                write!(
                    f,
                    "{flag}: a brace, '#', newline or inner quote in the value"
                )
            }
        }
    }
}

impl std::error::Error for ConfArgError {}

/// The keys `flowsec lab conf` takes, per section: those of swanctl.conf
/// that flowsec's parser knows (`flowsec_ike::config`).
const CONN_KEYS: &[&str] = &[
    "version",
    "local_addrs",
    "remote_addrs",
    "local_port",
    "remote_port",
    "proposals",
    "encap",
    "send_cert",
    "send_certreq",
    "fragmentation",
    "tcp_encap",
    "tcp_port",
    "tcp_tls",
    "tcp_fallback_time",
    "dpd_delay",
    "dpd_timeout",
    "keyingtries",
    "unique",
    "rekey_time",
    "reauth_time",
    "over_time",
    "rand_time",
    "vips",
    "pools",
    "mobike",
    "ppk_id",
    "ppk_required",
];
const AUTH_KEYS: &[&str] = &["auth", "id", "certs", "cacerts", "eap_id", "revocation"];
const CHILD_KEYS: &[&str] = &[
    "local_ts",
    "remote_ts",
    "esp_proposals",
    "ah_proposals",
    "mode",
    "rekey_time",
    "life_time",
    "rand_time",
    "rekey_bytes",
    "life_bytes",
    "rand_bytes",
    "rekey_packets",
    "life_packets",
    "rand_packets",
    "start_action",
    "dpd_action",
    "close_action",
    "ipcomp",
    "replay_window",
    "per_cpu_sas",
    "rekey_switch",
];
const POOL_KEYS: &[&str] = &["addrs", "dns"];

impl SwanctlConf {
    /// An empty file with a header comment.
    pub fn new(comment: &str) -> SwanctlConf {
        SwanctlConf {
            comment: vec![comment.to_string()],
            ..SwanctlConf::default()
        }
    }

    /// Add connection `name`; its builder.
    pub fn conn(&mut self, name: &str) -> &mut Conn {
        self.connections.push(Conn {
            name: name.into(),
            ..Conn::default()
        });
        let last = self.connections.len() - 1;
        &mut self.connections[last]
    }

    /// Add secret `name` (`ike-…`, `eap-…`); its builder.
    pub fn secret(&mut self, name: &str) -> &mut Section {
        push_section(&mut self.secrets, name)
    }

    /// Add pool `name`; its builder.
    pub fn pool(&mut self, name: &str) -> &mut Section {
        push_section(&mut self.pools, name)
    }

    /// The file `flowsec lab conf ARGS` prints (the grammar is in the
    /// module's header).
    pub fn from_args<S: AsRef<str>>(args: &[S]) -> Result<SwanctlConf, ConfArgError> {
        let mut conf = SwanctlConf::default();
        let mut at = Where::Nowhere;
        let mut words = args.iter().map(AsRef::as_ref);
        while let Some(word) = words.next() {
            if let Some(key) = word.strip_prefix("--") {
                let value = words
                    .next()
                    .ok_or_else(|| ConfArgError::NoValue(word.into()))?;
                if !quotable(value) {
                    return Err(ConfArgError::Unquotable { flag: word.into() });
                }
                conf.set(at, word, key, value)?;
                continue;
            }
            let mut name = || words.next().ok_or(ConfArgError::NoName(section(word)));
            at = match word {
                "conn" => {
                    conf.conn(name()?);
                    Where::Conn
                }
                "child" => {
                    let conn = conf
                        .connections
                        .last_mut()
                        .ok_or(ConfArgError::ChildOutsideConn)?;
                    conn.child(name()?);
                    Where::Child
                }
                "pool" => {
                    conf.pool(name()?);
                    Where::Pool
                }
                "secret" => {
                    conf.secret(name()?);
                    Where::Secret
                }
                other => return Err(ConfArgError::UnknownWord(other.into())),
            };
        }
        Ok(conf)
    }

    /// `--comment`, or `--KEY VALUE` in the section the words are in.
    fn set(&mut self, at: Where, flag: &str, key: &str, value: &str) -> Result<(), ConfArgError> {
        if key == "comment" {
            self.comment.push(value.into());
            return Ok(());
        }
        let unknown = |section| ConfArgError::UnknownKey {
            section,
            flag: flag.into(),
        };
        let k = key.replace('-', "_");
        let keys = match at {
            Where::Nowhere => return Err(ConfArgError::Outside(flag.into())),
            Where::Conn => return self.conn_key(flag, &k, value),
            Where::Child => {
                let conn = self.connections.last_mut();
                let child = conn.and_then(|c| c.children.last_mut());
                (child.map(|c| &mut c.keys), CHILD_KEYS, "child")
            }
            Where::Pool => (
                self.pools.last_mut().map(|p| &mut p.keys),
                POOL_KEYS,
                "pool",
            ),
            Where::Secret => {
                // strongSwan's id-SUFFIX keeps its dash.
                let ok = key == "id" || key == "secret" || key.starts_with("id-");
                let keys = self.secrets.last_mut().map(|s| &mut s.keys);
                let keys = keys.filter(|_| ok).ok_or_else(|| unknown("secret"))?;
                keys.push((key.into(), value.into()));
                return Ok(());
            }
        };
        let (Some(keys), known, section) = keys else {
            return Err(ConfArgError::Outside(flag.into()));
        };
        if !known.contains(&k.as_str()) {
            return Err(unknown(section));
        }
        keys.push((k, value.into()));
        Ok(())
    }

    /// A key of the last connection: its own, `local-…`, `remote-…`, or
    /// `auth` (both ends).
    fn conn_key(&mut self, flag: &str, k: &str, value: &str) -> Result<(), ConfArgError> {
        let Some(conn) = self.connections.last_mut() else {
            return Err(ConfArgError::Outside(flag.into()));
        };
        let unknown = |section| ConfArgError::UnknownKey {
            section,
            flag: flag.into(),
        };
        if k == "auth" {
            conn.local.push((k.into(), value.into()));
            conn.remote.push((k.into(), value.into()));
            return Ok(());
        }
        let (keys, k, section) = if CONN_KEYS.contains(&k) {
            (&mut conn.keys, k, "conn")
        } else if let Some(k) = k.strip_prefix("local_") {
            (&mut conn.local, k, "local")
        } else if let Some(k) = k.strip_prefix("remote_") {
            (&mut conn.remote, k, "remote")
        } else {
            return Err(unknown("conn"));
        };
        if section != "conn" && !AUTH_KEYS.contains(&k) {
            return Err(unknown(section));
        }
        keys.push((k.into(), value.into()));
        Ok(())
    }

    /// The file's text: four spaces an indent, sections in order, empty
    /// ones left out.
    pub fn render(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for SwanctlConf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.comment {
            writeln!(f, "# {c}")?;
        }
        if !self.connections.is_empty() {
            writeln!(f, "connections {{")?;
            for c in &self.connections {
                c.fmt(f)?;
            }
            writeln!(f, "}}")?;
        }
        for (name, sections) in [("pools", &self.pools), ("secrets", &self.secrets)] {
            if sections.is_empty() {
                continue;
            }
            writeln!(f, "{name} {{")?;
            for s in sections {
                s.write(f, 1)?;
            }
            writeln!(f, "}}")?;
        }
        Ok(())
    }
}

impl Conn {
    /// Add `key = value` to the connection's section.
    pub fn key(&mut self, key: &str, value: &str) -> &mut Conn {
        self.keys.push((key.into(), value.into()));
        self
    }

    /// Both ends authenticate with `auth` (`psk`), as `local_id` and
    /// `remote_id`.
    pub fn ids(&mut self, auth: &str, local_id: &str, remote_id: &str) -> &mut Conn {
        for (end, id) in [(&mut self.local, local_id), (&mut self.remote, remote_id)] {
            end.push(("auth".into(), auth.into()));
            end.push(("id".into(), id.into()));
        }
        self
    }

    /// Add Child SA `name`; its builder.
    pub fn child(&mut self, name: &str) -> &mut Section {
        push_section(&mut self.children, name)
    }
}

impl fmt::Display for Conn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "    {} {{", self.name)?;
        write_keys(f, 2, &self.keys)?;
        for (name, keys) in [("local", &self.local), ("remote", &self.remote)] {
            if !keys.is_empty() {
                writeln!(f, "        {name} {{")?;
                write_keys(f, 3, keys)?;
                writeln!(f, "        }}")?;
            }
        }
        if !self.children.is_empty() {
            writeln!(f, "        children {{")?;
            for ch in &self.children {
                ch.write(f, 3)?;
            }
            writeln!(f, "        }}")?;
        }
        writeln!(f, "    }}")
    }
}

impl Section {
    /// Add `key = value`.
    pub fn key(&mut self, key: &str, value: impl fmt::Display) -> &mut Section {
        self.keys.push((key.into(), value.to_string()));
        self
    }

    fn write(&self, f: &mut fmt::Formatter<'_>, depth: usize) -> fmt::Result {
        let pad = "    ".repeat(depth);
        writeln!(f, "{pad}{} {{", self.name)?;
        write_keys(f, depth + 1, &self.keys)?;
        writeln!(f, "{pad}}}")
    }
}

/// Where `from_args` is: which section a `--KEY` goes to.
#[derive(Debug, Clone, Copy)]
enum Where {
    Nowhere,
    Conn,
    Child,
    Pool,
    Secret,
}

/// Whether `value` can stand on the right of `key = ` as it is: no
/// brace, `#` or newline, and quotes only around the whole of it.
fn quotable(value: &str) -> bool {
    let inner = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value);
    !inner.contains(['"', '{', '}', '#', '\n'])
}

/// The section word's name in errors.
fn section(word: &str) -> &'static str {
    match word {
        "conn" => "conn",
        "child" => "child",
        "pool" => "pool",
        _ => "secret",
    }
}

fn push_section<'a>(sections: &'a mut Vec<Section>, name: &str) -> &'a mut Section {
    sections.push(Section {
        name: name.into(),
        keys: Keys::new(),
    });
    let last = sections.len() - 1;
    &mut sections[last]
}

/// `key = value` lines at `depth`; a secret's value in quotes.
fn write_keys(f: &mut fmt::Formatter<'_>, depth: usize, keys: &Keys) -> fmt::Result {
    let pad = "    ".repeat(depth);
    for (k, v) in keys {
        if k == "secret" && !v.starts_with('"') {
            writeln!(f, "{pad}{k} = \"{v}\"")?;
        } else {
            writeln!(f, "{pad}{k} = {v}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "swanctl_tests.rs"]
mod tests;
