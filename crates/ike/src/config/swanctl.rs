//! What the swanctl.conf sections and keys mean (strongSwan 5.9.8
//! swanctl.conf(5) / `swanctl.opt`, `vici_config.c`, `load_creds.c`).
//!
//! ```text
//! connections.<conn>.version        0 | 2 (1: IKEv1, refused)        0
//!                   .local_addrs    comma list of AddrSpec           %any
//!                   .remote_addrs   comma list of AddrSpec           %any
//!                   .local_port     .remote_port                     500
//!                   .proposals      comma list, `default`            default
//!                   .encap          bool                             no
//!                   .dpd_delay      .dpd_timeout  duration           0s
//!                   .keyingtries    number (0 = forever)             1
//!                   .unique         never | no | keep | replace      no
//!                   .rekey_time     duration                         4h (0 if only reauth_time set)
//!                   .reauth_time    duration                         0s
//!                   .over_time      duration                         10% of max(rekey, reauth)
//!                   .rand_time      duration                         min(over_time, rekey-or-reauth / 2)
//!                   .local { auth = psk, id = IDENTITY }             (required)
//!                   .remote { auth = psk, id = IDENTITY }            (required; id %any)
//!                   .local/.remote: certs, cacerts, pubkeys (files in x509/, x509ca/, pubkey/),
//!                                   eap_id, revocation (see config/credentials.rs)
//!                   .children.<child>.local_ts, remote_ts            dynamic
//!                        .esp_proposals, ah_proposals               default (AEAD first), none
//!                        .mode            tunnel | transport         tunnel
//!                        .rekey_time      duration                   1h
//!                        .life_time       duration                   rekey_time + 10%
//!                        .rand_time       duration                   life_time - rekey_time
//!                        .rekey_bytes / life_bytes / rand_bytes     0, +10%, difference (k/M/G suffixes, 1024-based)
//!                        .rekey_packets / life_packets / rand_packets  same, plain numbers
//!                        .start_action    none | trap | start        none   (route = trap, restart = start, clear = none)
//!                        .dpd_action      clear | trap | restart     clear
//!                        .close_action    none | trap | start        none
//!                        .ipcomp          bool                       no
//!                        .replay_window   0 or 32..=4096             32
//!                        .per_cpu_sas     bool (`encap` refused)     no
//!                        .rekey_switch    loss-free | prefer-new | keep-old  loss-free
//!                                         (flowsec only, strongSwan rejects it; the
//!                                         other two reproduce study S2 and lose packets)
//! secrets.ike<suffix>.secret   "string" | 0xHEX | 0sBASE64
//!                    .id<suffix>   IDENTITY (none: %any)
//! secrets.rsa<suffix>.file, .secret<suffix>   an encrypted key of rsa/ and its passwords
//!        (ecdsa, pkcs8, private likewise; config/key_secret.rs)
//! authorities.<name>.cacert | file, crl_uris, ocsp_uris, cert_uri_base   (config/authority.rs)
//! ```
//!
//! Durations are a number of seconds or a number with `s`, `m`, `h` or `d`;
//! booleans `yes`/`true`/`enabled`/`1` or `no`/`false`/`disabled`/`0`;
//! keywords are matched without regard to case, as strongSwan does. An
//! empty value (`key =`) leaves the default.

use std::time::Duration;

use flowsec_ipsec::replay::{MAX_WINDOW, MIN_WINDOW};
use flowsec_ipsec::Mode;

use super::error::ConfigErrorKind;
use super::lexer::{join, Origin, Section, Setting};
use std::net::IpAddr;

use super::proposal::split_list;
use super::proposal::{
    default_esp_proposals, default_ike_proposals, parse_ah_proposals, parse_esp_proposals,
    parse_ike_proposals,
};
use super::value::{
    action, addr_list, addresses, keyword, names, parse_auth, parse_bool, parse_mode, parse_num,
    parse_port, same_as_default, ts_list, Act,
};
pub use super::value::{parse_bytes, parse_duration};
use super::{
    AddrSpec, AuthConfig, AuthKind, ChildConfig, CloseAction, Config, ConfigError, Connection,
    CredRef, DpdAction, Fragmentation, Identity, Pool, RedirectOn, RekeySwitch, SendCert,
    StartAction, TcpConfig, TcpEncap, TsSpec, Unique, TLS_PORT,
};

mod secrets;

use secrets::{gateways, ppk_id};

/// strongSwan keys accepted with any valid value and then ignored: they
/// only concern features flowsec does not have (IKEv1 modes, updown
/// scripts).
/// (section, key); the section is `conn`, `auth` or `child`.
pub const IGNORED_KEYS: &[(&str, &str)] = &[
    ("conn", "aggressive"),
    ("conn", "pull"),
    ("child", "updown"),
    ("child", "hostaccess"),
];

/// strongSwan keys accepted only with their strongSwan default value
/// (anything else would change behaviour flowsec does not implement):
/// (section, key, default).
pub const DEFAULT_ONLY_KEYS: &[(&str, &str, &str)] = &[
    ("conn", "dscp", "000000"),
    ("conn", "childless", "allow"),
    ("conn", "if_id_in", "0"),
    ("conn", "if_id_out", "0"),
    ("conn", "mediation", "no"),
    ("auth", "round", "0"),
    ("child", "policies", "yes"),
    ("child", "policies_fwd_out", "no"),
    ("child", "inactivity", "0"),
    ("child", "reqid", "0"),
    ("child", "priority", "0"),
    ("child", "sha256_96", "no"),
    ("child", "tfc_padding", "0"),
    ("child", "hw_offload", "no"),
    ("child", "copy_df", "yes"),
    ("child", "copy_ecn", "yes"),
    ("child", "copy_dscp", "out"),
    ("child", "mark_in", "0/0x00000000"),
    ("child", "mark_in_sa", "no"),
    ("child", "mark_out", "0/0x00000000"),
    ("child", "set_mark_in", "0/0x00000000"),
    ("child", "set_mark_out", "0/0x00000000"),
    ("child", "if_id_in", "0"),
    ("child", "if_id_out", "0"),
    ("child", "label_mode", "system"),
];

/// strongSwan's default IKE rekey time (`LFT_DEFAULT_IKE_REKEY_TIME`).
pub const DEFAULT_IKE_REKEY_TIME: Duration = Duration::from_secs(4 * 3600);
/// strongSwan's default Child SA rekey time
/// (`LFT_DEFAULT_CHILD_REKEY_TIME`).
pub const DEFAULT_CHILD_REKEY_TIME: Duration = Duration::from_secs(3600);
/// strongSwan's default IKE port.
pub const DEFAULT_PORT: u16 = 500;
/// strongSwan's default replay window (`charon.replay_window`).
pub const DEFAULT_REPLAY_WINDOW: u32 = 32;

/// Turns the settings tree into a [`Config`].
pub(crate) fn interpret(file: &str, root: &Section) -> Result<Config, ConfigError> {
    let cx = Reader {
        file,
        refs: Default::default(),
        pool_refs: Default::default(),
    };
    let mut config = Config::default();
    if let Some(s) = root.settings.first() {
        return Err(cx.err(s, s.key.clone(), ConfigErrorKind::UnknownTopLevelKey));
    }
    for sec in &root.sections {
        match sec.name.as_str() {
            "connections" => {
                cx.no_settings(sec, "connections")?;
                for c in &sec.sections {
                    let path = join("connections", &c.name);
                    config.connections.push(cx.connection(c, &path)?);
                }
            }
            "secrets" => {
                cx.no_settings(sec, "secrets")?;
                for s in &sec.sections {
                    if let Some(dir) = super::key_secret::key_type(&s.name) {
                        let k = super::key_secret::read(file, s, dir)?;
                        config.key_secrets.push(k);
                        continue;
                    }
                    if s.name.starts_with("ppk") {
                        config.ppk_secrets.push(cx.ppk_secret(s)?);
                        continue;
                    }
                    let secret = cx.secret(s)?;
                    if s.name.starts_with("eap") {
                        config.eap_secrets.push(secret);
                    } else {
                        config.secrets.push(secret);
                    }
                }
            }
            "pools" => {
                cx.no_settings(sec, "pools")?;
                for p in &sec.sections {
                    let pool = cx.pool(p)?;
                    cx.no_overlap(p, &pool, &config.pools)?;
                    config.pools.push(pool);
                }
            }
            "authorities" => config.authorities = super::authority::read(file, sec)?,
            _ => return Err(cx.err(sec, sec.name.clone(), ConfigErrorKind::UnknownSection)),
        }
    }
    config.cred_refs = cx.refs.take();
    let pool_lines = cx.pool_refs.take();
    for (c, line) in config.connections.iter().zip(pool_lines) {
        if let Some(missing) = c
            .pools
            .iter()
            .find(|n| !config.pools.iter().any(|p| &p.name == *n))
        {
            return Err(cx.err(
                line,
                format!("connections.{}.pools", c.name),
                ConfigErrorKind::UnknownPool(missing.clone()),
            ));
        }
    }
    Ok(config)
}

/// Reading one file: its name (errors name it) and what is checked once
/// the whole file is read.
struct Reader<'a> {
    file: &'a str,
    /// The files `certs`/`cacerts` name, with their lines.
    refs: std::cell::RefCell<Vec<CredRef>>,
    /// Each connection's `pools` line (0: none), in order.
    pool_refs: std::cell::RefCell<Vec<Origin>>,
}

/// The settings of one section with their values, empty values dropped.
fn values(sec: &Section) -> impl Iterator<Item = (&Setting, &str)> {
    sec.settings
        .iter()
        .filter_map(|s| s.value.as_deref().map(|v| (s, v)))
}

impl Reader<'_> {
    /// An error at `at` (a setting, a section or an [`Origin`]): in its
    /// file, the main one unless it came from an `include`.
    fn err(
        &self,
        at: impl Into<Origin>,
        key: String,
        kind: impl Into<ConfigErrorKind>,
    ) -> ConfigError {
        let at = at.into();
        ConfigError::new(at.file_or(self.file), at.line, key, kind.into())
    }

    fn no_settings(&self, sec: &Section, path: &str) -> Result<(), ConfigError> {
        match sec.settings.first() {
            Some(s) => Err(self.err(
                s,
                join(path, &s.key),
                ConfigErrorKind::SectionsOnly {
                    section: path.into(),
                },
            )),
            None => Ok(()),
        }
    }

    /// `kind` at the first subsection of `sec` if it has one (a section
    /// of settings only).
    fn no_sections(
        &self,
        sec: &Section,
        path: &str,
        kind: ConfigErrorKind,
    ) -> Result<(), ConfigError> {
        match sec.sections.first() {
            Some(sub) => Err(self.err(sub, join(path, &sub.name), kind)),
            None => Ok(()),
        }
    }

    /// Handles the ignored and default-only keys of `kind`; `Ok(true)` if
    /// `key` was one of them.
    fn common(&self, kind: &str, s: &Setting, v: &str, path: &str) -> Result<bool, ConfigError> {
        let here = || join(path, &s.key);
        if IGNORED_KEYS.contains(&(kind, s.key.as_str())) {
            let ok = match s.key.as_str() {
                "aggressive" | "pull" | "hostaccess" => parse_bool(v).map(|_| ()),
                _ => Ok(()),
            };
            ok.map_err(|e| self.err(s, here(), e))?;
            return Ok(true);
        }
        if let Some(&(_, _, default)) = DEFAULT_ONLY_KEYS
            .iter()
            .find(|(k, key, _)| *k == kind && *key == s.key)
        {
            if !same_as_default(v, default) {
                return Err(self.err(
                    s,
                    here(),
                    ConfigErrorKind::OnlyDefault {
                        value: v.into(),
                        default,
                    },
                ));
            }
            return Ok(true);
        }
        Ok(false)
    }

    fn connection(&self, sec: &Section, path: &str) -> Result<Connection, ConfigError> {
        let mut c = default_connection(&sec.name);
        let mut times = IkeTimes::default();
        let pools_line = values(sec)
            .find(|(s, _)| s.key == "pools")
            .map_or_else(Origin::default, |(s, _)| s.origin());
        self.pool_refs.borrow_mut().push(pools_line);
        for (s, v) in values(sec) {
            if self.common("conn", s, v, path)? {
                continue;
            }
            conn_setting(&mut c, &mut times, &s.key, v)
                .map_err(|e| self.err(s, join(path, &s.key), e))?;
        }
        times.apply(&mut c);
        self.conn_tcp(sec, &mut c, path)?;
        let (local, remote) = self.conn_sections(sec, path, &mut c.children)?;
        c.local = local;
        c.remote = remote;
        Ok(c)
    }

    /// A connection's subsections: `local` and `remote` (both required),
    /// and `children`, whose CHILD_SAs go into `children`.
    fn conn_sections(
        &self,
        sec: &Section,
        path: &str,
        children: &mut Vec<ChildConfig>,
    ) -> Result<(AuthConfig, AuthConfig), ConfigError> {
        let (mut local, mut remote) = (None, None);
        for sub in &sec.sections {
            let here = join(path, &sub.name);
            match sub.name.as_str() {
                "local" => local = Some(self.auth(sub, &here)?),
                "remote" => remote = Some(self.auth(sub, &here)?),
                "children" => {
                    self.no_settings(sub, &here)?;
                    for ch in &sub.sections {
                        let p = join(&here, &ch.name);
                        children.push(self.child(ch, &p)?);
                    }
                }
                n if n.starts_with("local") || n.starts_with("remote") => {
                    return Err(self.err(sub, here, ConfigErrorKind::AuthRounds))
                }
                _ => return Err(self.err(sub, here, ConfigErrorKind::UnknownSection)),
            }
        }
        let missing = |side: &'static str| {
            self.err(
                sec,
                join(path, side),
                ConfigErrorKind::MissingAuthSection { side },
            )
        };
        let (local, remote) = (
            local.ok_or_else(|| missing("local"))?,
            remote.ok_or_else(|| missing("remote"))?,
        );
        // RFC 7296 §2.16: EAP needs a responder authenticated by a
        // signature; a PSK-keyed AUTH sent to an unauthenticated initiator
        // lets it guess the key offline.
        if remote.auth == AuthKind::Eap && local.auth == AuthKind::Psk {
            let (line, key) = self.auth_line(sec, path, "local");
            return Err(self.err(line, key, ConfigErrorKind::EapWithPsk));
        }
        Ok((local, remote))
    }

    /// Where `side.auth` of a connection is set (its section if not), and
    /// its dotted key.
    fn auth_line(&self, sec: &Section, path: &str, side: &str) -> (Origin, String) {
        let key = join(&join(path, side), "auth");
        let Some(sub) = sec.sections.iter().find(|s| s.name == side) else {
            return (sec.origin(), key);
        };
        let line = values(sub).find(|(s, _)| s.key == "auth");
        (line.map_or(sub.origin(), |(s, _)| s.origin()), key)
    }

    fn auth(&self, sec: &Section, path: &str) -> Result<AuthConfig, ConfigError> {
        self.no_sections(sec, path, ConfigErrorKind::Certificates)?;
        // strongSwan's default: pubkey.
        let mut a = AuthConfig {
            auth: AuthKind::Pubkey(Default::default()),
            ..AuthConfig::psk(None)
        };
        for (s, v) in values(sec) {
            if self.common("auth", s, v, path)? {
                continue;
            }
            let key = join(path, &s.key);
            let r: Result<(), ConfigErrorKind> = match s.key.as_str() {
                "auth" => parse_auth(v).map(|k| a.auth = k).map_err(Into::into),
                "id" => Identity::parse(v)
                    .map(|i| a.id = Some(i))
                    .map_err(Into::into),
                "certs" | "cacerts" | "pubkeys" => match split_list(v) {
                    Err(e) => Err(ConfigErrorKind::List(e)),
                    Ok(files) => {
                        let dir = match s.key.as_str() {
                            "certs" => "x509",
                            "cacerts" => "x509ca",
                            _ => "pubkey",
                        };
                        self.refs.borrow_mut().extend(files.iter().map(|f| CredRef {
                            at: s.origin(),
                            key: key.clone(),
                            file: f.to_string(),
                            dir,
                        }));
                        let files = files.iter().map(|f| f.to_string()).collect();
                        match dir {
                            "x509" => a.certs = files,
                            "x509ca" => a.cacerts = files,
                            _ => a.pubkeys = files,
                        }
                        Ok(())
                    }
                },
                "eap_id" => Identity::parse(v)
                    .map(|i| a.eap_id = Some(i))
                    .map_err(Into::into),
                "revocation" => keyword(v, &["strict", "ifuri", "relaxed"])
                    .map(|k| a.revocation_strict = k == 0)
                    .map_err(Into::into),
                "ca_id" | "groups" | "cert_policy" | "aaa_id" | "xauth_id" => {
                    Err(ConfigErrorKind::PskOnly)
                }
                _ => Err(ConfigErrorKind::UnknownKey),
            };
            r.map_err(|e| self.err(s, key, e))?;
        }
        Ok(a)
    }

    fn child(&self, sec: &Section, path: &str) -> Result<ChildConfig, ConfigError> {
        self.no_sections(sec, path, ConfigErrorKind::UnknownSection)?;
        let mut ch = default_child(&sec.name);
        let mut limits = ChildLimits::default();
        for (s, v) in values(sec) {
            if self.common("child", s, v, path)? {
                continue;
            }
            child_setting(&mut ch, &mut limits, s, v)
                .map_err(|e| self.err(s, join(path, &s.key), e))?;
        }
        if !limits.esp_set && ch.ah_proposals.is_empty() {
            // children_sn(): AEAD default first when nothing is configured.
            ch.esp_proposals = default_esp_proposals().to_vec();
        }
        self.child_lifetimes(&mut ch, &limits, path)?;
        self.child_switch(sec, &ch, path)?;
        Ok(ch)
    }

    /// vici_config.c check_lifetimes(): each life at or above its rekey
    /// (default 110% of it), each rand within the difference (default all
    /// of it), for time, bytes and packets.
    fn child_lifetimes(
        &self,
        ch: &mut ChildConfig,
        limits: &ChildLimits,
        path: &str,
    ) -> Result<(), ConfigError> {
        let rekeys = [ch.rekey_time.as_secs(), ch.rekey_bytes, ch.rekey_packets];
        let names = ["life_time", "life_bytes", "life_packets"];
        let mut out = [(0u64, 0u64); 3];
        for i in 0..3 {
            let rekey = rekeys[i];
            let l = match &limits.life[i] {
                Some((l, line)) => {
                    let l = *l;
                    if l != 0 && l < rekey {
                        return Err(self.err(
                            line.clone(),
                            join(path, names[i]),
                            ConfigErrorKind::LifeBelowRekey { life: l, rekey },
                        ));
                    }
                    l
                }
                None => rekey.saturating_mul(110) / 100,
            };
            let r = limits.rand[i].unwrap_or(l - l.min(rekey));
            out[i] = (l, r);
        }
        ch.life_time = Duration::from_secs(out[0].0);
        ch.rand_time = Duration::from_secs(out[0].1);
        (ch.life_bytes, ch.rand_bytes) = out[1];
        (ch.life_packets, ch.rand_packets) = out[2];
        Ok(())
    }

    /// The TCP keys (RFC 9329) only with `tcp_encap` on, and not beside a
    /// forced UDP encapsulation; `tcp_port` defaults to 443 with TLS.
    fn conn_tcp(&self, sec: &Section, c: &mut Connection, path: &str) -> Result<(), ConfigError> {
        let line = |key: &str| {
            values(sec)
                .find(|(s, _)| s.key == key)
                .map(|(s, _)| s.origin())
        };
        let fail = |key: &str, kind| {
            Err(self.err(line(key).unwrap_or(sec.origin()), join(path, key), kind))
        };
        if !c.redirect_load.is_empty() && c.redirect_load.len() != c.redirect_to.len() {
            let why =
                "redirect_load names one vici socket per redirect_to gateway, in the same order";
            return fail("redirect_load", ConfigErrorKind::RedirectLoad(why));
        }
        if c.redirect_load.iter().any(|u| !u.starts_with("unix://")) {
            let why = "redirect_load takes unix://PATH vici sockets";
            return fail("redirect_load", ConfigErrorKind::RedirectLoad(why));
        }
        if c.tcp.encap == TcpEncap::No {
            for key in ["tcp_port", "tcp_tls", "tcp_fallback_time"] {
                if line(key).is_some() {
                    return fail(key, ConfigErrorKind::TcpKeyWithoutTcp);
                }
            }
            return Ok(());
        }
        if line("tcp_fallback_time").is_some() && c.tcp.encap != TcpEncap::Fallback {
            return fail("tcp_fallback_time", ConfigErrorKind::TcpFallbackTime);
        }
        if c.tcp.encap == TcpEncap::Fallback && c.tcp.fallback_after.is_zero() {
            return fail("tcp_fallback_time", ConfigErrorKind::TcpFallbackTime);
        }
        if c.encap && c.tcp.encap == TcpEncap::Yes {
            return fail("encap", ConfigErrorKind::TcpForcedUdp);
        }
        if c.tcp.tls && line("tcp_port").is_none() {
            c.tcp.port = TLS_PORT;
        }
        Ok(())
    }

    /// `rekey_switch` other than `loss-free` is for reproducing study S2:
    /// `keep-old` removes an old SA at its hard lifetime, so it needs one;
    /// neither touches per-resource SAs (RFC 9611), whose handover stays
    /// the loss-free one.
    fn child_switch(&self, sec: &Section, ch: &ChildConfig, path: &str) -> Result<(), ConfigError> {
        let Some((s, _)) = values(sec).find(|(s, _)| s.key == "rekey_switch") else {
            return Ok(());
        };
        let kind = if ch.rekey_switch == RekeySwitch::KeepOld && ch.life_time.is_zero() {
            ConfigErrorKind::KeepOldForever
        } else if ch.rekey_switch != RekeySwitch::LossFree && ch.per_cpu_sas {
            ConfigErrorKind::SwitchPerCpu
        } else {
            return Ok(());
        };
        Err(self.err(s, join(path, "rekey_switch"), kind))
    }

    /// A `pools.NAME` section: `addrs` (required) and `dns`.
    fn pool(&self, sec: &Section) -> Result<Pool, ConfigError> {
        let path = join("pools", &sec.name);
        self.no_sections(sec, &path, ConfigErrorKind::UnknownSection)?;
        let (mut range, mut dns) = (None, Vec::new());
        for (s, v) in values(sec) {
            let here = join(&path, &s.key);
            let r = match s.key.as_str() {
                "addrs" => pool_range(v).map(|r| range = Some(r)),
                "dns" => split_list(v).map_err(ConfigErrorKind::List).and_then(|l| {
                    for a in l {
                        dns.push(
                            a.parse::<IpAddr>()
                                .map_err(|_| ConfigErrorKind::BadAddress(a.to_string()))?,
                        );
                    }
                    Ok(())
                }),
                "nbns" | "dhcp" | "netmask" | "server" | "subnet" | "split_include"
                | "split_exclude" => Err(ConfigErrorKind::PoolAttribute),
                _ => Err(ConfigErrorKind::UnknownKey),
            };
            r.map_err(|e| self.err(s, here, e))?;
        }
        let (first, last) = range.ok_or_else(|| {
            self.err(sec, join(&path, "addrs"), ConfigErrorKind::PoolWithoutAddrs)
        })?;
        Ok(Pool {
            name: sec.name.clone(),
            first,
            last,
            dns,
        })
    }

    /// Two pools with a common address would hand it out twice (their
    /// leases are kept apart).
    fn no_overlap(&self, sec: &Section, pool: &Pool, pools: &[Pool]) -> Result<(), ConfigError> {
        use crate::pool::to_u128;
        let (first, last) = (to_u128(pool.first), to_u128(pool.last));
        let v4 = pool.first.is_ipv4();
        let Some(other) = pools.iter().find(|p| {
            p.first.is_ipv4() == v4 && to_u128(p.first) <= last && first <= to_u128(p.last)
        }) else {
            return Ok(());
        };
        let line = values(sec)
            .find(|(s, _)| s.key == "addrs")
            .map_or(sec.origin(), |(s, _)| s.origin());
        Err(self.err(
            line,
            join(&join("pools", &sec.name), "addrs"),
            ConfigErrorKind::PoolOverlap {
                other: other.name.clone(),
            },
        ))
    }
}

/// A connection named `name` with strongSwan's defaults (its lifetimes
/// are set by [`IkeTimes::apply`], its `local` and `remote` by their
/// sections).
fn default_connection(name: &str) -> Connection {
    Connection {
        name: name.to_string(),
        version: 0,
        local_addrs: vec![AddrSpec::Any],
        remote_addrs: vec![AddrSpec::Any],
        local_port: DEFAULT_PORT,
        remote_port: DEFAULT_PORT,
        proposals: default_ike_proposals().to_vec(),
        local: AuthConfig::psk(None),
        remote: AuthConfig::psk(None),
        children: Vec::new(),
        rekey_time: Duration::ZERO,
        reauth_time: Duration::ZERO,
        over_time: Duration::ZERO,
        rand_time: Duration::ZERO,
        dpd_delay: Duration::ZERO,
        dpd_timeout: Duration::ZERO,
        encap: false,
        mobike: true,
        keyingtries: 1,
        unique: Unique::No,
        tcp: TcpConfig::default(),
        fragmentation: Fragmentation::Yes,
        send_cert: SendCert::IfAsked,
        send_certreq: true,
        vips: Vec::new(),
        pools: Vec::new(),
        ppk_id: None,
        ppk_required: false,
        redirect_to: Vec::new(),
        redirect_on: RedirectOn::Init,
        redirect_load: Vec::new(),
    }
}

/// A connection's IKE lifetimes as given, each `None` where unset.
#[derive(Default)]
struct IkeTimes {
    rekey: Option<Duration>,
    reauth: Option<Duration>,
    over: Option<Duration>,
    rand: Option<Duration>,
}

impl IkeTimes {
    /// vici_config.c peer_sn(): the IKE lifetime defaults.
    fn apply(self, c: &mut Connection) {
        let (rekey_time, reauth_time) = match (self.rekey, self.reauth) {
            (None, None) => (DEFAULT_IKE_REKEY_TIME, Duration::ZERO),
            (r, a) => (r.unwrap_or_default(), a.unwrap_or_default()),
        };
        c.rekey_time = rekey_time;
        c.reauth_time = reauth_time;
        c.over_time = self.over.unwrap_or(rekey_time.max(reauth_time) / 10);
        c.rand_time = self.rand.unwrap_or_else(|| {
            let base = if !rekey_time.is_zero() && !reauth_time.is_zero() {
                rekey_time.min(reauth_time)
            } else {
                rekey_time.max(reauth_time)
            };
            c.over_time.min(base / 2)
        });
    }
}

/// One `connections.<conn>` key (not an ignored or default-only one)
/// with its value, into `c` or, for the lifetimes, `times`.
fn conn_setting(
    c: &mut Connection,
    times: &mut IkeTimes,
    key: &str,
    v: &str,
) -> Result<(), ConfigErrorKind> {
    match key {
        "version" => {
            c.version = match v {
                "0" => 0,
                "2" => 2,
                "1" => return Err(ConfigErrorKind::Ikev1),
                _ => return Err(ConfigErrorKind::BadVersion { value: v.into() }),
            }
        }
        "local_addrs" => c.local_addrs = addr_list(v)?,
        "remote_addrs" => c.remote_addrs = addr_list(v)?,
        "local_port" => c.local_port = parse_port(v)?,
        "remote_port" => c.remote_port = parse_port(v)?,
        "proposals" => c.proposals = parse_ike_proposals(v)?,
        "encap" => c.encap = parse_bool(v)?,
        "mobike" => c.mobike = parse_bool(v)?,
        "send_cert" => {
            c.send_cert = match keyword(v, &["ifasked", "always", "never"])? {
                0 => SendCert::IfAsked,
                1 => SendCert::Always,
                _ => SendCert::Never,
            }
        }
        "send_certreq" => c.send_certreq = parse_bool(v)?,
        "fragmentation" => {
            c.fragmentation = match keyword(v, &["yes", "accept", "force", "no"])? {
                0 => Fragmentation::Yes,
                1 => Fragmentation::Accept,
                2 => Fragmentation::Force,
                _ => Fragmentation::No,
            }
        }
        "tcp_encap" => {
            c.tcp.encap = match keyword(v, &["no", "yes", "fallback"])? {
                0 => TcpEncap::No,
                1 => TcpEncap::Yes,
                _ => TcpEncap::Fallback,
            }
        }
        "tcp_port" => c.tcp.port = parse_port(v)?,
        "tcp_tls" => c.tcp.tls = parse_bool(v)?,
        "tcp_fallback_time" => c.tcp.fallback_after = parse_duration(v)?,
        "dpd_delay" => c.dpd_delay = parse_duration(v)?,
        "dpd_timeout" => c.dpd_timeout = parse_duration(v)?,
        "keyingtries" => c.keyingtries = parse_num(v)?,
        "unique" => {
            c.unique = match keyword(v, &["never", "no", "keep", "replace"])? {
                0 => Unique::Never,
                1 => Unique::No,
                2 => Unique::Keep,
                _ => Unique::Replace,
            }
        }
        "rekey_time" => times.rekey = Some(parse_duration(v)?),
        "reauth_time" => times.reauth = Some(parse_duration(v)?),
        "over_time" => times.over = Some(parse_duration(v)?),
        "rand_time" => times.rand = Some(parse_duration(v)?),
        "vips" => c.vips = addresses(v)?,
        "pools" => c.pools = names(v)?,
        "ppk_id" => c.ppk_id = Some(ppk_id(v)?),
        "ppk_required" => c.ppk_required = parse_bool(v)?,
        "redirect_to" => c.redirect_to = gateways(v)?,
        "redirect_on" => {
            c.redirect_on = match keyword(v, &["init", "auth"])? {
                0 => RedirectOn::Init,
                _ => RedirectOn::Auth,
            }
        }
        "redirect_load" => c.redirect_load = names(v)?,
        "mediated_by" | "mediation_peer" => return Err(ConfigErrorKind::KeyNotSupported),
        _ => return Err(ConfigErrorKind::UnknownKey),
    }
    Ok(())
}

/// A CHILD_SA named `name` with strongSwan's defaults (its life and rand
/// limits are set by [`Reader::child_lifetimes`]).
fn default_child(name: &str) -> ChildConfig {
    ChildConfig {
        name: name.to_string(),
        local_ts: vec![TsSpec::Dynamic],
        remote_ts: vec![TsSpec::Dynamic],
        esp_proposals: Vec::new(),
        ah_proposals: Vec::new(),
        mode: Mode::Tunnel,
        rekey_time: DEFAULT_CHILD_REKEY_TIME,
        life_time: Duration::ZERO,
        rand_time: Duration::ZERO,
        rekey_bytes: 0,
        life_bytes: 0,
        rand_bytes: 0,
        rekey_packets: 0,
        life_packets: 0,
        rand_packets: 0,
        start_action: StartAction::None,
        dpd_action: DpdAction::Clear,
        close_action: CloseAction::None,
        ipcomp: false,
        replay_window: DEFAULT_REPLAY_WINDOW,
        per_cpu_sas: false,
        rekey_switch: RekeySwitch::LossFree,
    }
}

/// What a child's keys said that its defaults depend on: whether
/// `esp_proposals` was given; life and rand of time (seconds), bytes and
/// packets, each life with its line.
#[derive(Default)]
struct ChildLimits {
    esp_set: bool,
    life: [Option<(u64, Origin)>; 3],
    rand: [Option<u64>; 3],
}

/// One `children.<child>` key (not an ignored or default-only one) with
/// its value, into `ch` or, for the limits with derived defaults, `limits`.
fn child_setting(
    ch: &mut ChildConfig,
    limits: &mut ChildLimits,
    s: &Setting,
    v: &str,
) -> Result<(), ConfigErrorKind> {
    let secs = |v: &str| parse_duration(v).map(|d| d.as_secs());
    match s.key.as_str() {
        "local_ts" => ch.local_ts = ts_list(v)?,
        "remote_ts" => ch.remote_ts = ts_list(v)?,
        "esp_proposals" => {
            ch.esp_proposals = parse_esp_proposals(v)?;
            limits.esp_set = true;
        }
        "ah_proposals" => ch.ah_proposals = parse_ah_proposals(v)?,
        "mode" => ch.mode = parse_mode(v)?,
        "rekey_time" => ch.rekey_time = parse_duration(v)?,
        "life_time" => limits.life[0] = Some((secs(v)?, s.origin())),
        "rand_time" => limits.rand[0] = Some(secs(v)?),
        "rekey_bytes" => ch.rekey_bytes = parse_bytes(v)?,
        "life_bytes" => limits.life[1] = Some((parse_bytes(v)?, s.origin())),
        "rand_bytes" => limits.rand[1] = Some(parse_bytes(v)?),
        "rekey_packets" => ch.rekey_packets = parse_num(v)?,
        "life_packets" => limits.life[2] = Some((parse_num(v)?, s.origin())),
        "rand_packets" => limits.rand[2] = Some(parse_num(v)?),
        "start_action" => {
            ch.start_action = match action(v)? {
                Act::None => StartAction::None,
                Act::Start => StartAction::Start,
                Act::Trap => StartAction::Trap,
            }
        }
        "dpd_action" => {
            ch.dpd_action = match action(v)? {
                Act::None => DpdAction::Clear,
                Act::Start => DpdAction::Restart,
                Act::Trap => DpdAction::Trap,
            }
        }
        "close_action" => {
            ch.close_action = match action(v)? {
                Act::None => CloseAction::None,
                Act::Start => CloseAction::Start,
                Act::Trap => CloseAction::Trap,
            }
        }
        "ipcomp" => ch.ipcomp = parse_bool(v)?,
        "replay_window" => {
            let n: u32 = parse_num(v)?;
            if n != 0 && !(MIN_WINDOW..=MAX_WINDOW).contains(&n) {
                return Err(ConfigErrorKind::ReplayWindow { packets: n });
            }
            ch.replay_window = n;
        }
        // strongSwan's `encap` (a random UDP source port per SA, for RSS)
        // is neither negotiated nor needed here: the SPI steers.
        "per_cpu_sas" if v.trim() == "encap" => return Err(ConfigErrorKind::PerCpuEncap),
        "per_cpu_sas" => ch.per_cpu_sas = parse_bool(v)?,
        "rekey_switch" => {
            ch.rekey_switch = match keyword(v.trim(), &["loss-free", "prefer-new", "keep-old"])? {
                0 => RekeySwitch::LossFree,
                1 => RekeySwitch::PreferNew,
                _ => RekeySwitch::KeepOld,
            }
        }
        "interface" | "label" => return Err(ConfigErrorKind::OnlyUnset),
        _ => return Err(ConfigErrorKind::UnknownKey),
    }
    Ok(())
}

/// A pool's `addrs`: `10.3.0.0/24` (without the network and broadcast
/// address, as strongSwan hands them out; an IPv6 prefix without its
/// first), `10.3.0.1-10.3.0.100`, or one address.
fn pool_range(v: &str) -> Result<(IpAddr, IpAddr), ConfigErrorKind> {
    use crate::pool::{from_u128, to_u128};
    let bad = || ConfigErrorKind::BadAddress(v.to_string());
    if let Some((a, b)) = v.split_once('-') {
        let (a, b): (IpAddr, IpAddr) = (
            a.trim().parse().map_err(|_| bad())?,
            b.trim().parse().map_err(|_| bad())?,
        );
        if a.is_ipv4() != b.is_ipv4() || to_u128(a) > to_u128(b) {
            return Err(bad());
        }
        return Ok((a, b));
    }
    if let Some((a, len)) = v.split_once('/') {
        let a: IpAddr = a.trim().parse().map_err(|_| bad())?;
        let bits: u32 = if a.is_ipv4() { 32 } else { 128 };
        let len: u32 = len.trim().parse().map_err(|_| bad())?;
        if len > bits {
            return Err(bad());
        }
        let host_bits = bits - len;
        let mask: u128 = if host_bits == 128 {
            u128::MAX
        } else {
            (1u128 << host_bits) - 1
        };
        let net = to_u128(a) & !mask;
        let top = net | mask;
        let (first, last) = match (a.is_ipv4(), host_bits) {
            (_, 0) => (net, net),
            (true, 1) => (net, top),
            (true, _) => (net + 1, top - 1),
            (false, _) => (net + 1, top),
        };
        let v4 = a.is_ipv4();
        return Ok((from_u128(first, v4), from_u128(last, v4)));
    }
    let a: IpAddr = v.trim().parse().map_err(|_| bad())?;
    Ok((a, a))
}
