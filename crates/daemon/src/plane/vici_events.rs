//! vici's events (README "Server-issued events"): IKE's events as `log`,
//! `ike-updown`, `child-updown`, `ike-rekey` and `child-rekey` to the
//! clients registered for them, `control-log` to a client whose
//! `initiate` or `terminate` waits, and the answer to that command once
//! IKE says how it ended.

use std::time::Duration;

use flowsec_ike::{IkeEvent, IkeSaInfo, Logged};
use flowsec_wire::vici::Section;

use super::answer::Seen;
use super::Plane;
use crate::vici::messages::{self, failure, success, ChildLive};
use crate::vici::{ClientId, Server};

/// An `initiate` or `terminate` waiting for IKE.
#[derive(Debug)]
pub(super) struct Pending {
    /// Who asked.
    pub(super) client: ClientId,
    /// What for.
    pub(super) kind: PendingKind,
    /// When to give up (`timeout`); `None`: wait.
    pub(super) deadline: Option<Duration>,
}

/// What a [`Pending`] waits for.
#[derive(Debug)]
pub(super) enum PendingKind {
    /// The Child SA `child` (or the IKE SA, without one) is up.
    Initiate {
        ike: Option<String>,
        child: Option<String>,
    },
    /// None of the `matched` SAs is listed any more.
    Terminate {
        ike: Option<String>,
        child: Option<String>,
        matched: usize,
    },
}

/// How an event ends a pending command: done, failed (why), or not yet.
enum Outcome {
    Done,
    Failed(String),
    Waiting,
}

impl PendingKind {
    /// Whether `logged` is about this command's SAs (for `control-log`).
    fn concerns(&self, logged: &Logged) -> bool {
        let (ike, child) = match self {
            PendingKind::Initiate { ike, child } | PendingKind::Terminate { ike, child, .. } => {
                (ike, child)
            }
        };
        let name = logged.sa.as_ref().map(|t| t.name.as_str());
        let by_ike = ike.as_deref().is_some_and(|i| {
            Some(i) == name
                || logged
                    .sa
                    .as_ref()
                    .is_some_and(|t| i.trim_start_matches('#') == t.unique_id.to_string())
        });
        by_ike
            || child
                .as_deref()
                .is_some_and(|c| event_child(&logged.event) == Some(c))
            || (ike.is_none() && child.is_none())
    }

    /// What `logged` means for this command.
    fn outcome(&mut self, logged: &Logged) -> Outcome {
        if !self.concerns(logged) {
            return Outcome::Waiting;
        }
        let e = &logged.event;
        match self {
            PendingKind::Initiate { child, .. } => match (e, child.as_deref()) {
                (IkeEvent::ChildInstalled { child: c, .. }, Some(want)) if c == want => {
                    Outcome::Done
                }
                (IkeEvent::Established { .. }, None) => Outcome::Done,
                (
                    IkeEvent::NegotiationFailed { .. }
                    | IkeEvent::ChildNotEstablished { .. }
                    | IkeEvent::ChildFailed { .. }
                    | IkeEvent::ChildRefused { .. }
                    | IkeEvent::Deleted { .. },
                    _,
                ) => Outcome::Failed(e.to_string()),
                _ => Outcome::Waiting,
            },
            // Done when the SAs are no longer listed ([`Plane::vici_deadlines`]).
            PendingKind::Terminate { .. } => Outcome::Waiting,
        }
    }

    /// Whether a terminate's SAs are all gone from `sas`.
    fn gone(&self, sas: &[IkeSaInfo]) -> bool {
        let PendingKind::Terminate { ike, child, .. } = self else {
            return false;
        };
        let named = |sa: &IkeSaInfo| {
            ike.as_deref()
                .is_none_or(|i| i == sa.name || i.trim_start_matches('#') == sa.uid.to_string())
        };
        !sas.iter().filter(|sa| named(sa)).any(|sa| match child {
            None => true,
            Some(c) => sa
                .children
                .iter()
                .any(|ch| ch.name == *c && ch.state != "DELETED"),
        })
    }

    /// The answer once done.
    fn answer(&self) -> Section {
        match self {
            PendingKind::Initiate { .. } => success(),
            PendingKind::Terminate { matched, .. } => success()
                .with("matches", matched.to_string())
                .with("terminated", matched.to_string()),
        }
    }
}

/// The child config an event names, if it names one.
fn event_child(e: &IkeEvent) -> Option<&str> {
    match e {
        IkeEvent::ChildInstalled { child, .. }
        | IkeEvent::ChildNotEstablished { child, .. }
        | IkeEvent::ChildFailed { child, .. }
        | IkeEvent::ChildRefused { child, .. }
        | IkeEvent::ChildRemoved { child, .. } => Some(child),
        _ => None,
    }
}

/// charon's log group of an event.
fn group(logged: &Logged) -> &'static str {
    match logged.event.subsystem() {
        flowsec_ike::Subsystem::Ike => "IKE",
        flowsec_ike::Subsystem::Chd => "CHD",
        flowsec_ike::Subsystem::Cfg => "CFG",
    }
}

/// A `log` / `control-log` message.
fn log_message(logged: &Logged) -> Section {
    let mut s = Section::default()
        .with("group", group(logged))
        .with("level", "1")
        .with("thread", "0");
    if let Some(t) = &logged.sa {
        s = s
            .with("ikesa-name", t.name.as_str())
            .with("ikesa-uniqueid", t.unique_id.to_string());
    }
    s.with("msg", logged.event.to_string())
}

impl Plane {
    /// One turn of vici: requests answered, IKE's events sent, waiting
    /// commands answered or timed out.
    pub(super) fn vici_turn(&mut self, readable: bool) {
        let Some(mut server) = self.vici.take() else {
            if let Some(ike) = &mut self.ike {
                ike.logged.clear();
            }
            return;
        };
        if readable {
            for r in server.serve() {
                self.vici_request(&mut server, r);
            }
        }
        let logged = self
            .ike
            .as_mut()
            .map(|i| std::mem::take(&mut i.logged))
            .unwrap_or_default();
        for l in &logged {
            self.vici_event(&mut server, l);
        }
        self.vici_deadlines(&mut server);
        self.vici = Some(server);
    }

    /// One IKE event to the clients.
    fn vici_event(&mut self, server: &mut Server, logged: &Logged) {
        if server.listens("log") {
            server.broadcast("log", &log_message(logged));
        }
        let mut still = Vec::new();
        for mut p in std::mem::take(&mut self.pending) {
            if !server.connected(p.client) {
                continue;
            }
            if p.kind.concerns(logged) {
                server.stream(p.client, "control-log", log_message(logged));
            }
            match p.kind.outcome(logged) {
                Outcome::Done => server.respond(p.client, p.kind.answer()),
                Outcome::Failed(why) => server.respond(p.client, failure(why)),
                Outcome::Waiting => still.push(p),
            }
        }
        self.pending = still;
        self.updown(server, logged);
    }

    /// `ike-updown`, `child-updown`, `ike-rekey`, `child-rekey`.
    fn updown(&mut self, server: &mut Server, logged: &Logged) {
        let wanted = ["ike-updown", "child-updown", "ike-rekey", "child-rekey"];
        if !wanted.iter().any(|e| server.listens(e)) {
            return;
        }
        let Some(tag) = &logged.sa else { return };
        let sa = self.ike_sas().into_iter().find(|s| s.uid == tag.unique_id);
        let ike = |sa: Option<&IkeSaInfo>| {
            sa.map_or_else(
                || Section::default().with("uniqueid", tag.unique_id.to_string()),
                messages::ike_sa,
            )
        };
        match &logged.event {
            IkeEvent::Established { .. } => {
                let body = ike(sa.as_ref());
                let m = Section::default()
                    .with("up", "yes")
                    .with_section(&tag.name, body);
                server.broadcast("ike-updown", &m);
            }
            IkeEvent::Deleted { .. } => {
                let m = Section::default().with_section(&tag.name, ike(sa.as_ref()));
                server.broadcast("ike-updown", &m);
            }
            IkeEvent::Rekeyed { new_unique_id, .. } => {
                let new = self.ike_sas().into_iter().find(|s| s.uid == *new_unique_id);
                let body = Section::default()
                    .with_section("old", ike(sa.as_ref()))
                    .with_section("new", ike(new.as_ref()));
                let m = Section::default().with_section(&tag.name, body);
                server.broadcast("ike-rekey", &m);
            }
            IkeEvent::ChildInstalled { spi_in, child, .. } => {
                self.child_up(server, &tag.name, sa.as_ref(), *spi_in, child);
            }
            IkeEvent::ChildRemoved { spi_in, child, .. } => {
                let children = Section::default().with_section(
                    &format!("{child}-{spi_in}"),
                    Section::default()
                        .with("name", child.as_str())
                        .with("uniqueid", spi_in.to_string())
                        .with("spi-in", format!("{spi_in:08x}")),
                );
                let body = ike(sa.as_ref()).with_section("child-sas", children);
                server.broadcast(
                    "child-updown",
                    &Section::default().with_section(&tag.name, body),
                );
            }
            _ => {}
        }
    }

    /// `child-updown` (up) for the Child SA with inbound SPI `spi_in`,
    /// and `child-rekey` when it replaces one of the same name.
    fn child_up(
        &self,
        server: &mut Server,
        name: &str,
        sa: Option<&IkeSaInfo>,
        spi_in: u32,
        child: &str,
    ) {
        let Some(sa) = sa else { return };
        let seen = self.seen();
        let Some(new) = sa.children.iter().find(|c| c.sa_in.spi == spi_in) else {
            return;
        };
        let body = |c: &flowsec_ike::ChildSaInfo| {
            messages::child_sa(c, messages::child_uid(c), &self.child_live(c, &seen))
        };
        let children = Section::default().with_section(&messages::child_key(new), body(new));
        let up = messages::ike_sa(sa).with_section("child-sas", children);
        server.broadcast(
            "child-updown",
            &Section::default().with("up", "yes").with_section(name, up),
        );
        let old = sa
            .children
            .iter()
            .find(|c| c.name == child && c.sa_in.spi != spi_in && c.state != "INSTALLED");
        if let Some(old) = old {
            let pair = Section::default()
                .with_section("old", body(old))
                .with_section("new", body(new));
            let children = Section::default().with_section(&messages::child_key(new), pair);
            let m = messages::ike_sa(sa).with_section("child-sas", children);
            server.broadcast("child-rekey", &Section::default().with_section(name, m));
        }
    }

    /// Terminates whose SAs are gone: answered; commands whose `timeout`
    /// passed: answered `success = no`.
    fn vici_deadlines(&mut self, server: &mut Server) {
        if self.pending.is_empty() {
            return;
        }
        let now = self.start.elapsed();
        let sas = self.ike_sas();
        self.pending.retain(|p| {
            if p.kind.gone(&sas) {
                server.respond(p.client, p.kind.answer());
                return false;
            }
            let late = p.deadline.is_some_and(|d| now >= d);
            if late {
                server.respond(p.client, failure("timeout, the command goes on"));
            }
            !late && server.connected(p.client)
        });
    }

    /// The IKE SAs as listed now.
    pub(super) fn ike_sas(&self) -> Vec<IkeSaInfo> {
        let now = self.start.elapsed();
        self.ike
            .as_ref()
            .map(|i| i.ike.list(now))
            .unwrap_or_default()
    }

    /// The counters of a Child SA's two SAs.
    fn child_live(&self, c: &flowsec_ike::ChildSaInfo, seen: &Seen) -> ChildLive {
        ChildLive {
            sa_in: seen.sa(c.sa_in, self.start).live,
            sa_out: seen.sa(c.sa_out, self.start).live,
        }
    }

    /// `list-sa`'s body of an IKE SA: its Child SAs named `child` (all
    /// without a filter).
    pub(super) fn ike_sa_with_children(
        &self,
        sa: &IkeSaInfo,
        child: Option<&str>,
        seen: &Seen,
    ) -> Section {
        let mut children = Section::default();
        for c in sa
            .children
            .iter()
            .filter(|c| child.is_none_or(|n| n == c.name))
        {
            let body = messages::child_sa(c, messages::child_uid(c), &self.child_live(c, seen));
            children = children.with_section(&messages::child_key(c), body);
        }
        messages::ike_sa(sa).with_section("child-sas", children)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flowsec_ike::SaTag;
    use flowsec_wire::iana::NotifyType;

    fn logged(conn: &str, uid: u32, event: IkeEvent) -> Logged {
        Logged {
            sa: Some(SaTag {
                name: conn.into(),
                unique_id: uid,
            }),
            event,
        }
    }

    fn installed(child: &str) -> IkeEvent {
        IkeEvent::ChildInstalled {
            child: child.into(),
            reqid: 1,
            spi_in: 1,
            spi_out: 2,
            local_ts: Vec::new(),
            remote_ts: Vec::new(),
            resource: None,
        }
    }

    #[test]
    fn an_initiate_ends_with_its_child_or_its_connections_failure() {
        let mut k = PendingKind::Initiate {
            ike: Some("gw".into()),
            child: Some("net".into()),
        };
        assert!(matches!(
            k.outcome(&logged("gw", 1, installed("other"))),
            Outcome::Waiting
        ));
        assert!(matches!(
            k.outcome(&logged("gw2", 2, installed("net2"))),
            Outcome::Waiting
        ));
        assert!(matches!(
            k.outcome(&logged("gw", 1, installed("net"))),
            Outcome::Done
        ));
        let refused = IkeEvent::ChildRefused {
            child: "net".into(),
            notify: NotifyType::TS_UNACCEPTABLE,
        };
        assert!(matches!(
            k.outcome(&logged("gw", 1, refused)),
            Outcome::Failed(_)
        ));
        let gone = IkeEvent::Deleted {
            name: "gw".into(),
            unique_id: 1,
            by_peer: true,
        };
        assert!(matches!(
            k.outcome(&logged("gw", 1, gone.clone())),
            Outcome::Failed(_)
        ));
        // Another connection's SA going away is not this one's failure.
        assert!(matches!(
            k.outcome(&logged("gw2", 2, gone)),
            Outcome::Waiting
        ));
    }

    #[test]
    fn a_terminate_is_done_when_its_sas_are_no_longer_listed() {
        let k = PendingKind::Terminate {
            ike: Some("#3".into()),
            child: None,
            matched: 1,
        };
        assert!(k.gone(&[]));
        assert!(matches!(k.answer().str("matches"), Some("1")));
        let initiate = PendingKind::Initiate {
            ike: None,
            child: None,
        };
        assert!(!initiate.gone(&[]));
    }
}
