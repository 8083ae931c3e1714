//! `flowsec ctl`'s answers (`crate::answers`: over vici as the
//! `flowsec-*` commands, over the control socket in JSON): the model and
//! the workers' reports as `status`, `sas`, `policies` and `stats`;
//! `setkey` input staged and committed; IKE's `initiate`, `terminate`
//! and `rekey` queued; setkey's own queries answered in its format.

use std::time::Instant;

use flowsec_setkey::{format_policy, format_sa, SaLive};
use serde::Deserialize;
use serde_json::{json, Value};
use zeroize::Zeroize;

use super::{capability_names, log_reload, AnswerError, Plane};
use crate::answers::{self, Answer, Counters, Names, Request};
use crate::apply::{self, Query, Staged};
use crate::control;
use crate::stats::{Report, SaReport, Stats};
use crate::sys;

impl Plane {
    /// The control socket's JSON request answered: the same [`Request`]
    /// and [`Answer`] as vici's `flowsec-*`, in JSON.
    pub(super) fn answer_json(&mut self, request: &Value) -> Value {
        let request = match Request::deserialize(request) {
            Ok(r) => r,
            Err(e) => return json!({ "error": format!("bad request: {e}") }),
        };
        match self.answer(request) {
            Ok(a) => a.to_json(),
            Err(e) => json!({ "error": e.to_string() }),
        }
    }

    /// The answer to a vici `flowsec-*` request, or why there is none.
    pub(super) fn answer_vici(
        &mut self,
        request: Result<Request, answers::MissingText>,
    ) -> Result<Answer, AnswerError> {
        self.answer(request.map_err(AnswerError::Request)?)
    }

    /// The answer to one request, or why there is none.
    pub(super) fn answer(&mut self, request: Request) -> Result<Answer, AnswerError> {
        Ok(match request {
            Request::Status => Answer::Status(self.status()),
            Request::Sas => Answer::Sas(self.sas()),
            Request::Policies => Answer::Policies(answers::Policies {
                policies: self.model.spd.iter().map(control::policy_answer).collect(),
            }),
            Request::Stats => Answer::Stats(self.stats()),
            Request::Reload => {
                let answer = self.reload();
                log_reload(&answer);
                Answer::Reload(answer.map_err(AnswerError::Reload)?)
            }
            Request::Setkey { name, mut text } => {
                let done = self.setkey(name.as_deref().unwrap_or("-"), &text);
                text.zeroize();
                Answer::Setkey(done?)
            }
            Request::Initiate(n) => Answer::Queued(self.ike_command("initiate", n)?),
            Request::Terminate(n) => Answer::Queued(self.ike_command("terminate", n)?),
            Request::Rekey(n) => Answer::Queued(self.ike_command("rekey", n)?),
        })
    }

    /// `ctl status`.
    fn status(&self) -> answers::Status {
        answers::Status {
            tun: self.tun.clone(),
            uptime_s: self.start.elapsed().as_secs_f64(),
            workers: self.workers.len(),
            worker_health: self.workers.status(),
            sas: self.model.sas.len(),
            policies: self.model.spd.len(),
            plaintext_filter: answers::PlaintextFilter {
                table: self.filter.table().map(String::from),
                stale: self.filter.stale().map(String::from),
            },
            capabilities: capability_names(),
            no_new_privs: sys::privs::no_new_privs(),
            ctl_refused: self.ctl_refused,
        }
    }

    /// `ctl sas`: the SAs as the workers see them, and the IKE SAs.
    fn sas(&mut self) -> answers::Sas {
        let seen = self.seen();
        let sas = self
            .model
            .sas
            .iter()
            .map(|(id, c)| control::sa_answer(c, &seen.sa(*id, self.start)))
            .collect();
        let now = self.start.elapsed();
        let ike_sas = self.ike.as_ref().map_or_else(Vec::new, |ike| {
            ike.ike
                .list(now)
                .iter()
                .map(|sa| control::ike_sa_answer(sa, |id| seen.sa(id, self.start).live))
                .collect()
        });
        answers::Sas { ike_sas, sas }
    }

    /// `ctl initiate | terminate | rekey [IKE [CHILD]]`: queued.
    fn ike_command(
        &mut self,
        cmd: &'static str,
        names: Names,
    ) -> Result<answers::Queued, AnswerError> {
        let Names { ike, child } = names;
        let done = self.ike_step(|p, now, k| match cmd {
            "initiate" => p
                .ike
                .initiate(now, ike.as_deref(), child.as_deref(), k)
                .map(|()| 1),
            "terminate" => p.ike.terminate(now, ike.as_deref(), child.as_deref(), k),
            _ => p.ike.rekey(now, ike.as_deref(), child.as_deref(), k),
        });
        match done {
            None => Err(AnswerError::NoIke { cmd }),
            Some(Err(error)) => Err(AnswerError::Ike { cmd, error }),
            Some(Ok(ok)) => Ok(answers::Queued { ok }),
        }
    }

    /// `ctl stats`: the workers' counters summed, and IKE's.
    fn stats(&mut self) -> answers::StatsAnswer {
        let mut v = control::stats_answer(&self.seen().stats);
        if let Some(ike) = &self.ike {
            let mut c = Counters::of(ike.ike.stats().named());
            let sas = ike.ike.list(self.start.elapsed()).len();
            c.0.push(("ike_sas".into(), sas as u64));
            v.ike = Some(c);
            v.ike_queue = Some(Counters::of(ike.queue_counters().named()));
            v.tcp = ike
                .stream
                .as_ref()
                .map(|s| Counters::of(s.counters().named()));
        }
        v.metrics = self.metrics_stats();
        v.vici = self.vici.as_ref().map(|v| Counters::of(v.counters.named()));
        v
    }

    /// Stage `text`, and if it passes every check, apply it everywhere.
    fn setkey(&mut self, name: &str, text: &str) -> Result<answers::SetkeyDone, AnswerError> {
        let now = self.start.elapsed();
        let staged = apply::stage(&self.model, name, text, &self.provider, self.caps, now);
        let Staged {
            model,
            changes,
            queries,
            warnings,
            ..
        } = staged.map_err(AnswerError::Setkey)?;
        let applied = self
            .commit(name, model, changes)
            .map_err(AnswerError::Commit)?;
        Ok(answers::SetkeyDone {
            applied,
            warnings,
            output: self.answer_queries(&queries),
        })
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
            src: None,
        });
        best.stats = drops;
        best
    }
}
