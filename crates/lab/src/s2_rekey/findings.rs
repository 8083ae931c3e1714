//! s2-rekey's verdicts: each finding of study S2's E2c and flowsec's own
//! claims, computed from the runs and probes.

use super::analysis::{sum, LegSum};
use super::{Probe, Run, SKEW_S};
use crate::peers::Peer;
use crate::report::Finding;

pub(super) const LOSSLESS_AT_95: &str = "flowsec (loss-free) at 95% of the highest loss-free rate: nothing lost over ≥ 20 PFS rekeys each way, flowsec or strongSwan at the other end (the issue's goal)";

/// flowsec's loss-free claim over `runs`: nothing lost, both directions,
/// with strongSwan at the other end too; at saturation over ≥ 20 rekeys
/// each way. The evidence tells loss near rekeys from loss away from them.
pub(super) fn lossless_finding(runs: &[&Run], load: &str, saturated: bool) -> Finding {
    let legs: Vec<(&Run, LegSum, bool)> = runs
        .iter()
        .flat_map(|r| r.legs.iter().map(move |l| (*r, sum(l), l.reverse)))
        .collect();
    let lost: u64 = legs.iter().map(|(_, s, _)| s.lost).sum();
    let min_rekeys = legs.iter().map(|(_, s, _)| s.rekeys).min().unwrap_or(0);
    let with_strongswan = runs.iter().any(|r| r.pair.contains("strongSwan"));
    let detail = legs
        .iter()
        .filter(|(_, s, _)| s.lost > 0)
        .map(|(r, s, rev)| {
            let (near, away) = s.rates();
            format!(
                "{} {}: {} lost, {:.1}/s within 1 s of a rekey vs {:.1}/s away",
                r.config,
                if *rev { "←" } else { "→" },
                s.lost,
                near,
                away
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Finding {
        claim: if saturated {
            LOSSLESS_AT_95.into()
        } else {
            format!("flowsec (loss-free) {load}: nothing lost across PFS rekeys, both directions, flowsec or strongSwan at the other end")
        },
        holds: !runs.is_empty() && lost == 0 && (!saturated || min_rekeys >= 20),
        evidence: format!(
            "{load}: {lost} lost over {} runs ({}), at least {min_rekeys} rekeys each way{}{} (holds if 0 lost{})",
            runs.len(),
            runs.iter().map(|r| r.config.as_str()).collect::<Vec<_>>().join(", "),
            if with_strongswan { "" } else { "; strongSwan not measured" },
            if detail.is_empty() { String::new() } else { format!("; {detail}") },
            if saturated { " and ≥ 20 rekeys each way" } else { "" }
        ),
    }
}

pub(super) fn findings(runs: &[Run], probes: &[Probe], quick: bool) -> Vec<Finding> {
    let at30 = |name: &str| {
        runs.iter()
            .find(|r| r.config == name && r.saturation.is_none())
    };
    let dir = |r: Option<&Run>, reverse: bool| {
        r.and_then(|r| r.legs.iter().find(|l| l.reverse == reverse))
            .map(sum)
    };
    let mut out = Vec::new();

    let (pf, pr) = (
        dir(at30("flowsec prefer-new"), false),
        dir(at30("flowsec prefer-new"), true),
    );
    let every = |s: &Option<LegSum>| {
        s.as_ref()
            .is_some_and(|s| s.rekeys > 0 && s.lossy_rekeys * 5 >= s.rekeys * 4)
    };
    let show = |s: &Option<LegSum>| {
        s.as_ref().map_or("not run".into(), |s| {
            format!(
                "{} lost, {} of {} rekeys lossy, worst second {:.2}%",
                s.lost,
                s.lossy_rekeys,
                s.rekeys,
                100.0 * s.worst
            )
        })
    };
    out.push(Finding {
        claim: "prefer new SA: datagrams are lost at every rekey, in both directions".into(),
        holds: every(&pf) && every(&pr),
        evidence: format!(
            "flowsec prefer-new: → {}; ← {} (holds if ≥ 80% of rekeys lose something each way)",
            show(&pf),
            show(&pr)
        ),
    });

    let (kf, kr) = (
        dir(at30("flowsec keep-old, skew 2 s"), false),
        dir(at30("flowsec keep-old, skew 2 s"), true),
    );
    out.push(Finding {
        claim: "keep old SA with skewed lifetimes: responder → initiator loses a large share for seconds after each rekey, the other way not".into(),
        holds: match (&kf, &kr) {
            (Some(f), Some(r)) => r.lost >= 10 * f.lost.max(1) && r.worst >= 0.2,
            _ => false,
        },
        evidence: format!(
            "flowsec keep-old, gwB's SAs {SKEW_S} s longer: → {}; ← {} (holds if ← loses ≥ 10× → and its worst second ≥ 20%)",
            show(&kf),
            show(&kr)
        ),
    });

    let per_rekey = |s: &Option<LegSum>| {
        s.as_ref()
            .map_or(f64::NAN, |s| s.lost as f64 / s.rekeys.max(1) as f64)
    };
    let nf = dir(at30("flowsec prefer-new, PFS off"), false);
    let nr = dir(at30("flowsec prefer-new, PFS off"), true);
    let lf = dir(at30("flowsec loss-free, PFS off"), false);
    let lr = dir(at30("flowsec loss-free, PFS off"), true);
    let with_pfs = per_rekey(&pf) + per_rekey(&pr);
    let without = per_rekey(&nf) + per_rekey(&nr);
    let none_lost = [&lf, &lr]
        .iter()
        .all(|s| s.as_ref().is_some_and(|s| s.lost == 0));
    out.push(Finding {
        claim: "without PFS nothing is lost".into(),
        holds: none_lost && without <= (0.5 * with_pfs).max(1.0),
        evidence: format!(
            "loss-free without PFS: → {}, ← {}; prefer-new: {without:.1} lost per rekey (both ways) without PFS vs {with_pfs:.1} with (holds if loss-free loses none and prefer-new without PFS at most half of with, or ≤ 1)",
            show(&lf),
            show(&lr)
        ),
    });

    let excess = |imp: Peer, g: &str| {
        probes
            .iter()
            .find(|p| p.imp == imp && p.group == g)
            .map_or(f64::NAN, |p| p.at_rekey_ms - p.base_ms)
    };
    let dh_imp = if probes.iter().any(|p| p.imp == Peer::StrongSwan) {
        Peer::StrongSwan
    } else {
        Peer::Flowsec
    };
    let big = if quick { "modp4096" } else { "modp8192" };
    let (small_x, big_x) = (excess(dh_imp, "modp768"), excess(dh_imp, big));
    out.push(Finding {
        claim: "the DH computation stalls the data path, longer for a larger group".into(),
        holds: big_x > small_x + 2.0 && big_x > 2.0,
        evidence: format!(
            "{}: the gap at a rekey exceeds the one away from rekeys by {small_x:.1} ms with modp768, {big_x:.1} ms with {big} (holds if the larger group's excess is > 2 ms and over 2 ms above the smaller's)",
            dh_imp.label()
        ),
    });

    // flowsec's own claim: its loss-free runs with PFS, flowsec at one
    // end at least.
    let ours_lossless = |sat: bool| -> Vec<&Run> {
        runs.iter()
            .filter(|r| r.config.contains("loss-free") || r.config.contains('↔'))
            .filter(|r| r.saturation.is_some() == sat)
            .filter(|r| r.esp != "3des-md5")
            .collect()
    };
    out.push(lossless_finding(
        &ours_lossless(false),
        "at the study's 30 Mbit/s",
        false,
    ));
    let sat = ours_lossless(true);
    out.push(if sat.is_empty() {
        Finding {
            claim: LOSSLESS_AT_95.into(),
            holds: false,
            evidence:
                "not measured: --quick runs no saturation (95% of the highest loss-free rate)"
                    .into(),
        }
    } else {
        lossless_finding(&sat, "at 95% of the highest loss-free rate", true)
    });

    let ours: Vec<&Probe> = probes.iter().filter(|p| p.imp == Peer::Flowsec).collect();
    let worst = ours
        .iter()
        .map(|p| p.at_rekey_ms - p.base_ms)
        .fold(f64::NEG_INFINITY, f64::max);
    out.push(Finding {
        claim: "flowsec: DH runs off the data path: the probe's gap at a rekey within 2 ms of its gap away from rekeys, every group".into(),
        holds: !ours.is_empty() && worst <= 2.0,
        evidence: format!(
            "largest excess {worst:.1} ms over {} groups ({})",
            ours.len(),
            ours.iter()
                .map(|p| format!("{} {:+.1}", p.group, p.at_rekey_ms - p.base_ms))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    });
    out
}
