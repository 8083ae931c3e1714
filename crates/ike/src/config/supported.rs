//! Configured proposals cut to what the [`Provider`] runs: the PRFs and key
//! exchange groups (RFC 7296 §3.3.2 transform types 2 and 4) of an IKE SA
//! and a Child SA's PFS groups are the Provider's, not a table of ours.
//! The keyword tables of [`super::proposal`] say what can be written; this
//! says what can be negotiated, once, when the core is made, so that no
//! offer, selection or initiation sees an algorithm it cannot compute.
//!
//! A proposal that loses every PRF or every group is dropped rather than
//! kept without them: a Child SA proposal whose PFS groups all went would
//! otherwise negotiate without PFS, which the configuration did not ask
//! for.

use flowsec_crypto::Provider;
use flowsec_wire::iana::DhGroup;

use super::{ChildProposal, Config, IkeProposal};

/// Remove from `config` every PRF and key exchange group `provider` lacks
/// (`DhGroup::NONE` in Child SA proposals is kept: it is "no PFS", not a
/// group), and every proposal left without a PRF or group. Returns one
/// line per removal, for the log; none with a provider that has every
/// algorithm flowsec implements (the named providers do).
pub fn restrict_to(config: &mut Config, provider: &Provider) -> Vec<String> {
    let mut notes = Vec::new();
    for conn in &mut config.connections {
        let name = conn.name.clone();
        conn.proposals
            .retain_mut(|p| ike_usable(p, provider, &name, &mut notes));
        if conn.proposals.is_empty() {
            notes.push(format!(
                "{name}: no IKE proposal left that the crypto provider runs"
            ));
        }
        for child in &mut conn.children {
            let name = format!("{name}.{}", child.name);
            child
                .esp_proposals
                .retain_mut(|p| child_usable(p, provider, &name, &mut notes));
            child
                .ah_proposals
                .retain_mut(|p| child_usable(p, provider, &name, &mut notes));
        }
    }
    notes
}

/// Cut `p` to the provider's PRFs and groups; whether anything of each is
/// left.
fn ike_usable(p: &mut IkeProposal, provider: &Provider, at: &str, notes: &mut Vec<String>) -> bool {
    let shown = p.to_string();
    p.prf.retain(|&id| {
        let ok = provider.prf(id).is_some();
        if !ok {
            notes.push(format!(
                "{at}: {id} not in the crypto provider, dropped from {shown}"
            ));
        }
        ok
    });
    p.dh.retain(|&g| group_usable(g, provider, at, &shown, notes));
    let usable = !p.prf.is_empty() && !p.dh.is_empty();
    if !usable {
        notes.push(format!("{at}: IKE proposal {shown} dropped"));
    }
    usable
}

/// Cut `p`'s PFS groups to the provider's; whether a proposal that had
/// groups still has one.
fn child_usable(
    p: &mut ChildProposal,
    provider: &Provider,
    at: &str,
    notes: &mut Vec<String>,
) -> bool {
    if p.dh.is_empty() {
        return true;
    }
    let shown = p.to_string();
    p.dh.retain(|&g| g == DhGroup::NONE || group_usable(g, provider, at, &shown, notes));
    if p.dh.is_empty() {
        notes.push(format!(
            "{at}: proposal {shown} dropped (no PFS group left)"
        ));
        return false;
    }
    true
}

fn group_usable(
    g: DhGroup,
    provider: &Provider,
    at: &str,
    shown: &str,
    notes: &mut Vec<String>,
) -> bool {
    let ok = provider.key_exchange(g).is_some();
    if !ok {
        notes.push(format!(
            "{at}: {g} not in the crypto provider, dropped from {shown}"
        ));
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse;
    use flowsec_crypto::backend::{IKE_KEY_EXCHANGES, IKE_PRFS};
    use flowsec_wire::iana::PrfId;

    fn config(ike: &str, esp: &str) -> Config {
        let text = format!(
            "connections {{\n c {{\n  proposals = {ike}\n  local {{ auth = psk }}\n  \
             remote {{ auth = psk }}\n  children {{ x {{ esp_proposals = {esp} }} }}\n }}\n}}"
        );
        parse("test", &text).unwrap()
    }

    /// The provider of every named constructor, less MODP groups and
    /// HMAC-MD5.
    fn no_modp_no_md5() -> Provider {
        Provider::fastest()
            .with_prfs(
                IKE_PRFS
                    .iter()
                    .copied()
                    .filter(|p| p.id() != PrfId::HMAC_MD5)
                    .collect(),
            )
            .with_key_exchanges(
                IKE_KEY_EXCHANGES
                    .iter()
                    .copied()
                    .filter(|g| !g.group().to_string().starts_with("MODP"))
                    .collect(),
            )
    }

    #[test]
    fn full_provider_changes_nothing() {
        let mut c = config(
            "aes128-sha256-prfmd5-prfaesxcbc-modp768-ecp521-curve25519, default",
            "aes128-sha256-modp8192-none, default",
        );
        let before = c.clone();
        for p in [
            Provider::fastest(),
            Provider::rustcrypto(),
            Provider::aws_lc(),
        ] {
            assert!(restrict_to(&mut c, &p).is_empty());
            assert_eq!(c, before);
        }
    }

    #[test]
    fn unsupported_algorithms_and_proposals_are_dropped() {
        let mut c = config(
            "aes128-sha256-prfmd5-prfsha1-modp2048-ecp256, aes256-sha256-modp2048, \
             aes128-md5-prfmd5-ecp256",
            "aes128-sha256-modp2048-ecp256, aes128-sha1-modp2048, aes128-sha1-modp2048-none, \
             aes128-sha1",
        );
        let notes = restrict_to(&mut c, &no_modp_no_md5());
        let conn = &c.connections[0];
        assert_eq!(
            conn.proposals
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["aes128-sha256-prfsha1-ecp256"]
        );
        // PFS: a proposal whose only group went is dropped, not kept
        // without PFS; NONE stays; no DH at all stays as it was.
        assert_eq!(
            conn.children[0]
                .esp_proposals
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            [
                "aes128-sha256-ecp256-noesn",
                "aes128-sha1-none-noesn",
                "aes128-sha1-noesn"
            ]
        );
        assert!(
            notes
                .iter()
                .any(|n| n.contains("IKE proposal aes256-sha256")),
            "{notes:?}"
        );
        assert!(
            notes.iter().any(|n| n.contains("no PFS group left")),
            "{notes:?}"
        );
        assert!(notes.iter().all(|n| n.starts_with("c")), "{notes:?}");
    }

    #[test]
    fn a_connection_left_without_proposals_is_noted() {
        let mut c = config("aes128-sha256-modp2048", "aes128gcm16");
        let notes = restrict_to(&mut c, &no_modp_no_md5());
        assert!(c.connections[0].proposals.is_empty());
        assert!(
            notes.iter().any(|n| n.contains("no IKE proposal left")),
            "{notes:?}"
        );
    }

    /// The core applies it once, when made, and says what it dropped.
    #[test]
    fn the_core_runs_only_what_its_provider_has() {
        let c = config("aes128-sha256-modp2048-ecp256", "aes128gcm16");
        let mut ike = crate::Ike::new(
            c,
            no_modp_no_md5(),
            Box::new(crate::random::SeededRandom::new(1)),
            crate::Settings::default(),
        );
        assert_eq!(
            ike.connections()[0].proposals[0].to_string(),
            "aes128-sha256-prfsha256-ecp256"
        );
        let events = ike.take_events();
        assert!(
            events.iter().any(|e| e.to_string().contains("MODP-2048")),
            "{events:?}"
        );
    }
}
