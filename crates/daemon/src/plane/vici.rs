//! vici's commands, answered by the control plane (vici README,
//! "Client-initiated commands"): what charon answers, with its key names,
//! from flowsec's model, IKE core and workers' counters. Loading goes
//! through the same reload as `flowsec ctl reload`: a connection loaded
//! again unchanged keeps its SAs.

use std::time::Duration;

use flowsec_ike::config::Config;
use flowsec_wire::vici::Section;

use super::vici_events::{Pending, PendingKind};
use super::Plane;
use crate::answers::{Answer, Counters, Request as CtlRequest};
use crate::vici::messages::{self, failure, success};
use crate::vici::{LoadError, Loaded, Request, Server};

/// The longest an `initiate` or `terminate` waits for IKE.
const MAX_WAIT: Duration = Duration::from_secs(300);

/// Why loaded configuration was not applied (answered as `errmsg`).
#[derive(Debug)]
pub(super) enum ApplyError {
    /// The message was refused.
    Load(LoadError),
    /// The configuration it makes was refused (FILE:LINE: … of the
    /// interpreter; the file is `vici`).
    Config(flowsec_ike::config::ConfigError),
    /// A vici connection has the name of one of the `-c` file.
    Duplicate(String),
    /// The daemon runs without IKE.
    NoIke,
    /// A connection wants TCP this daemon cannot serve.
    Tcp(String),
}

impl core::fmt::Display for ApplyError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ApplyError::Load(e) => e.fmt(f),
            ApplyError::Config(e) => e.fmt(f),
            ApplyError::Duplicate(n) => {
                write!(f, "connection {n:?} is defined in the -c file already")
            }
            ApplyError::NoIke => f.write_str(
                "this daemon runs without IKE: start it with -c FILE or with --vici given",
            ),
            ApplyError::Tcp(e) => f.write_str(e),
        }
    }
}

/// The `-c` file's configuration with what vici loaded: connections of
/// both (a name in both is refused), secrets and pools of both.
pub(super) fn merged(file: Option<&Config>, loaded: &Loaded) -> Result<Config, ApplyError> {
    let vici =
        flowsec_ike::config::from_tree("vici", &loaded.tree()).map_err(ApplyError::Config)?;
    let mut config = file.cloned().unwrap_or_default();
    if let Some(c) = vici
        .connections
        .iter()
        .find(|c| config.connection(&c.name).is_some())
    {
        return Err(ApplyError::Duplicate(c.name.clone()));
    }
    config.credentials = config.credentials.merged(&loaded.credentials());
    config.connections.extend(vici.connections);
    config.secrets.extend(vici.secrets);
    config.eap_secrets.extend(vici.eap_secrets);
    config.ppk_secrets.extend(vici.ppk_secrets);
    config.pools.extend(vici.pools);
    Ok(config)
}

impl Plane {
    /// Answer one request (or leave it pending: `initiate`, `terminate`).
    pub(super) fn vici_request(&mut self, server: &mut Server, r: Request) {
        let Request {
            client,
            command,
            message: mut m,
        } = r;
        self.vici_answer(server, client, &command, &m);
        // `load-shared` carries a key, `load-conn` may carry an EAP or
        // PSK id: nothing of a request outlives it.
        crate::vici::client::wipe(&mut m);
    }

    /// [`Plane::vici_request`]'s answer.
    fn vici_answer(&mut self, server: &mut Server, client: u64, command: &str, m: &Section) {
        let answer = match command {
            "version" => version(),
            "stats" => self.vici_stats(),
            // strongswan.conf has no counterpart: flowsec's settings are
            // its command line.
            "reload-settings" => success(),
            "initiate" | "terminate" => return self.vici_start(server, client, command, m),
            "rekey" => self.vici_rekey(m),
            "redirect" => self.vici_redirect(m),
            "install" | "uninstall" => failure(format!(
                "{command}: trap policies come from start_action = trap in flowsec"
            )),
            "list-sas" => self.vici_list_sas(server, client, m),
            "list-conns" => self.vici_list_conns(server, client, m),
            "get-conns" => Section::default().with_list("conns", bytes(self.loaded.conn_names())),
            "list-certs" => self.vici_list_certs(server, client, m),
            "list-policies" => self.vici_list_policies(server, client, m),
            "list-authorities" => self.vici_list_authorities(server, client, m),
            "get-authorities" => Section::default().with_list(
                "authorities",
                bytes(self.loaded.authorities().iter().map(|a| &a.name)),
            ),
            "load-authority" => self.vici_load(|l| l.with_authority(m)),
            "unload-authority" => self.vici_unload(m, "name", Loaded::without_authority),
            "get-keys" => Section::default().with_list("keys", bytes(self.loaded.key_ids())),
            "get-shared" => Section::default().with_list("keys", bytes(self.loaded.shared_ids())),
            "get-pools" => self.vici_pools(),
            "load-conn" => self.vici_load(|l| l.with_conn(m)),
            "load-shared" => self.vici_load(|l| l.with_shared(m)),
            "load-pool" => self.vici_load(|l| l.with_pool(m)),
            "unload-conn" => self.vici_unload(m, "name", Loaded::without_conn),
            "unload-shared" => self.vici_unload(m, "id", Loaded::without_shared),
            "unload-pool" => self.vici_unload(m, "name", Loaded::without_pool),
            "clear-creds" => self.vici_load(|l| Ok(l.without_credentials())),
            "flush-certs" => success(),
            "load-cert" => self.vici_load(|l| l.with_cert(m)),
            "load-key" => self.vici_load_key(m),
            "unload-key" => self.vici_unload(m, "id", Loaded::without_key),
            "load-token" => failure("load-token: PKCS#11 tokens are not supported by flowsec"),
            "get-algorithms" => algorithms(),
            "get-counters" => self.vici_counters(m),
            "reset-counters" => self.vici_reset_counters(m),
            _ => match CtlRequest::from_vici(command, m) {
                Some(request) => self.vici_flowsec(server, request),
                None => return server.unknown(client),
            },
        };
        server.respond(client, answer);
    }

    /// `load-*`: the store as `change` makes it, applied whole or not at
    /// all.
    fn vici_load(&mut self, change: impl FnOnce(&Loaded) -> Result<Loaded, LoadError>) -> Section {
        match change(&self.loaded)
            .map_err(ApplyError::Load)
            .and_then(|next| self.apply_loaded(next))
        {
            Ok(()) => success(),
            Err(e) => failure(e),
        }
    }

    /// flowsec's own commands (`flowsec-sas`, …): the typed answer
    /// (crate::answers) as a vici message, or charon's failure.
    fn vici_flowsec(
        &mut self,
        server: &Server,
        request: Result<CtlRequest, crate::answers::MissingText>,
    ) -> Section {
        let answer = self.answer_vici(request);
        let answer = match answer {
            // The server is out of `self` while it asks.
            Ok(Answer::Stats(mut s)) => {
                s.vici = Some(Counters::of(server.counters.named()));
                Answer::Stats(s)
            }
            Ok(a) => a,
            Err(e) => return failure(e),
        };
        match crate::vici::format::to_section(&answer) {
            Ok(s) => s,
            Err(e) => failure(e),
        }
    }

    /// `load-key`: answered with the key's id.
    fn vici_load_key(&mut self, m: &Section) -> Section {
        let loaded = self.loaded.with_key(&self.provider, m);
        match loaded.map_err(ApplyError::Load) {
            Ok((next, id)) => match self.apply_loaded(next) {
                Ok(()) => success().with("id", id),
                Err(e) => failure(e),
            },
            Err(e) => failure(e),
        }
    }

    /// `unload-*`: by the name under `key`.
    fn vici_unload(
        &mut self,
        m: &Section,
        key: &str,
        without: fn(&Loaded, &str) -> Option<Loaded>,
    ) -> Section {
        let Some(name) = m.str(key) else {
            return failure(format!("missing {key}"));
        };
        match without(&self.loaded, name) {
            Some(next) => match self.apply_loaded(next) {
                Ok(()) => success(),
                Err(e) => failure(e),
            },
            None => failure(format!("{name} not found")),
        }
    }

    /// Make `next` the loaded configuration: merged with the `-c` file's,
    /// checked whole, and applied as a reload.
    pub(super) fn apply_loaded(&mut self, next: Loaded) -> Result<(), ApplyError> {
        if self.ike.is_none() {
            return Err(ApplyError::NoIke);
        }
        let config = merged(self.file_config.as_ref(), &next)?;
        self.check_streams(&config)
            .map_err(|e| ApplyError::Tcp(e.to_string()))?;
        let r = self.ike_step(|p, now, k| p.ike.reload(now, config, k));
        if let Some(r) = r {
            tracing::info!(target: "cfg", "vici: {r}");
        }
        self.loaded = next;
        Ok(())
    }

    /// `initiate` and `terminate`: started now, answered when done (or at
    /// `timeout` ms; 0 waits as long as it takes, -1 answers at once).
    fn vici_start(&mut self, server: &mut Server, client: u64, command: &str, m: &Section) {
        let (ike, child) = (
            m.str("ike").map(String::from),
            m.str("child").map(String::from),
        );
        let ike = ike.or_else(|| m.str("ike-id").map(|i| format!("#{i}")));
        let timeout: i64 = m.str("timeout").and_then(|t| t.parse().ok()).unwrap_or(0);
        let initiate = command == "initiate";
        let done = self.ike_step(|p, now, k| {
            if initiate {
                p.ike
                    .initiate(now, ike.as_deref(), child.as_deref(), k)
                    .map(|()| 1)
            } else {
                p.ike.terminate(now, ike.as_deref(), child.as_deref(), k)
            }
        });
        let n = match done {
            None => return server.respond(client, failure(ApplyError::NoIke)),
            Some(Err(e)) => return server.respond(client, failure(e)),
            Some(Ok(n)) => n,
        };
        if timeout < 0 {
            let mut answer = success();
            if !initiate {
                answer = answer
                    .with("matches", n.to_string())
                    .with("terminated", n.to_string());
            }
            return server.respond(client, answer);
        }
        let now = self.start.elapsed();
        let kind = if initiate {
            // IKE's failures name the connection, not the child: the
            // connection the child was started from.
            let ike = ike.or_else(|| self.conn_of(child.as_deref()?));
            PendingKind::Initiate { ike, child }
        } else {
            PendingKind::Terminate {
                ike,
                child,
                matched: n,
            }
        };
        // `timeout = 0` waits "indefinitely" in charon; IKE gives up long
        // before MAX_WAIT (its retransmissions), a command that starts
        // nothing new (a child up already) would not.
        let wait = match timeout {
            0 => MAX_WAIT,
            ms => Duration::from_millis(ms as u64).min(MAX_WAIT),
        };
        self.pending.push(Pending {
            client,
            kind,
            deadline: Some(now + wait),
        });
    }

    /// The first connection with a child config named `child` (the one
    /// `initiate` starts it from).
    fn conn_of(&self, child: &str) -> Option<String> {
        let ike = self.ike.as_ref()?;
        ike.ike
            .connections()
            .iter()
            .find(|c| c.children.iter().any(|ch| ch.name == child))
            .map(|c| c.name.clone())
    }

    /// `rekey`: queued now (charon answers at once too).
    fn vici_rekey(&mut self, m: &Section) -> Section {
        let ike = m
            .str("ike")
            .map(String::from)
            .or_else(|| m.str("ike-id").map(|i| format!("#{i}")));
        let child = m.str("child").map(String::from);
        let done = self.ike_step(|p, now, k| p.ike.rekey(now, ike.as_deref(), child.as_deref(), k));
        match done {
            None => failure(ApplyError::NoIke),
            Some(Err(e)) => failure(e),
            Some(Ok(n)) => success().with("matches", n.to_string()),
        }
    }

    /// `redirect` (RFC 5685): the IKE SAs the selectors match (`ike`,
    /// `ike-id`, `peer-ip`, `peer-id`; all given must match) sent to
    /// `gateway`, as charon's vici_control.c: its words on refusal.
    fn vici_redirect(&mut self, m: &Section) -> Section {
        let Some(gateway) = m.str("gateway") else {
            return failure("missing target gateway");
        };
        let Ok(gateway) = gateway.parse::<flowsec_ike::GatewayId>() else {
            return failure("unsupported gateway identity");
        };
        let ike_id = match m.str("ike-id").map(str::parse::<u32>) {
            Some(Ok(id)) => Some(id),
            Some(Err(_)) => return failure("invalid IKE_SA unique identifier"),
            None => None,
        };
        let select = flowsec_ike::RedirectSelector {
            ike: m.str("ike").map(String::from),
            ike_id,
            peer_ip: m.str("peer-ip").map(String::from),
            peer_id: m.str("peer-id").map(String::from),
        };
        match self.ike_step(|p, now, k| p.ike.redirect(now, &select, &gateway, k)) {
            None => failure(ApplyError::NoIke),
            Some(Err(e)) => failure(e),
            Some(Ok(n)) => success().with("matches", n.to_string()),
        }
    }

    /// `list-sas`: one `list-sa` event per IKE SA, then an empty answer.
    fn vici_list_sas(&mut self, server: &mut Server, client: u64, m: &Section) -> Section {
        let (ike, ike_id) = (m.str("ike"), m.str("ike-id"));
        let child = m.str("child");
        let seen = self.seen();
        for sa in self.ike_sas() {
            let wanted =
                ike.is_none_or(|n| n == sa.name) && ike_id.is_none_or(|i| i == sa.uid.to_string());
            if wanted {
                let body = self.ike_sa_with_children(&sa, child, &seen);
                server.stream(
                    client,
                    "list-sa",
                    Section::default().with_section(&sa.name, body),
                );
            }
        }
        Section::default()
    }

    /// `list-conns`: one `list-conn` event per connection.
    fn vici_list_conns(&mut self, server: &mut Server, client: u64, m: &Section) -> Section {
        let only = m.str("ike");
        let conns: Vec<_> = self
            .ike
            .as_ref()
            .map(|i| i.ike.connections().to_vec())
            .unwrap_or_default();
        for c in conns.iter().filter(|c| only.is_none_or(|n| n == c.name)) {
            let body = messages::connection(c);
            server.stream(
                client,
                "list-conn",
                Section::default().with_section(&c.name, body),
            );
        }
        Section::default()
    }

    /// `list-certs`: one `list-cert` event per X.509 certificate (filter
    /// `flag`: NONE for end-entity and intermediates, CA for trust
    /// anchors; `type` other than X509/ANY lists none).
    fn vici_list_certs(&mut self, server: &mut Server, client: u64, m: &Section) -> Section {
        let Some(ike) = &self.ike else {
            return Section::default();
        };
        let ty = m.str("type").unwrap_or("ANY").to_ascii_uppercase();
        if ty != "ANY" && ty != "X509" {
            return Section::default();
        }
        let flag = m.str("flag").unwrap_or("ANY").to_ascii_uppercase();
        let creds = ike.ike.credentials();
        let certs = creds
            .certs()
            .map(|c| (c, "NONE"))
            .chain(creds.cas().map(|c| (c, "CA")));
        for (cert, f) in certs.filter(|(_, f)| flag == "ANY" || flag == *f) {
            let mut e = Section::default().with("type", "X509").with("flag", f);
            if creds.key_for(cert).is_some() {
                e = e.with("has_privkey", "yes");
            }
            server.stream(client, "list-cert", e.with("data", cert.der.clone()));
        }
        Section::default()
    }

    /// `list-authorities`: one `list-authority` event per authority
    /// loaded over vici (those of the `-c` file are its trust anchors,
    /// listed by `list-certs`), filtered by `name`.
    fn vici_list_authorities(&mut self, server: &mut Server, client: u64, m: &Section) -> Section {
        for a in self.loaded.authorities() {
            if m.str("name").is_some_and(|n| n != a.name) {
                continue;
            }
            let mut body = Section::default()
                .with("cacert", a.cert.subject_text())
                .with_list("crl_uris", bytes(&a.crl_uris))
                .with_list("ocsp_uris", bytes(&a.ocsp_uris));
            if let Some(base) = &a.cert_uri_base {
                body = body.with("cert_uri_base", base.as_str());
            }
            let event = Section::default().with_section(&a.name, body);
            server.stream(client, "list-authority", event);
        }
        Section::default()
    }

    /// `list-policies`: one `list-policy` event per trap policy (`trap =
    /// yes` or no filter; flowsec installs no bypass or drop policies from
    /// a configuration), keyed `IKE/CHILD`, filtered by `ike` and `child`.
    fn vici_list_policies(&mut self, server: &mut Server, client: u64, m: &Section) -> Section {
        let Some(ike) = &self.ike else {
            return Section::default();
        };
        let kinds = ["drop", "pass", "trap"].map(|k| m.str(k) == Some("yes"));
        if kinds.iter().any(|k| *k) && !kinds[2] {
            return Section::default();
        }
        for (conn, index) in ike.ike.traps() {
            let Some(ch) = conn.children.get(index) else {
                continue;
            };
            let wanted = m.str("ike").is_none_or(|n| n == conn.name)
                && m.str("child").is_none_or(|n| n == ch.name);
            if wanted {
                let body = messages::trap_policy(&conn.name, ch);
                let key = format!("{}/{}", conn.name, ch.name);
                server.stream(
                    client,
                    "list-policy",
                    Section::default().with_section(&key, body),
                );
            }
        }
        Section::default()
    }

    /// `get-pools`: each pool's base and size.
    fn vici_pools(&self) -> Section {
        let mut s = Section::default();
        let pools = self
            .ike
            .as_ref()
            .map(|i| i.ike.pools().to_vec())
            .unwrap_or_default();
        for p in pools {
            let body = Section::default()
                .with("base", p.first.to_string())
                .with("size", pool_size(p.first, p.last).to_string())
                .with("online", "0")
                .with("offline", "0");
            s = s.with_section(&p.name, body);
        }
        s
    }

    /// `stats`: uptime, the control thread as charon's worker pool, the
    /// IKE SAs.
    fn vici_stats(&self) -> Section {
        let sas = self.ike_sas();
        let half_open = sas.iter().filter(|s| s.state == "CONNECTING").count();
        let up = self.start.elapsed().as_secs();
        let uptime = Section::default()
            .with("running", running(up))
            .with("since", self.since.as_str());
        let prio = || {
            ["critical", "high", "medium", "low"]
                .iter()
                .fold(Section::default(), |s, p| s.with(p, "0"))
        };
        let workers = Section::default()
            .with("total", self.workers.len().to_string())
            .with("idle", "0")
            .with_section("active", prio());
        Section::default()
            .with_section("uptime", uptime)
            .with_section("workers", workers)
            .with_section("queues", prio())
            .with("scheduled", "0")
            .with_section(
                "ikesas",
                Section::default()
                    .with("total", sas.len().to_string())
                    .with("half-open", half_open.to_string()),
            )
            .with_list("plugins", bytes(["flowsec"]))
    }

    /// `get-counters`: charon's counters (crate `flowsec_ike::counters`),
    /// the totals under `""`, a connection's under its `name`, or every
    /// connection's with `all = yes`.
    fn vici_counters(&self, m: &Section) -> Section {
        let Some(ike) = &self.ike else {
            return failure(ApplyError::NoIke);
        };
        let c = ike.ike.counters();
        let named = |counts: &flowsec_ike::counters::Counts| {
            let mut s = Section::default();
            for (k, n) in flowsec_ike::counters::NAMES.iter().zip(counts) {
                s = s.with(k, n.to_string());
            }
            s
        };
        let mut out = Section::default();
        match (m.str("all") == Some("yes"), m.str("name")) {
            (true, _) => {
                for (name, counts) in c.named() {
                    out = out.with_section(name, named(counts));
                }
            }
            (false, Some(name)) => match c.of(name) {
                Some(counts) => out = out.with_section(name, named(counts)),
                None => return failure("no counters found for this connection"),
            },
            (false, None) => out = out.with_section("", named(c.total())),
        }
        success().with_section("counters", out)
    }

    /// `reset-counters`: a connection's (`name`), every one (`all =
    /// yes`), or the totals.
    fn vici_reset_counters(&mut self, m: &Section) -> Section {
        let all = m.str("all") == Some("yes");
        let name = m.str("name");
        match &mut self.ike {
            Some(p) => {
                p.ike.reset_counters(name, all);
                success()
            }
            None => failure(ApplyError::NoIke),
        }
    }
}

fn bytes<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> Vec<Vec<u8>> {
    items
        .into_iter()
        .map(|s| s.as_ref().as_bytes().to_vec())
        .collect()
}

/// `version`.
fn version() -> Section {
    let (sysname, release, machine) = crate::sys::uname();
    Section::default()
        .with("daemon", "flowsec")
        .with("version", env!("CARGO_PKG_VERSION"))
        .with("sysname", sysname)
        .with("release", release)
        .with("machine", machine)
}

/// charon's `running` form: `5 minutes`, `2 hours`, `3 days`.
fn running(secs: u64) -> String {
    let (n, unit) = match secs {
        s if s < 60 => (s, "second"),
        s if s < 3600 => (s / 60, "minute"),
        s if s < 86400 => (s / 3600, "hour"),
        s => (s / 86400, "day"),
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// How many addresses a pool hands out.
fn pool_size(first: std::net::IpAddr, last: std::net::IpAddr) -> u128 {
    use std::net::IpAddr;
    match (first, last) {
        (IpAddr::V4(a), IpAddr::V4(b)) => u128::from(u32::from(b) - u32::from(a)) + 1,
        (IpAddr::V6(a), IpAddr::V6(b)) => u128::from(b) - u128::from(a) + 1,
        _ => 0,
    }
}

/// `get-algorithms`: what flowsec negotiates, by charon's type names.
fn algorithms() -> Section {
    use flowsec_wire::iana::{DhGroup, EncrId, IntegId, PrfId};
    let names = |v: Vec<String>| {
        v.into_iter()
            .fold(Section::default(), |s, n| s.with(&n, "flowsec"))
    };
    let n = |s: String| messages::strongswan_name(&s);
    let encr = [EncrId::AES_CBC, EncrId::AES_CTR, EncrId::NULL];
    let aead = [
        EncrId::AES_GCM_16,
        EncrId::AES_GCM_12,
        EncrId::AES_GCM_8,
        EncrId::AES_CCM_16,
        EncrId::CHACHA20_POLY1305,
    ];
    let integ = [
        IntegId::HMAC_SHA1_96,
        IntegId::HMAC_SHA2_256_128,
        IntegId::HMAC_SHA2_384_192,
        IntegId::HMAC_SHA2_512_256,
    ];
    let prf = [
        PrfId::HMAC_SHA1,
        PrfId::HMAC_SHA2_256,
        PrfId::HMAC_SHA2_384,
        PrfId::HMAC_SHA2_512,
    ];
    let ke = [
        DhGroup::MODP_2048,
        DhGroup::MODP_3072,
        DhGroup::MODP_4096,
        DhGroup::ECP_256,
        DhGroup::ECP_384,
        DhGroup::ECP_521,
        DhGroup::CURVE25519,
    ];
    Section::default()
        .with_section(
            "encryption",
            names(encr.iter().map(|a| n(a.to_string())).collect()),
        )
        .with_section(
            "aead",
            names(aead.iter().map(|a| n(a.to_string())).collect()),
        )
        .with_section(
            "integrity",
            names(integ.iter().map(|a| n(a.to_string())).collect()),
        )
        .with_section("prf", names(prf.iter().map(|a| n(a.to_string())).collect()))
        .with_section("ke", names(ke.iter().map(|a| n(a.to_string())).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptime_reads_as_charons() {
        assert_eq!(running(1), "1 second");
        assert_eq!(running(59), "59 seconds");
        assert_eq!(running(120), "2 minutes");
        assert_eq!(running(3600 * 5), "5 hours");
        assert_eq!(running(86400), "1 day");
        assert_eq!(
            pool_size("10.3.0.1".parse().unwrap(), "10.3.0.254".parse().unwrap()),
            254
        );
    }

    #[test]
    fn a_vici_connection_named_as_one_of_the_file_is_refused() {
        let file = flowsec_ike::config::parse(
            "f.conf",
            "connections { gw { local { auth = psk } remote { auth = psk } } }",
        )
        .unwrap();
        let body = Section::default()
            .with_section("local", Section::default().with("auth", "psk"))
            .with_section("remote", Section::default().with("auth", "psk"));
        let l = Loaded::default()
            .with_conn(&Section::default().with_section("gw", body.clone()))
            .unwrap();
        let e = merged(Some(&file), &l).unwrap_err();
        assert!(
            matches!(e, ApplyError::Duplicate(ref n) if n == "gw"),
            "{e}"
        );
        let l = Loaded::default()
            .with_conn(&Section::default().with_section("other", body))
            .unwrap();
        let c = merged(Some(&file), &l).unwrap();
        assert_eq!(c.connections.len(), 2);
        // A bad value names the key, as for a file.
        let bad =
            Section::default().with_section("x", Section::default().with("rekey_time", "soon"));
        let l = Loaded::default().with_conn(&bad).unwrap();
        let e = merged(None, &l).unwrap_err().to_string();
        assert!(e.contains("connections.x.rekey_time"), "{e}");
    }
}
