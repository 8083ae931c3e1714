//! Gateways keyed by IKEv2 for the lab (study S2's rekeying): at each end
//! flowsec (`flowsec up -c swanctl.conf`) or strongSwan's charon with
//! kernel-libipsec, both reading the same swanctl.conf, with the Child SA
//! lifetimes and `rekey_switch` a scenario asks for; and a [`Watch`] on a
//! gateway's Child SAs, to tell when they are rekeyed.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::peers::Peer;
use crate::LabError;

/// Connection keys for IKE and ESP over TCP: `(key, value)` pairs.
pub type TcpKeys = &'static [(&'static str, &'static str)];

/// One gateway of an IKE bed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IkeEnd {
    /// flowsec or strongSwan.
    pub imp: Peer,
    /// The Child SA's `rekey_time` in seconds (0: this end never rekeys).
    pub rekey_s: u32,
    /// Its `life_time` in seconds.
    pub life_s: u32,
    /// flowsec's `rekey_switch` (`None`: the default, loss-free; strongSwan
    /// has no such key).
    pub switch: Option<&'static str>,
    /// flowsec's connection keys for IKE and ESP over TCP (RFC 9329):
    /// `tcp_encap = yes` and `tcp_tls = yes`, or none (UDP).
    pub tcp: TcpKeys,
    /// More `flowsec up` options (`--backend engine`, `--tcp-listen`).
    pub up_args: Vec<&'static str>,
}

impl IkeEnd {
    /// flowsec or strongSwan with these Child SA lifetimes, UDP, the
    /// defaults otherwise.
    pub fn new(imp: Peer, rekey_s: u32, life_s: u32) -> IkeEnd {
        IkeEnd {
            imp,
            rekey_s,
            life_s,
            switch: None,
            tcp: &[],
            up_args: Vec::new(),
        }
    }
}

impl IkeEnd {
    /// This end's swanctl.conf ([`crate::peers::swanctl_conf`] between
    /// `local` and `remote`) with its TCP keys and its Child SA's
    /// lifetimes, without jitter (`rand_time = 0`: rekeys at exactly
    /// `rekey_time`; strongSwan needs it explicit when `rekey_time = 0`,
    /// or its default jitter would be the whole life).
    pub fn swanctl_conf(&self, esp: &str, local: (&str, &str), remote: (&str, &str)) -> String {
        let mut conf = crate::peers::swanctl_conf(local.0, remote.0, local.1, remote.1, esp);
        let conn = &mut conf.connections[0];
        for (k, v) in self.tcp {
            conn.key(k, v);
        }
        let child = &mut conn.children[0];
        child
            .key("rekey_time", format_args!("{}s", self.rekey_s))
            .key("life_time", format_args!("{}s", self.life_s))
            .key("rand_time", "0s");
        if let Some(w) = self.switch {
            child.key("rekey_switch", w);
        }
        conf.render()
    }
}

/// Two gateways keyed by IKEv2 (PSK) with one tunnel-mode Child SA `lab`
/// between hostA and hostB; gwA initiates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IkeSetup {
    /// The ESP proposal (strongSwan's syntax: `3des-md5-modp1024`).
    pub esp: String,
    pub a: IkeEnd,
    pub b: IkeEnd,
}

impl IkeSetup {
    /// `flowsec ↔ strongSwan`.
    pub fn pair(&self) -> String {
        format!("{} ↔ {}", self.a.imp.label(), self.b.imp.label())
    }
}

/// How to ask a gateway for its Child SAs: flowsec's control socket or
/// charon's vici socket (both files in the work directory, reachable from
/// any namespace).
#[derive(Debug, Clone)]
pub struct Watch {
    imp: Peer,
    /// flowsec's binary (for `flowsec ctl`).
    bin: String,
    socket: PathBuf,
}

impl Watch {
    pub(crate) fn new(imp: Peer, bin: &str, work: &Path, gw: &str) -> Watch {
        let socket = match imp {
            Peer::StrongSwan => work.join(format!("{gw}.vici")),
            _ => work.join(format!("{gw}.sock")),
        };
        Watch {
            imp,
            bin: bin.to_string(),
            socket,
        }
    }

    /// The inbound SPIs (hex) of every Child SA the gateway holds now.
    pub fn spis(&self) -> Result<Vec<String>, LabError> {
        let s = self.socket.to_string_lossy().into_owned();
        let (prog, args): (&str, Vec<String>) = match self.imp {
            Peer::StrongSwan => (
                "swanctl",
                ["--list-sas", "--raw", "--uri", &format!("unix://{s}")]
                    .map(String::from)
                    .to_vec(),
            ),
            _ => (
                self.bin.as_str(),
                ["ctl", "--socket", &s, "sas", "--json"]
                    .map(String::from)
                    .to_vec(),
            ),
        };
        let out = Command::new(prog)
            .args(&args)
            .output()
            .map_err(|error| LabError::Spawn {
                command: format!("{prog} {}", args.join(" ")),
                error,
            })?;
        let text = String::from_utf8_lossy(&out.stdout);
        Ok(match self.imp {
            Peer::StrongSwan => vici_spis(&text),
            _ => ctl_spis(&text),
        })
    }
}

/// The `spi-in=…` values of `swanctl --list-sas --raw`.
fn vici_spis(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || c == '{' || c == '}')
        .filter_map(|t| t.strip_prefix("spi-in="))
        .map(|v| v.trim_start_matches("0x").to_ascii_lowercase())
        .collect()
}

/// The `spi_in` of every Child SA in `flowsec ctl sas --json`.
fn ctl_spis(text: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    v["ike_sas"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|ike| ike["child_sas"].as_array().into_iter().flatten())
        .filter_map(|c| c["spi_in"].as_str().map(str::to_ascii_lowercase))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ends_read_the_file_and_strongswan_gets_no_flowsec_key() {
        let end = |imp, rekey_s, switch| IkeEnd {
            switch,
            ..IkeEnd::new(imp, rekey_s, 5)
        };
        let a = IkeEnd {
            tcp: &[("tcp_encap", "yes"), ("tcp_tls", "yes")],
            ..end(Peer::Flowsec, 4, Some("keep-old"))
        };
        let text = a.swanctl_conf(
            "3des-md5-modp1024",
            ("192.0.2.1", "10.1.0.2"),
            ("192.0.2.2", "10.2.0.2"),
        );
        let c = flowsec_ike::config::parse("gwA-swanctl.conf", &text).unwrap();
        let ch = &c.connections[0].children[0];
        assert_eq!(
            (
                ch.rekey_time.as_secs(),
                ch.life_time.as_secs(),
                ch.rand_time.as_secs()
            ),
            (4, 5, 0)
        );
        assert_eq!(ch.rekey_switch.as_str(), "keep-old");
        assert!(c.connections[0].tcp.tls, "{text}");
        let b = end(Peer::StrongSwan, 0, None).swanctl_conf("aes128", ("a", "1"), ("b", "2"));
        assert!(
            !b.contains("rekey_switch") && b.contains("rand_time = 0s"),
            "{b}"
        );
    }

    #[test]
    fn spis_from_both_listings() {
        let raw = "list-sa event {lab {uniqueid=1 child-sas {lab-2 {name=lab spi-in=c1a2b3c4 spi-out=c5d6e7f8} lab-3 {spi-in=CAFE0001 spi-out=1}}}}";
        assert_eq!(vici_spis(raw), vec!["c1a2b3c4", "cafe0001"]);
        let json =
            r#"{"ike_sas":[{"child_sas":[{"spi_in":"c0000101"},{"spi_in":"c0000102"}]}],"sas":[]}"#;
        assert_eq!(ctl_spis(json), vec!["c0000101", "c0000102"]);
        assert!(ctl_spis("not json").is_empty());
    }
}
