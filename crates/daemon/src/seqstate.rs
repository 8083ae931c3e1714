//! Sequence numbers of manual SAs across restarts. With a setkey file the
//! keys are the same every time `flowsec up` starts, and with AES-GCM,
//! AES-CCM, ChaCha20-Poly1305, AES-GMAC and AES-CTR the IV is the sequence
//! number: an SA that started again at 1 would repeat (key, nonce) pairs,
//! which gives away the plaintexts' XOR and, for GCM, the authentication
//! key (RFC 4106 §8.1, RFC 3686 §2.1, RFC 7634 §4).
//!
//! So a manual SA whose nonce is its counter may only use sequence numbers
//! already written down: under the state directory (`--state-dir`, default
//! `/var/lib/flowsec`) each such key has a file named by a fingerprint of
//! what makes the nonces ([`NonceKey`]: protocol, algorithm, key with its
//! salt; a SHA-256 of them, never the key itself) holding the highest
//! sequence number any SA under that key may have used. Not the SPI nor
//! the destination: they are not in the nonce, so an SA moved to a new
//! SPI or peer with the same key goes on above its predecessor's numbers.
//! An SA starts above that number, and the workers may go [`RESERVE`]
//! past it; the control plane writes a higher number (a new file, fsync,
//! rename over the old one, fsync of the directory: a crash leaves the old
//! number or the new one, never an empty file) before it lets them go
//! further. A restart, or `delete` and `add` with the same key, therefore
//! never goes back. A lock file beside each (flock) is held while the
//! number is read and rewritten, and the number only ever grows, so two
//! daemons that hold the same key (the sender and the receiver on one
//! host) cannot lower it. The directory must be owned by the daemon's user and
//! closed to group and others (whoever could remove a file could reset an
//! SA's numbers), and no file is followed through a symbolic link.
//!
//! Files of the first format (named by a SHA-256 of SPI, destination,
//! algorithms and keys: 32 hex digits, no prefix) cannot be traced back to
//! a key, so they are migrated conservatively: a key without a file of its
//! own starts above the highest number any of them holds. They are never
//! written again; once every key in use has a file of its own they may be
//! removed.

use core::fmt;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use flowsec_ipsec::{Protocol, SaConfig, SaId};
use sha2::{Digest, Sha256};

use crate::sys;

/// Where the state lives unless `--state-dir` says otherwise.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/flowsec";
/// How far past the recorded number the workers may go (2^20 packets): a
/// restart skips at most this many sequence numbers (so a 32-bit counter
/// lasts at least 4096 restarts), and the control plane, which looks every
/// [`CHECK_EVERY`], records more long before they are used up (a worker
/// would have to send 2 million packets a second on one SA to wait).
pub const RESERVE: u64 = 1 << 20;
/// How often the control plane looks at how far the SAs have got.
pub const CHECK_EVERY: std::time::Duration = std::time::Duration::from_millis(250);
/// The prefix of a key's file name (the first format had none).
const FILE_PREFIX: &str = "nonce-";

/// What makes the nonces of an SA whose IV is its sequence number: its
/// protocol, its algorithm's keystream and its key, salt included (RFC
/// 4106 §3.1, RFC 3686 §4, RFC 7634 §2). Not its SPI nor its destination:
/// two SAs with one `NonceKey` draw from one (key, nonce) space, so they
/// may not run at once (staging refuses the second) and one goes on
/// above the other's numbers ([`SeqState`]).
pub(crate) struct NonceKey<'a> {
    protocol: [u8; 1],
    family: [u8; 2],
    key: &'a [u8],
}

/// The keystream an algorithm draws from a (key, salt, IV): AES-CTR,
/// AES-GCM of any ICV length and AES-GMAC all run AES in counter mode on
/// salt | IV | counter (RFC 3686 §4, RFC 4106 §3.1, RFC 4543 §3.1), so the
/// same key and salt under any of them is one nonce space; AES-CCM of any
/// ICV length is another (RFC 4309 §4); others are their own.
fn nonce_family(encr: flowsec_wire::iana::EncrId) -> u16 {
    use flowsec_wire::iana::EncrId as E;
    match encr {
        E::AES_CTR | E::AES_GCM_8 | E::AES_GCM_12 | E::AES_GCM_16 | E::NULL_AUTH_AES_GMAC => {
            E::AES_GCM_16.0
        }
        E::AES_CCM_8 | E::AES_CCM_12 | E::AES_CCM_16 => E::AES_CCM_16.0,
        other => other.0,
    }
}

impl NonceKey<'_> {
    /// `config`'s; `None` where the IV is not the sequence number (CBC's
    /// is random) or the SA is not ESP.
    pub(crate) fn of(config: &SaConfig) -> Option<NonceKey<'_>> {
        if config.protocol != Protocol::Esp || !flowsec_crypto::esp::nonce_is_counter(config.encr) {
            return None;
        }
        Some(NonceKey {
            protocol: [config.protocol.ip_protocol().0],
            family: nonce_family(config.encr).to_be_bytes(),
            key: &config.encr_key,
        })
    }

    /// Its parts, fixed sizes first, for a hash or a tag.
    pub(crate) fn parts(&self) -> [&[u8]; 3] {
        [&self.protocol, &self.family, self.key]
    }
}

/// Why the sequence numbers could not be read or recorded. Displays as
/// `PATH: WHY`.
#[derive(Debug)]
#[non_exhaustive]
pub enum SeqStateError {
    /// A file or directory of the state could not be made, read or
    /// written.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        error: io::Error,
    },
    /// The state directory (or its `seq` directory) is not one only this
    /// daemon's user can change.
    NotPrivate {
        /// The directory.
        dir: PathBuf,
        /// The daemon's user.
        uid: u32,
        /// What is there.
        found: EntryKind,
        /// Its owner.
        owner: u32,
        /// Its permission bits.
        mode: u32,
    },
    /// A state file holds something other than a number (damage: numbers
    /// are written to a new file and renamed into place).
    NotANumber {
        /// The file.
        path: PathBuf,
        /// What it holds, trimmed.
        text: String,
    },
}

/// What a path names, for [`SeqStateError::NotPrivate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A symbolic link (never followed).
    SymbolicLink,
    /// A directory.
    Directory,
    /// Something else.
    NotADirectory,
}

impl fmt::Display for SeqStateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SeqStateError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            SeqStateError::NotPrivate {
                dir,
                uid,
                found,
                owner,
                mode,
            } => write!(
                f,
                "{}: must be a directory owned by uid {uid} that group and others cannot write \
                 (it is {}, uid {owner}, mode {mode:o}): whoever can remove a file there can make a manual SA reuse nonces",
                dir.display(),
                match found {
                    EntryKind::SymbolicLink => "a symbolic link",
                    EntryKind::Directory => "a directory",
                    EntryKind::NotADirectory => "not a directory",
                },
            ),
            SeqStateError::NotANumber { path, text } => write!(
                f,
                "{}: not a sequence number: {text:?} (remove the file only if the SA's key was \
                 changed)",
                path.display()
            ),
        }
    }
}

impl std::error::Error for SeqStateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SeqStateError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// `error` at `path`.
fn in_file(path: &Path) -> impl Fn(io::Error) -> SeqStateError + '_ {
    move |error| SeqStateError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// The manual SAs' recorded sequence numbers.
#[derive(Debug, Clone)]
pub struct SeqState {
    dir: PathBuf,
    /// The SAs of this daemon that have a file: their fingerprint and the
    /// number the workers may go up to.
    held: BTreeMap<SaId, Held>,
    /// The highest number of the first format's files (0: none): where a
    /// key without a file of its own starts.
    legacy: u64,
}

/// One SA this daemon has reserved sequence numbers for.
#[derive(Debug, Clone)]
struct Held {
    fingerprint: String,
    ceiling: u64,
}

/// Where one SA's sequence numbers start and how far they may go now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeqRange {
    /// The last number it may already have used (the next packet has
    /// `from + 1`).
    pub from: u64,
    /// The last number it may use before more are recorded.
    pub ceiling: u64,
}

impl SeqState {
    /// The state under `dir` (created, mode 0700, when missing).
    pub fn open(dir: &Path) -> Result<SeqState, SeqStateError> {
        let seq = dir.join("seq");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&seq)
            .map_err(in_file(&seq))?;
        private_dir(dir)?;
        private_dir(&seq)?;
        let legacy = legacy_floor(&seq)?;
        Ok(SeqState {
            dir: seq,
            held: BTreeMap::new(),
            legacy,
        })
    }

    /// The range of a new SA: it starts above everything recorded for its
    /// key (whatever the SPI or destination that used it), and [`RESERVE`]
    /// more are recorded before it is installed. `None` for an SA whose
    /// nonce is not its counter.
    pub fn reserve(&mut self, config: &SaConfig) -> Result<Option<SeqRange>, SeqStateError> {
        let Some(fingerprint) = fingerprint(config) else {
            return Ok(None);
        };
        let id = config.id();
        let (from, ceiling) = self.record(&fingerprint, |used| used + RESERVE)?;
        self.held.insert(
            id,
            Held {
                fingerprint,
                ceiling,
            },
        );
        Ok(Some(SeqRange { from, ceiling }))
    }

    /// Whether it holds no SA.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// The SA is gone from this daemon (its file stays: the same key added
    /// again goes on above it).
    pub fn forget(&mut self, id: &SaId) {
        self.held.remove(id);
    }

    /// Given how far each SA got (`seq`: the highest sequence number any
    /// worker copy sent), record more for those within half a [`RESERVE`]
    /// of their ceiling; returns their new ceilings, for the workers.
    pub fn extend(
        &mut self,
        seq: impl Fn(&SaId) -> u64,
    ) -> Result<Vec<(SaId, u64)>, SeqStateError> {
        let due: Vec<(SaId, String, u64)> = self
            .held
            .iter()
            .filter(|(id, h)| h.ceiling.saturating_sub(seq(id)) < RESERVE / 2)
            .map(|(id, h)| (*id, h.fingerprint.clone(), h.ceiling))
            .collect();
        let mut raised = Vec::new();
        for (id, fingerprint, ceiling) in due {
            let (_, new) = self.record(&fingerprint, |used| used.max(ceiling) + RESERVE)?;
            if let Some(h) = self.held.get_mut(&id) {
                h.ceiling = new;
            }
            raised.push((id, new));
        }
        Ok(raised)
    }

    /// Under the SA's lock: read the recorded number `used`, write
    /// `next(used)` (never less), and return both.
    fn record(
        &self,
        fingerprint: &str,
        next: impl Fn(u64) -> u64,
    ) -> Result<(u64, u64), SeqStateError> {
        let path = self.dir.join(fingerprint);
        let lock_path = self.dir.join(format!("{fingerprint}.lock"));
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&lock_path)
            .map_err(in_file(&lock_path))?;
        sys::lock_exclusive(&lock).map_err(in_file(&lock_path))?;
        let used = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
        {
            Ok(mut file) => read_number(&mut file, &path)?,
            // Never recorded: a new key (above the first format's files).
            Err(e) if e.kind() == io::ErrorKind::NotFound => self.legacy,
            Err(e) => return Err(in_file(&path)(e)),
        };
        let new = next(used).max(used);
        write_number(&self.dir, fingerprint, new).map_err(in_file(&path))?;
        Ok((used, new))
    }
}

/// A directory only this daemon's user may change: its own, not writable
/// by group or others, not a symbolic link.
fn private_dir(dir: &Path) -> Result<(), SeqStateError> {
    let m = std::fs::symlink_metadata(dir).map_err(in_file(dir))?;
    let uid = sys::euid();
    if !m.file_type().is_dir() || m.uid() != uid || m.mode() & 0o022 != 0 {
        return Err(SeqStateError::NotPrivate {
            dir: dir.to_path_buf(),
            uid,
            found: if m.file_type().is_symlink() {
                EntryKind::SymbolicLink
            } else if m.is_dir() {
                EntryKind::Directory
            } else {
                EntryKind::NotADirectory
            },
            owner: m.uid(),
            mode: m.mode() & 0o7777,
        });
    }
    Ok(())
}

/// The file name of an SA whose nonce is its counter: a SHA-256 of what
/// makes its nonces ([`NonceKey`]), cut to 128 bits, in hex, after
/// [`FILE_PREFIX`].
pub fn fingerprint(config: &SaConfig) -> Option<String> {
    let key = NonceKey::of(config)?;
    let mut h = Sha256::new();
    h.update(b"flowsec manual SA sequence v2\0");
    for part in key.parts() {
        h.update((part.len() as u32).to_be_bytes());
        h.update(part);
    }
    let digest = h.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    Some(format!("{FILE_PREFIX}{hex}"))
}

/// The highest number held by a file of the first format under `seq`
/// (named by 32 hex digits alone; 0 without any): they cannot be traced to
/// their key, so every key without a file of its own starts above them.
fn legacy_floor(seq: &Path) -> Result<u64, SeqStateError> {
    let mut floor = 0;
    for entry in std::fs::read_dir(seq).map_err(in_file(seq))? {
        let entry = entry.map_err(in_file(seq))?;
        let name = entry.file_name();
        let legacy = name
            .to_str()
            .is_some_and(|n| n.len() == 32 && n.bytes().all(|b| b.is_ascii_hexdigit()));
        if !legacy {
            continue;
        }
        let path = entry.path();
        let mut file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(in_file(&path))?;
        floor = floor.max(read_number(&mut file, &path)?);
    }
    Ok(floor)
}

/// The number a state file holds. An empty file is damage (numbers are
/// written to a new file and renamed into place), not a fresh start.
fn read_number(file: &mut File, path: &Path) -> Result<u64, SeqStateError> {
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(in_file(path))?;
    let text = text.trim();
    text.parse().map_err(|_| SeqStateError::NotANumber {
        path: path.to_path_buf(),
        text: text.to_string(),
    })
}

/// Replace the number of SA `fingerprint` under `dir` with `n`, durably:
/// the workers may use the numbers only once this returns. Called under
/// the SA's lock, so the temporary file is this call's own.
fn write_number(dir: &Path, fingerprint: &str, n: u64) -> io::Result<()> {
    let tmp = dir.join(format!("{fingerprint}.new"));
    // Left by a crash between writing and renaming: the old number stands.
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)?;
    file.write_all(format!("{n}\n").as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&tmp, dir.join(fingerprint))?;
    // The rename itself, on disk.
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use flowsec_crypto::{EncrId, IntegId};
    use flowsec_ipsec::Mode;

    fn gcm(spi: u32, key: u8) -> SaConfig {
        SaConfig::esp(
            spi,
            Mode::Tunnel,
            "192.0.2.1".parse().unwrap(),
            "192.0.2.2".parse().unwrap(),
        )
        .with_encr(EncrId::AES_GCM_16, &[key; 20])
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("flowsec-seq-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// A restart, or the same SA deleted and added again, starts above
    /// every number the last one could have used.
    #[test]
    fn an_sa_never_starts_below_what_was_recorded() {
        let d = dir("restart");
        let mut st = SeqState::open(&d).unwrap();
        let first = st.reserve(&gcm(0x1001, 7)).unwrap().unwrap();
        assert_eq!(
            first,
            SeqRange {
                from: 0,
                ceiling: RESERVE
            }
        );
        // It got close to the ceiling: more is recorded.
        let raised = st.extend(|_| RESERVE - 10).unwrap();
        assert_eq!(raised.len(), 1);
        assert_eq!(raised[0].1, 2 * RESERVE);
        // Not yet due: nothing written.
        assert!(st.extend(|_| RESERVE).unwrap().is_empty());
        drop(st);
        let mut st = SeqState::open(&d).unwrap();
        let again = st.reserve(&gcm(0x1001, 7)).unwrap().unwrap();
        assert_eq!(again.from, 2 * RESERVE);
        assert!(again.ceiling > again.from);
        // Another key is another nonce space: its own numbers.
        assert_eq!(st.reserve(&gcm(0x1001, 8)).unwrap().unwrap().from, 0);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// The nonce is salt and sequence number under the key: an SA moved to
    /// another SPI or destination with the same key, after a restart,
    /// goes on above every number its predecessor may have used (issue
    /// 29: it started again at 1).
    #[test]
    fn the_same_key_under_another_spi_or_destination_goes_on() {
        let d = dir("moved");
        let mut st = SeqState::open(&d).unwrap();
        assert_eq!(st.reserve(&gcm(0x1001, 7)).unwrap().unwrap().from, 0);
        drop(st);
        let mut st = SeqState::open(&d).unwrap();
        let moved = st.reserve(&gcm(0x1002, 7)).unwrap().unwrap();
        assert_eq!(moved.from, RESERVE);
        st.forget(&gcm(0x1002, 7).id());
        let mut elsewhere = gcm(0x1002, 7);
        elsewhere.dst = "198.51.100.9".parse().unwrap();
        assert_eq!(st.reserve(&elsewhere).unwrap().unwrap().from, 2 * RESERVE);
        // ChaCha20-Poly1305 under the same bytes is another nonce space.
        let chacha = SaConfig::esp(
            0x1002,
            Mode::Tunnel,
            "192.0.2.1".parse().unwrap(),
            "192.0.2.2".parse().unwrap(),
        )
        .with_encr(EncrId::CHACHA20_POLY1305, &[7; 36]);
        assert_ne!(fingerprint(&chacha), fingerprint(&gcm(0x1002, 7)));
        // GCM with another ICV length, GMAC and CTR under the same key and
        // salt run the same counter-mode keystream: one nonce space.
        for encr in [
            EncrId::AES_GCM_8,
            EncrId::NULL_AUTH_AES_GMAC,
            EncrId::AES_CTR,
        ] {
            let mut other = gcm(0x1002, 7);
            other.encr = encr;
            assert_eq!(fingerprint(&other), fingerprint(&gcm(0x1002, 7)), "{encr}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A file of the first format (SPI, destination and key; 32 hex
    /// digits) cannot be traced to its key: a key without a file of its
    /// own starts above all of them; one with a file, by its own.
    #[test]
    fn first_format_files_are_a_floor_for_new_keys() {
        let d = dir("legacy");
        SeqState::open(&d).unwrap();
        let old = d.join("seq").join("0123456789abcdef0123456789abcdef");
        std::fs::write(&old, "5000000\n").unwrap();
        std::fs::write(
            d.join("seq").join("fedcba9876543210fedcba9876543210"),
            "7\n",
        )
        .unwrap();
        let mut st = SeqState::open(&d).unwrap();
        assert_eq!(
            st.reserve(&gcm(0x1001, 7)).unwrap().unwrap().from,
            5_000_000
        );
        assert_eq!(
            st.reserve(&gcm(0x1001, 8)).unwrap().unwrap().from,
            5_000_000
        );
        // Its own file from now on; the old one is never written.
        std::fs::write(&old, "9000000\n").unwrap();
        let mut st = SeqState::open(&d).unwrap();
        let again = st.reserve(&gcm(0x1001, 7)).unwrap().unwrap();
        assert_eq!(again.from, 5_000_000 + RESERVE);
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "9000000\n");
        // A damaged one is damage, not a fresh start.
        std::fs::write(&old, "x").unwrap();
        assert!(matches!(
            SeqState::open(&d).err().unwrap(),
            SeqStateError::NotANumber { .. }
        ));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn only_counter_nonces_are_recorded_and_keys_never_written() {
        let d = dir("which");
        let mut st = SeqState::open(&d).unwrap();
        let cbc = SaConfig::esp(
            0x2001,
            Mode::Tunnel,
            "192.0.2.1".parse().unwrap(),
            "192.0.2.2".parse().unwrap(),
        )
        .with_encr(EncrId::AES_CBC, &[9; 16])
        .with_integ(IntegId::HMAC_SHA1_96, &[9; 20]);
        assert_eq!(st.reserve(&cbc).unwrap(), None);
        st.reserve(&gcm(0x1001, 0xab)).unwrap();
        for f in std::fs::read_dir(d.join("seq")).unwrap() {
            let f = f.unwrap();
            let text = std::fs::read(f.path()).unwrap();
            assert!(!text.windows(4).any(|w| w == [0xab; 4]));
            let name = f.file_name().into_string().unwrap();
            assert!(!name.contains("abab"), "{name}");
            // The number, and the lock file beside it.
            let base = name.strip_suffix(".lock").unwrap_or(&name);
            let hex = base.strip_prefix(FILE_PREFIX).unwrap();
            assert_eq!(hex.len(), 32, "{name}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_damaged_file_is_an_error_not_a_fresh_start() {
        let d = dir("damaged");
        let mut st = SeqState::open(&d).unwrap();
        let sa = gcm(0x1001, 1);
        let file = d.join("seq").join(fingerprint(&sa).unwrap());
        std::fs::write(&file, "garbage").unwrap();
        let e = st.reserve(&sa).unwrap_err();
        assert!(
            matches!(&e, SeqStateError::NotANumber { path, text } if *path == file && text == "garbage"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "{}: not a sequence number: \"garbage\" (remove the file only if the SA's key \
                 was changed)",
                file.display()
            )
        );
        // Empty is damage too: a write never leaves a file empty.
        std::fs::write(&file, "").unwrap();
        assert!(matches!(
            st.reserve(&sa).unwrap_err(),
            SeqStateError::NotANumber { .. }
        ));
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A crash after writing the new number but before the rename leaves
    /// the old number, which still holds.
    #[test]
    fn a_leftover_new_file_changes_nothing() {
        let d = dir("leftover");
        let mut st = SeqState::open(&d).unwrap();
        let sa = gcm(0x1001, 2);
        assert_eq!(st.reserve(&sa).unwrap().unwrap().from, 0);
        let fp = fingerprint(&sa).unwrap();
        std::fs::write(d.join("seq").join(format!("{fp}.new")), "1").unwrap();
        assert_eq!(st.reserve(&sa).unwrap().unwrap().from, RESERVE);
        assert_eq!(
            std::fs::read_to_string(d.join("seq").join(&fp)).unwrap(),
            format!("{}\n", 2 * RESERVE)
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Whoever could remove a file could reset an SA's numbers: a state
    /// directory that group or others may write is refused, as is a link.
    #[test]
    fn the_state_directory_must_be_private() {
        use std::os::unix::fs::PermissionsExt;
        let d = dir("private");
        SeqState::open(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = SeqState::open(&d).err().unwrap();
        assert!(
            e.to_string().contains("group and others cannot write"),
            "{e}"
        );
        assert!(
            matches!(
                e,
                SeqStateError::NotPrivate {
                    found: EntryKind::Directory,
                    mode: 0o777,
                    ..
                }
            ),
            "{e:?}"
        );
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        let link = dir("private-link");
        std::os::unix::fs::symlink(&d, &link).unwrap();
        let e = SeqState::open(&link).err().unwrap();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(
            matches!(
                e,
                SeqStateError::NotPrivate {
                    found: EntryKind::SymbolicLink,
                    ..
                }
            ),
            "{e:?}"
        );
        std::fs::remove_file(&link).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }
}
