//! `flowsec up --metrics`: the page a scrape gets, from what `ctl stats`
//! and `ctl sas` read (the format is `crate::metrics`).

use super::Plane;

impl Plane {
    /// `ctl stats`' "metrics": the metrics thread's counters, with
    /// `--metrics`.
    pub(super) fn metrics_stats(&self) -> Option<crate::answers::Counters> {
        let p = self.metrics.as_ref()?;
        Some(crate::answers::Counters::of(p.counters().named()))
    }

    /// `--metrics`: every counter in Prometheus' text format
    /// (`crate::metrics`), the metrics thread's own (`exporter`) included.
    pub(super) fn metrics_text(
        &mut self,
        exporter: Option<&crate::metrics::ExporterCounters>,
    ) -> String {
        use crate::metrics::{render, Family, Kind};
        let seen = self.seen();
        let mut events = Family::new(
            "flowsec_worker_events_total",
            "What each worker counted (flowsec ctl stats): packets sent and delivered, handoffs, offload, send errors.",
            Kind::Counter,
        );
        let mut drops = Family::new(
            "flowsec_drops_total",
            "Packets the IPsec core refused, per worker and named reason.",
            Kind::Counter,
        );
        for (w, st) in seen.stats.iter().enumerate() {
            for (name, n) in st.named() {
                events.push(vec![("worker", w.to_string()), ("event", name.into())], n);
            }
            for (reason, n) in st.drops.nonzero() {
                drops.push(
                    vec![("worker", w.to_string()), ("reason", reason.name().into())],
                    n,
                );
            }
        }
        let mut bytes = Family::new(
            "flowsec_sa_bytes_total",
            "Bytes through each SA (an inbound SA's received, an outbound SA's sent).",
            Kind::Counter,
        );
        let mut packets = Family::new(
            "flowsec_sa_packets_total",
            "Packets through each SA.",
            Kind::Counter,
        );
        for (id, c) in &self.model.sas {
            let r = seen.sa(*id, self.start);
            let labels = vec![
                ("protocol", id.protocol.to_string()),
                ("spi", format!("{:#010x}", id.spi)),
                ("src", c.src.to_string()),
                ("dst", id.dst.to_string()),
                ("reqid", c.reqid.to_string()),
            ];
            bytes.push(labels.clone(), r.live.bytes);
            packets.push(labels, r.live.packets);
        }
        let mut families = vec![events, drops, bytes, packets];
        if let Some(c) = exporter {
            let mut scrapes = Family::new(
                "flowsec_metrics_events_total",
                "This page's own counters (flowsec ctl stats, metrics): pages served, stale pages, requests refused (421 for a Host that is not an IP address, 400, 404), clients cut off for taking too long.",
                Kind::Counter,
            );
            for (name, n) in c.named() {
                scrapes.push(vec![("event", name.into())], n);
            }
            families.push(scrapes);
        }
        if let Some(ike) = &self.ike {
            families.extend(self.ike_families(ike));
        }
        render(&families)
    }

    /// IKE's part of the page: its counters, rekeys, SAs by state, the
    /// queues to the control thread, and the stream thread's counters.
    fn ike_families(&self, ike: &super::IkePlane) -> Vec<crate::metrics::Family> {
        use crate::metrics::{Family, Kind};
        let mut ev = Family::new(
            "flowsec_ike_events_total",
            "IKE's counters (flowsec ctl stats): messages, retransmits, cookies, dead peers, drops by reason, rekeys.",
            Kind::Counter,
        );
        for (name, n) in ike.ike.stats().named() {
            ev.push(vec![("event", name.into())], n);
        }
        let s = ike.ike.stats();
        let mut rekeys = Family::new(
            "flowsec_child_rekeys_total",
            "CHILD_SA rekeys completed, either role, by handover (loss-free: the responder keeps the old SA until the DELETE).",
            Kind::Counter,
        );
        rekeys.push(
            vec![("handover", "loss-free".into())],
            s.loss_free_handovers,
        );
        rekeys.push(
            vec![("handover", "other".into())],
            s.child_rekeys - s.loss_free_handovers,
        );
        let list = ike.ike.list(self.start.elapsed());
        let mut by_state = std::collections::BTreeMap::<(&str, &str), u64>::new();
        for sa in &list {
            *by_state.entry(("ike", sa.state)).or_default() += 1;
            for c in &sa.children {
                *by_state.entry(("child", c.state)).or_default() += 1;
            }
        }
        let mut ike_sas = Family::new("flowsec_ike_sas", "IKE SAs by state.", Kind::Gauge);
        let mut child_sas = Family::new("flowsec_child_sas", "CHILD_SAs by state.", Kind::Gauge);
        for ((what, state), n) in by_state {
            let f = if what == "ike" {
                &mut ike_sas
            } else {
                &mut child_sas
            };
            f.push(vec![("state", state.into())], n);
        }
        let mut queues = Family::new(
            "flowsec_ike_queue_drops_total",
            "IKE messages and notices dropped on their way to the control thread, by queue (flowsec ctl stats, ike_queue).",
            Kind::Counter,
        );
        for (name, n) in ike.queue_counters().named() {
            queues.push(vec![("queue", name.trim_end_matches("_full").into())], n);
        }
        let mut families = vec![ev, rekeys, ike_sas, child_sas, queues];
        if let Some(stream) = &ike.stream {
            let mut tcp = Family::new(
                "flowsec_tcp_events_total",
                "The RFC 9329 stream thread's counters (flowsec ctl stats, tcp).",
                Kind::Counter,
            );
            for (name, n) in stream.counters().named() {
                tcp.push(vec![("event", name.into())], n);
            }
            families.push(tcp);
        }
        families
    }
}
