//! The control socket's answers (`flowsec ctl`, one JSON document per
//! request): the model and the workers' reports as `status`, `sas`,
//! `policies` and `stats`; `setkey` input staged and committed; IKE's
//! `initiate`, `terminate` and `rekey`; setkey's own queries answered in
//! its format.

use std::time::Instant;

use flowsec_setkey::{format_policy, format_sa, SaLive};
use serde_json::{json, Value};

use super::{capability_names, log_reload, Plane};
use crate::apply::{self, Query, Staged};
use crate::control;
use crate::stats::{Report, SaReport, Stats};
use crate::sys;

impl Plane {
    /// The answer to one request.
    pub(super) fn answer(&mut self, request: &Value) -> Value {
        match request.get("cmd").and_then(Value::as_str) {
            Some("status") => self.status_json(),
            Some("sas") => self.sas_json(),
            Some(cmd @ ("initiate" | "terminate" | "rekey")) => self.ike_command(cmd, request),
            Some("policies") => {
                Value::Array(self.model.spd.iter().map(control::policy_json).collect())
            }
            Some("stats") => self.stats_json(),
            Some("reload") => {
                let answer = self.reload();
                log_reload(&answer);
                answer
            }
            Some("setkey") => {
                let name = request.get("name").and_then(Value::as_str).unwrap_or("-");
                match request.get("text").and_then(Value::as_str) {
                    Some(text) => self.setkey(name, text),
                    None => json!({"error": "setkey: missing \"text\""}),
                }
            }
            Some(other) => json!({
                "error": format!("unknown command '{other}' (status, sas, policies, stats, setkey, reload, initiate, terminate, rekey)")
            }),
            None => json!({"error": "missing \"cmd\""}),
        }
    }

    /// `ctl status`.
    fn status_json(&self) -> Value {
        json!({
            "tun": self.tun,
            "uptime_s": self.start.elapsed().as_secs_f64(),
            "workers": self.workers.len(),
            "worker_health": self.workers.status(),
            "sas": self.model.sas.len(),
            "policies": self.model.spd.len(),
            "plaintext_filter": {
                "table": self.filter.table(),
                "stale": self.filter.stale(),
            },
            "capabilities": capability_names(),
            "no_new_privs": sys::privs::no_new_privs(),
            "ctl_refused": self.ctl_refused,
        })
    }

    /// `ctl sas`: the SAs as the workers see them, and the IKE SAs.
    fn sas_json(&mut self) -> Value {
        let seen = self.seen();
        let sas: Vec<Value> = self
            .model
            .sas
            .iter()
            .map(|(id, c)| control::sa_json(c, &seen.sa(*id, self.start)))
            .collect();
        let now = self.start.elapsed();
        let ike: Vec<Value> = self.ike.as_ref().map_or_else(Vec::new, |ike| {
            ike.ike
                .list(now)
                .iter()
                .map(|sa| control::ike_sa_json(sa, |id| seen.sa(id, self.start).live))
                .collect()
        });
        json!({"ike_sas": ike, "sas": sas})
    }

    /// `ctl initiate | terminate | rekey [IKE [CHILD]]`.
    fn ike_command(&mut self, cmd: &str, request: &Value) -> Value {
        let field = |k: &str| request.get(k).and_then(Value::as_str).map(str::to_string);
        let (ike, child) = (field("ike"), field("child"));
        let done = self.ike_step(|p, now, k| match cmd {
            "initiate" => p
                .ike
                .initiate(now, ike.as_deref(), child.as_deref(), k)
                .map(|()| 1),
            "terminate" => p.ike.terminate(now, ike.as_deref(), child.as_deref(), k),
            _ => p.ike.rekey(now, ike.as_deref(), child.as_deref(), k),
        });
        match done {
            None => {
                json!({"error": format!("{cmd}: this daemon runs without IKE (flowsec up -c FILE)")})
            }
            Some(Err(e)) => json!({"error": format!("{cmd}: {e}")}),
            Some(Ok(n)) => json!({"ok": n}),
        }
    }

    /// `ctl stats`: the workers' counters summed, and IKE's.
    fn stats_json(&mut self) -> Value {
        let mut v = control::stats_json(&self.seen().stats);
        if let Some(ike) = &self.ike {
            let s = ike.ike.stats();
            let m: serde_json::Map<String, Value> = s
                .named()
                .iter()
                .map(|(k, n)| (k.to_string(), json!(n)))
                .collect();
            v["ike"] = Value::Object(m);
            v["ike"]["ike_sas"] = json!(ike.ike.list(self.start.elapsed()).len());
            let m: serde_json::Map<String, Value> = ike
                .queue_counters()
                .named()
                .into_iter()
                .map(|(k, n)| (k.to_string(), json!(n)))
                .collect();
            v["ike_queue"] = Value::Object(m);
            if let Some(s) = &ike.stream {
                let m: serde_json::Map<String, Value> = s
                    .counters()
                    .named()
                    .into_iter()
                    .map(|(k, n)| (k.to_string(), json!(n)))
                    .collect();
                v["tcp"] = Value::Object(m);
            }
        }
        if let Some(m) = self.metrics_stats() {
            v["metrics"] = m;
        }
        if let Some(vici) = &self.vici {
            v["vici"] = vici_counters(&vici.counters);
        }
        v
    }

    /// Stage `text`, and if it passes every check, apply it everywhere.
    fn setkey(&mut self, name: &str, text: &str) -> Value {
        let now = self.start.elapsed();
        let staged = apply::stage(&self.model, name, text, &self.provider, self.caps, now);
        let Staged {
            model,
            changes,
            queries,
            warnings,
            ..
        } = match staged {
            Ok(s) => s,
            Err(e) => return json!({"error": e.to_string()}),
        };
        match self.commit(name, model, changes) {
            Ok(applied) => {
                let output = self.answer_queries(&queries);
                json!({"applied": applied, "warnings": warnings, "output": output})
            }
            Err(e) => json!({ "error": e.to_string() }),
        }
    }

    /// setkey's answers to `get`, `dump` and `spddump`, in its format
    /// (without keys).
    fn answer_queries(&self, queries: &[Query]) -> String {
        if queries.is_empty() {
            return String::new();
        }
        let seen = self.seen();
        let mut out = String::new();
        for q in queries {
            match q {
                Query::Get(id) => {
                    if let Some(c) = self.model.sas.get(id) {
                        out += &format_sa(c, Some(&seen.sa(*id, self.start).live));
                    }
                }
                Query::Dump(protocol) => {
                    let mut any = false;
                    for (id, c) in &self.model.sas {
                        if protocol.is_none_or(|p| p == id.protocol) {
                            out += &format_sa(c, Some(&seen.sa(*id, self.start).live));
                            any = true;
                        }
                    }
                    if !any {
                        out += "No SAD entries.\n";
                    }
                }
                Query::SpdDump => {
                    for p in self.model.spd.iter() {
                        out += &format_policy(p);
                    }
                    if self.model.spd.is_empty() {
                        out += "No SPD entries.\n";
                    }
                }
            }
        }
        out
    }

    /// Every worker's report (those that answer in time, [`crate::reach`]).
    pub(super) fn seen(&self) -> Seen {
        let reports = self.workers.reports();
        Seen {
            stats: reports.iter().map(|r| r.stats.clone()).collect(),
            reports,
        }
    }
}

/// vici's counters (`ctl stats`, `flowsec-stats`).
pub(super) fn vici_counters(c: &crate::vici::server::Counters) -> Value {
    let m: serde_json::Map<String, Value> = c
        .named()
        .iter()
        .map(|(k, n)| (k.to_string(), json!(n)))
        .collect();
    Value::Object(m)
}

/// What the workers reported.
pub(super) struct Seen {
    pub(super) reports: Vec<Report>,
    pub(super) stats: Vec<Stats>,
}

impl Seen {
    /// The copy of SA `id` that carried its traffic (only the owning
    /// worker's copy is used; the others stay fresh), its drops summed
    /// over all copies.
    pub(super) fn sa(&self, id: flowsec_ipsec::SaId, start: Instant) -> SaReport {
        let copies = self
            .reports
            .iter()
            .flat_map(|r| r.sas.iter())
            .filter(|s| s.id == id);
        let mut best: Option<SaReport> = None;
        let mut drops = flowsec_ipsec::SaStats::default();
        for c in copies {
            drops.replay_drops += c.stats.replay_drops;
            drops.auth_failures += c.stats.auth_failures;
            drops.other_drops += c.stats.other_drops;
            drops.ipcomp_uncompressed += c.stats.ipcomp_uncompressed;
            let busier = best
                .as_ref()
                .is_none_or(|b| (c.live.packets, c.live.seq) > (b.live.packets, b.live.seq));
            if busier {
                best = Some(c.clone());
            }
        }
        let mut best = best.unwrap_or(SaReport {
            id,
            live: SaLive {
                age: start.elapsed(),
                ..SaLive::FRESH
            },
            stats: Default::default(),
            replay_window: 0,
            worker: None,
        });
        best.stats = drops;
        best
    }
}
