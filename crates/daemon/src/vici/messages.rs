//! What vici's messages carry, built from flowsec's own types with
//! charon's key names and value formats (vici README, "list-sa",
//! "list-conn", "ike-updown", …; strongSwan's algorithm names), so that
//! `swanctl --list-sas` through flowsec reads as through charon.

use flowsec_ike::config::{AddrSpec, AuthConfig, AuthKind, ChildConfig, Connection};
use flowsec_ike::{Algorithms, ChildSaInfo, IkeSaInfo};
use flowsec_setkey::SaLive;
use flowsec_wire::iana::{DhGroup, EncrId, IntegId};
use flowsec_wire::vici::Section;

/// strongSwan's name of an algorithm (`AES_GCM_16`, `HMAC_SHA2_256_128`,
/// `CURVE_25519`) from flowsec's IANA-style one (`AES-GCM-16`).
pub fn strongswan_name(iana: &str) -> String {
    match iana {
        "CURVE25519" => "CURVE_25519".into(),
        "CAST5-CBC" => "CAST_CBC".into(),
        "DES-CBC" => "DES_CBC".into(),
        "AES-XCBC-MAC-96" => "AES_XCBC_96".into(),
        other => other.replace('-', "_"),
    }
}

/// An identity as charon prints it (`%Y`): a host name without the `@`
/// that marks it in swanctl.conf (a key id, `@#…`, keeps it).
fn charon_id(id: &str) -> &str {
    match id.strip_prefix('@') {
        Some(rest) if !rest.starts_with('#') => rest,
        _ => id,
    }
}

/// The `encr-alg`, `integ-alg`, `prf-alg`, `dh-group` keys.
fn with_algorithms(mut s: Section, a: &Algorithms) -> Section {
    if let Some((encr, bits)) = a.encr {
        s = s.with("encr-alg", strongswan_name(&encr.to_string()));
        // A key size only where the algorithm has a choice of them.
        if encr != EncrId::CHACHA20_POLY1305 && encr != EncrId::NULL {
            s = s.with("encr-keysize", bits.to_string());
        }
    }
    if a.integ != IntegId::NONE {
        s = s.with("integ-alg", strongswan_name(&a.integ.to_string()));
    }
    if let Some(prf) = a.prf {
        s = s.with("prf-alg", strongswan_name(&prf.to_string()));
    }
    if a.dh != DhGroup::NONE {
        s = s.with("dh-group", strongswan_name(&a.dh.to_string()));
    }
    // strongSwan 6's `ake1` … `ake7` (vici_query.c `list_ake()`).
    for (slot, g) in a.addke.iter().enumerate() {
        if *g != DhGroup::NONE {
            s = s.with(&format!("ake{}", slot + 1), strongswan_name(&g.to_string()));
        }
    }
    if a.esn {
        s = s.with("esn", "1");
    }
    s
}

fn list(items: impl IntoIterator<Item = impl ToString>) -> Vec<Vec<u8>> {
    items
        .into_iter()
        .map(|i| i.to_string().into_bytes())
        .collect()
}

/// One IKE SA as `list-sa` carries it, without its `child-sas` (what
/// `ike-updown` and `ike-rekey` carry).
pub fn ike_sa(sa: &IkeSaInfo) -> Section {
    let mut s = Section::default()
        .with("uniqueid", sa.uid.to_string())
        .with("version", "2")
        .with("state", sa.state)
        .with("local-host", sa.local.ip().to_string())
        .with("local-port", sa.local.port().to_string())
        .with("local-id", charon_id(&sa.local_id))
        .with("remote-host", sa.remote.ip().to_string())
        .with("remote-port", sa.remote.port().to_string())
        .with("remote-id", charon_id(&sa.remote_id));
    if sa.initiator {
        s = s.with("initiator", "yes");
    }
    s = s
        .with("initiator-spi", format!("{:016x}", sa.spi_i))
        .with("responder-spi", format!("{:016x}", sa.spi_r));
    if sa.nat {
        s = s.with("nat-any", "yes");
    }
    if let Some(a) = &sa.algorithms {
        s = with_algorithms(s, a);
    }
    // strongSwan 6's condition (swanctl prints `…/PPK`).
    if sa.ppk {
        s = s.with("ppk", "yes");
    }
    if let Some(t) = sa.established_s {
        s = s.with("established", t.to_string());
    }
    if let Some(t) = sa.rekey_in_s {
        s = s.with("rekey-time", t.to_string());
    }
    s.with_list("local-vips", list(&sa.local_vips))
        .with_list("remote-vips", list(&sa.remote_vips))
        .with_list("tasks-queued", Vec::new())
        .with_list("tasks-active", Vec::new())
        .with_list("tasks-passive", Vec::new())
}

/// The counters of one Child SA's inbound and outbound SA.
pub struct ChildLive {
    /// The inbound SA.
    pub sa_in: SaLive,
    /// The outbound SA.
    pub sa_out: SaLive,
}

/// One Child SA as `list-sa` carries it; `uid` is its unique id.
pub fn child_sa(c: &ChildSaInfo, uid: u32, live: &ChildLive) -> Section {
    let mut s = Section::default()
        .with("name", c.name.as_str())
        .with("uniqueid", uid.to_string())
        .with("reqid", c.reqid.to_string())
        .with("state", c.state)
        .with("mode", c.mode)
        .with("protocol", c.sa_in.protocol.to_string().to_uppercase());
    if c.encap {
        s = s.with("encap", "yes");
    }
    s = s
        .with("spi-in", format!("{:08x}", c.sa_in.spi))
        .with("spi-out", format!("{:08x}", c.sa_out.spi));
    if let Some((i, o)) = c.cpis {
        s = s
            .with("cpi-in", format!("{i:04x}"))
            .with("cpi-out", format!("{o:04x}"));
    }
    if c.per_cpu {
        s = s.with("per-cpu-sas", "yes");
        if let Some(cpu) = c.cpu {
            s = s.with("cpu", cpu.to_string());
        }
    }
    s = with_algorithms(s, &c.algorithms)
        .with("bytes-in", live.sa_in.bytes.to_string())
        .with("packets-in", live.sa_in.packets.to_string())
        .with("bytes-out", live.sa_out.bytes.to_string())
        .with("packets-out", live.sa_out.packets.to_string());
    if let Some(t) = c.rekey_in_s {
        s = s.with("rekey-time", t.to_string());
    }
    if let Some(t) = c.expire_in_s {
        s = s.with("life-time", t.to_string());
    }
    s.with("install-time", c.installed_s.to_string())
        .with_list("local-ts", list(&c.local_ts))
        .with_list("remote-ts", list(&c.remote_ts))
}

/// A Child SA's unique id: charon numbers them as it makes them; flowsec
/// has its reqid and inbound SPI, and the SPI is unique while it lives.
pub fn child_uid(c: &ChildSaInfo) -> u32 {
    c.sa_in.spi
}

/// The `child-sas` key of a Child SA: charon's `NAME-UNIQUEID`.
pub fn child_key(c: &ChildSaInfo) -> String {
    format!("{}-{}", c.name, child_uid(c))
}

/// One connection as `list-conn` carries it (vici README "list-conn").
pub fn connection(c: &Connection) -> Section {
    let addrs = |a: &[AddrSpec]| {
        if a.is_empty() {
            vec![b"%any".to_vec()]
        } else {
            list(a.iter().map(addr_spec))
        }
    };
    let mut children = Section::default();
    for ch in &c.children {
        children = children.with_section(&ch.name, child_config(ch));
    }
    let mut conn = Section::default();
    // strongSwan 6's list-conns keys (RFC 8784).
    if let Some(id) = &c.ppk_id {
        conn = conn.with("ppk_id", id.as_str());
    }
    if c.ppk_required {
        conn = conn.with("ppk_required", "yes");
    }
    conn.with_list("local_addrs", addrs(&c.local_addrs))
        .with_list("remote_addrs", addrs(&c.remote_addrs))
        .with("local_port", c.local_port.to_string())
        .with("remote_port", c.remote_port.to_string())
        .with("version", if c.version == 2 { "IKEv2" } else { "0" })
        .with("reauth_time", c.reauth_time.as_secs().to_string())
        .with("rekey_time", c.rekey_time.as_secs().to_string())
        .with("unique", format!("{:?}", c.unique).to_uppercase())
        .with_section("local-1", auth(&c.local))
        .with_section("remote-1", auth(&c.remote))
        .with_section("children", children)
}

fn addr_spec(a: &AddrSpec) -> String {
    a.to_string()
}

/// charon's `auth_class` names.
fn auth_class(a: &AuthKind) -> &'static str {
    match a {
        AuthKind::Psk => "pre-shared key",
        AuthKind::Pubkey(_) => "public key",
        AuthKind::Eap => "EAP",
        _ => "any",
    }
}

fn auth(a: &AuthConfig) -> Section {
    let id = a.id.as_ref().map_or("%any".to_string(), |i| i.to_string());
    Section::default()
        .with("class", auth_class(&a.auth))
        .with("id", id)
        .with_list("groups", Vec::new())
        .with_list("certs", Vec::new())
        .with_list("cacerts", Vec::new())
}

fn child_config(ch: &ChildConfig) -> Section {
    Section::default()
        .with("mode", ch.mode.to_string().to_uppercase())
        .with("rekey_time", ch.rekey_time.as_secs().to_string())
        .with("rekey_bytes", ch.rekey_bytes.to_string())
        .with("rekey_packets", ch.rekey_packets.to_string())
        .with_list("local-ts", list(ch.local_ts.iter()))
        .with_list("remote-ts", list(ch.remote_ts.iter()))
}

/// A trap policy as `list-policy` carries it.
pub fn trap_policy(conn: &str, ch: &ChildConfig) -> Section {
    Section::default()
        .with("child", ch.name.as_str())
        .with("ike", conn)
        .with("mode", ch.mode.to_string().to_uppercase())
        .with_list("local-ts", list(ch.local_ts.iter()))
        .with_list("remote-ts", list(ch.remote_ts.iter()))
}

/// `{ success = yes }`.
pub fn success() -> Section {
    Section::default().with("success", "yes")
}

/// `{ success = no, errmsg = WHY }`.
pub fn failure(why: impl ToString) -> Section {
    Section::default()
        .with("success", "no")
        .with("errmsg", why.to_string())
}
