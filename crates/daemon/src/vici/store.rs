//! What vici clients loaded (`load-conn`, `load-shared`, `load-pool`):
//! kept as the swanctl.conf settings tree each message is, so that one
//! interpreter ([`flowsec_ike::config::from_tree`]) checks them as it
//! checks a file, with the same keys, values and errors. `swanctl
//! --load-all` reads swanctl.conf itself and sends each connection's
//! section as a message: lists (`local_addrs`, `proposals`, `local_ts`)
//! arrive as vici lists and are joined as the file writes them.

use core::fmt;

use flowsec_crypto::Provider;
use flowsec_ike::cert::{parse_crl, pem_or_der, Certificate, Credentials, Crl, PrivateKey};
use flowsec_ike::config::lexer::{Section as Tree, Setting};
use flowsec_wire::vici::{Section, Value};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

/// Why a load message was refused (answered `success = no`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// The message names nothing to load (`load-conn {}`).
    Empty,
    /// A value that must be text is not UTF-8.
    NotText {
        /// Its key.
        key: String,
    },
    /// A key the command needs is missing.
    Missing {
        /// The key.
        key: &'static str,
    },
    /// A value of a kind the key does not take (a list where a section
    /// must be).
    Shape {
        /// The key.
        key: String,
    },
    /// A `load-shared` type flowsec does not use (XAUTH, NTLM).
    SharedType(String),
    /// Raw public keys inside a connection (`pubkeys`): not supported.
    InlineCredential {
        /// The key.
        key: String,
    },
    /// A certificate that does not parse (or a CA one without cA).
    Certificate(String),
    /// A private key that does not load.
    Key(String),
    /// A `load-cert` type other than X509 (attribute certificates, CRLs).
    CertType(String),
    /// A key flowsec does not support (an authority on a PKCS#11 token).
    Unsupported {
        /// `NAME.KEY`.
        key: String,
    },
    /// A key swanctl.conf(5) does not know.
    Unknown {
        /// `NAME.KEY`.
        key: String,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Empty => f.write_str("nothing to load in the message"),
            LoadError::NotText { key } => write!(f, "{key}: value is not text"),
            LoadError::Missing { key } => write!(f, "missing {key}"),
            LoadError::Shape { key } => write!(f, "{key}: wrong kind of value"),
            LoadError::SharedType(t) => {
                write!(f, "shared key type {t} is not supported (IKE and EAP are)")
            }
            LoadError::InlineCredential { key } => {
                write!(f, "{key}: raw public keys are not supported by flowsec yet")
            }
            LoadError::Certificate(why) => write!(f, "certificate: {why}"),
            LoadError::Unsupported { key } => write!(f, "{key}: not supported by flowsec"),
            LoadError::Unknown { key } => write!(f, "{key}: unknown key"),
            LoadError::Key(why) => write!(f, "private key: {why}"),
            LoadError::CertType(t) => {
                write!(
                    f,
                    "certificate type {t} is not supported (X509 and X509_CRL are)"
                )
            }
        }
    }
}

/// What vici loaded, in load order (a name loaded again replaces its
/// entry in place).
#[derive(Debug, Default, Clone)]
pub struct Loaded {
    conns: Vec<Tree>,
    shared: Vec<Tree>,
    pools: Vec<Tree>,
    /// `load-cert` and the `certs`/`cacerts` data of `load-conn`: a name
    /// (`vici-` and a digest) each, which the connection refers to.
    certs: Vec<(String, Certificate)>,
    cas: Vec<(String, Certificate)>,
    /// `load-key`, by the id `load-key` answered.
    keys: Vec<(String, PrivateKey)>,
    /// `load-cert` of type X509_CRL.
    crls: Vec<(String, Crl)>,
    /// `load-authority`, by name.
    authorities: Vec<Authority>,
}

/// A certification authority of `load-authority` (swanctl.conf's
/// `authorities.NAME`, its certificate's data sent by swanctl as
/// `cacert`): a trust anchor, with revocation URIs kept and not used
/// (flowsec fetches no CRL and asks no OCSP responder, as for `-c`'s
/// authorities).
#[derive(Debug, Clone)]
pub struct Authority {
    /// Its name.
    pub name: String,
    /// The CA certificate.
    pub cert: Certificate,
    /// `crl_uris`.
    pub crl_uris: Vec<String>,
    /// `ocsp_uris`.
    pub ocsp_uris: Vec<String>,
    /// `cert_uri_base`.
    pub cert_uri_base: Option<String>,
}

/// Put `tree` in `list` in place of the one with its name, or at the end.
fn put(list: &mut Vec<Tree>, tree: Tree) {
    match list.iter_mut().find(|t| t.name == tree.name) {
        Some(t) => *t = tree,
        None => list.push(tree),
    }
}

/// Take the entry named `name` out of `list`; whether there was one.
fn take(list: &mut Vec<Tree>, name: &str) -> bool {
    let before = list.len();
    list.retain(|t| t.name != name);
    list.len() != before
}

impl Loaded {
    /// With the connections of a `load-conn` message (`{ NAME = { … } }`).
    pub fn with_conn(&self, msg: &Section) -> Result<Loaded, LoadError> {
        let mut next = self.clone();
        if msg.entries.is_empty() {
            return Err(LoadError::Empty);
        }
        for (name, value) in &msg.entries {
            let Value::Section(body) = value else {
                return Err(LoadError::Shape { key: name.clone() });
            };
            let t = tree(name, body, &mut |key, items| next.cert_names(key, items))?;
            put(&mut next.conns, t);
        }
        Ok(next)
    }

    /// The names of the certificates in `items` (`certs` or `cacerts`
    /// data of a connection), each added if it is new.
    fn cert_names(&mut self, key: &str, items: &[Vec<u8>]) -> Result<String, LoadError> {
        let ca = key == "cacerts";
        let mut names = Vec::new();
        for data in items {
            names.push(self.add_cert(data, ca)?);
        }
        Ok(names.join(", "))
    }

    /// Add the certificate `data` (PEM or DER; `ca`: a trust anchor) once;
    /// its name.
    fn add_cert(&mut self, data: &[u8], ca: bool) -> Result<String, LoadError> {
        let cert = Certificate::parse(&pem_or_der(data, "CERTIFICATE"))
            .map_err(|e| LoadError::Certificate(e.to_string()))?;
        if ca && !cert.ca {
            return Err(LoadError::Certificate(
                "flag CA, and basicConstraints cA is not set".into(),
            ));
        }
        let name = format!("vici-{}", &hex_of(&Sha256::digest(&cert.der))[..16]);
        let list = if ca { &mut self.cas } else { &mut self.certs };
        if !list.iter().any(|(n, _)| *n == name) {
            list.push((name.clone(), cert));
        }
        Ok(name)
    }

    /// With the certificate of a `load-cert` message (`type = X509`,
    /// `flag = NONE|CA`, `data`).
    pub fn with_cert(&self, msg: &Section) -> Result<Loaded, LoadError> {
        let ty = text(msg, "type")?.unwrap_or("X509");
        let ca = text(msg, "flag")?.is_some_and(|f| f.eq_ignore_ascii_case("ca"));
        let Some(Value::Str(data)) = msg.get("data") else {
            return Err(LoadError::Missing { key: "data" });
        };
        let mut next = self.clone();
        match ty.to_ascii_uppercase().as_str() {
            "X509" => {
                next.add_cert(data, ca)?;
            }
            "X509_CRL" => {
                let crl = parse_crl(data).map_err(|e| LoadError::Certificate(e.to_string()))?;
                let name = format!("vici-crl-{}", &hex_of(&Sha256::digest(data))[..16]);
                next.crls.retain(|(n, _)| *n != name);
                next.crls.push((name, crl));
            }
            _ => return Err(LoadError::CertType(ty.to_string())),
        }
        Ok(next)
    }

    /// With the private key of a `load-key` message (`type`, `data`), and
    /// its id as charon gives it: the SHA-1 of its subjectPublicKey, hex
    /// (strongSwan's KEYID_PUBKEY_SHA1, `pki --keyid`'s "subjkey";
    /// vici_cred.c), which `unload-key` takes back.
    pub fn with_key(
        &self,
        provider: &Provider,
        msg: &Section,
    ) -> Result<(Loaded, String), LoadError> {
        let Some(Value::Str(data)) = msg.get("data") else {
            return Err(LoadError::Missing { key: "data" });
        };
        let key = PrivateKey::parse(provider, data, "vici load-key")
            .map_err(|e| LoadError::Key(e.to_string()))?;
        let id = hex_of(&flowsec_crypto::fixed::sha1(&[&key.public_key()]));
        let mut next = self.clone();
        next.keys.retain(|(i, _)| *i != id);
        next.keys.push((id.clone(), key));
        Ok((next, id))
    }

    /// Without the key `id`; `None` if there is none.
    pub fn without_key(&self, id: &str) -> Option<Loaded> {
        let mut next = self.clone();
        let before = next.keys.len();
        next.keys.retain(|(i, _)| i != id);
        (next.keys.len() != before).then_some(next)
    }

    /// The loaded keys' ids.
    pub fn key_ids(&self) -> Vec<String> {
        self.keys.iter().map(|(i, _)| i.clone()).collect()
    }

    /// With the authorities of a `load-authority` message (`{ NAME = {
    /// cacert = DATA, crl_uris = [...], ocsp_uris = [...], cert_uri_base
    /// = URI } }`); one of that name is replaced.
    pub fn with_authority(&self, msg: &Section) -> Result<Loaded, LoadError> {
        if msg.entries.is_empty() {
            return Err(LoadError::Empty);
        }
        let mut next = self.clone();
        for (name, value) in &msg.entries {
            let Value::Section(body) = value else {
                return Err(LoadError::Shape { key: name.clone() });
            };
            let a = authority(name, body)?;
            match next.authorities.iter_mut().find(|a| a.name == *name) {
                Some(old) => *old = a,
                None => next.authorities.push(a),
            }
        }
        Ok(next)
    }

    /// Without authority `name`; `None` if there is none.
    pub fn without_authority(&self, name: &str) -> Option<Loaded> {
        let mut next = self.clone();
        let before = next.authorities.len();
        next.authorities.retain(|a| a.name != name);
        (next.authorities.len() != before).then_some(next)
    }

    /// The loaded authorities.
    pub fn authorities(&self) -> &[Authority] {
        &self.authorities
    }

    /// What was loaded as credentials (the authorities' certificates
    /// among the trust anchors).
    pub fn credentials(&self) -> Credentials {
        let mut cas = self.cas.clone();
        for a in &self.authorities {
            let name = format!("vici-authority-{}", a.name);
            cas.push((name, a.cert.clone()));
        }
        Credentials::new(
            self.certs.clone(),
            cas,
            self.keys.iter().map(|(_, k)| k.clone()).collect(),
            self.crls.clone(),
        )
    }

    /// Without connection `name`; `None` if there is none.
    pub fn without_conn(&self, name: &str) -> Option<Loaded> {
        let mut next = self.clone();
        take(&mut next.conns, name).then_some(next)
    }

    /// The connections' names.
    pub fn conn_names(&self) -> Vec<String> {
        self.conns.iter().map(|t| t.name.clone()).collect()
    }

    /// With the secret of a `load-shared` message (`id`, `type`, `data`,
    /// `owners`), as a `secrets.ike-ID`, `eap-ID` or `ppk-ID` section.
    pub fn with_shared(&self, msg: &Section) -> Result<Loaded, LoadError> {
        let ty = text(msg, "type")?.ok_or(LoadError::Missing { key: "type" })?;
        let prefix = match ty.to_ascii_uppercase().as_str() {
            "IKE" => "ike",
            "EAP" => "eap",
            "PPK" => "ppk",
            _ => return Err(LoadError::SharedType(ty.to_string())),
        };
        let Some(Value::Str(data)) = msg.get("data") else {
            return Err(LoadError::Missing { key: "data" });
        };
        let id = text(msg, "id")?.unwrap_or_default();
        let name = match id {
            id if id.starts_with(prefix) => id.to_string(),
            "" => format!("{prefix}-vici-{}", self.shared.len() + 1),
            id => format!("{prefix}-{id}"),
        };
        // Raw bytes, as swanctl decoded them: hex, so that any byte passes
        // the secret syntax unchanged.
        let hex = Zeroizing::new(format!("0x{}", hex_of(data)));
        let mut settings = vec![setting("secret", &hex)];
        if let Some(owners) = msg.get("owners") {
            let Value::List(owners) = owners else {
                return Err(LoadError::Shape {
                    key: "owners".into(),
                });
            };
            for (k, o) in owners.iter().enumerate() {
                let o = std::str::from_utf8(o).map_err(|_| LoadError::NotText {
                    key: "owners".into(),
                })?;
                settings.push(setting(&format!("id-{}", k + 1), o));
            }
        }
        let mut next = self.clone();
        // charon keys them by the id it was given (`unload-shared`).
        let tree = Tree {
            name: name.clone(),
            line: 0,
            file: None,
            refs: Vec::new(),
            settings,
            sections: Vec::new(),
        };
        next.shared.retain(|t| t.name != name);
        next.shared.push(tree);
        Ok(next)
    }

    /// Without the secret `id`; `None` if there is none.
    pub fn without_shared(&self, id: &str) -> Option<Loaded> {
        let mut next = self.clone();
        (take(&mut next.shared, id)
            || take(&mut next.shared, &format!("ike-{id}"))
            || take(&mut next.shared, &format!("eap-{id}")))
        .then_some(next)
    }

    /// The secrets' ids.
    pub fn shared_ids(&self) -> Vec<String> {
        self.shared.iter().map(|t| t.name.clone()).collect()
    }

    /// With the pools of a `load-pool` message (`{ NAME = { addrs = …,
    /// dns = [ … ] } }`).
    pub fn with_pool(&self, msg: &Section) -> Result<Loaded, LoadError> {
        let mut next = self.clone();
        if msg.entries.is_empty() {
            return Err(LoadError::Empty);
        }
        for (name, value) in &msg.entries {
            let Value::Section(body) = value else {
                return Err(LoadError::Shape { key: name.clone() });
            };
            let t = tree(name, body, &mut |key, _| {
                Err(LoadError::Shape { key: key.into() })
            })?;
            put(&mut next.pools, t);
        }
        Ok(next)
    }

    /// Without pool `name`; `None` if there is none.
    pub fn without_pool(&self, name: &str) -> Option<Loaded> {
        let mut next = self.clone();
        take(&mut next.pools, name).then_some(next)
    }

    /// Without any secret, key or certificate (`clear-creds`).
    pub fn without_credentials(&self) -> Loaded {
        Loaded {
            shared: Vec::new(),
            certs: Vec::new(),
            cas: Vec::new(),
            keys: Vec::new(),
            crls: Vec::new(),
            ..self.clone()
        }
    }

    /// The whole tree, as a swanctl.conf with `connections`, `secrets`
    /// and `pools` would give it.
    pub fn tree(&self) -> Tree {
        let section = |name: &str, sections: &[Tree]| Tree {
            name: name.into(),
            line: 0,
            file: None,
            refs: Vec::new(),
            settings: Vec::new(),
            sections: sections.to_vec(),
        };
        let mut root = Tree::default();
        for (name, list) in [
            ("connections", &self.conns),
            ("secrets", &self.shared),
            ("pools", &self.pools),
        ] {
            if !list.is_empty() {
                root.sections.push(section(name, list));
            }
        }
        root
    }
}

fn setting(key: &str, value: &str) -> Setting {
    Setting {
        key: key.into(),
        value: Some(value.into()),
        line: 0,
        file: None,
    }
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The text value `key` of `msg`, if there is one.
fn text<'a>(msg: &'a Section, key: &str) -> Result<Option<&'a str>, LoadError> {
    match msg.get(key) {
        None => Ok(None),
        Some(Value::Str(v)) => std::str::from_utf8(v)
            .map(Some)
            .map_err(|_| LoadError::NotText { key: key.into() }),
        Some(_) => Err(LoadError::Shape { key: key.into() }),
    }
}

/// One authority's settings (swanctl.conf(5) `authorities`; swanctl sends
/// the certificate file's contents as `cacert`).
fn authority(name: &str, body: &Section) -> Result<Authority, LoadError> {
    let mut cert = None;
    let (mut crl_uris, mut ocsp_uris, mut cert_uri_base) = (Vec::new(), Vec::new(), None);
    for (key, value) in &body.entries {
        let uris = || -> Result<Vec<String>, LoadError> {
            match value {
                Value::List(items) => items
                    .iter()
                    .map(|i| {
                        String::from_utf8(i.clone())
                            .map_err(|_| LoadError::NotText { key: key.clone() })
                    })
                    .collect(),
                Value::Str(_) => Ok(text(body, key)?
                    .unwrap_or_default()
                    .split(',')
                    .map(|u| u.trim().to_string())
                    .filter(|u| !u.is_empty())
                    .collect()),
                Value::Section(_) => Err(LoadError::Shape { key: key.clone() }),
            }
        };
        match key.as_str() {
            "cacert" | "file" => {
                let Value::Str(data) = value else {
                    return Err(LoadError::Shape { key: key.clone() });
                };
                let c = Certificate::parse(&pem_or_der(data, "CERTIFICATE"))
                    .map_err(|e| LoadError::Certificate(e.to_string()))?;
                if !c.ca {
                    return Err(LoadError::Certificate(format!(
                        "authority {name}: basicConstraints cA is not set"
                    )));
                }
                cert = Some(c);
            }
            "crl_uris" => crl_uris = uris()?,
            "ocsp_uris" => ocsp_uris = uris()?,
            "cert_uri_base" => cert_uri_base = text(body, key)?.map(String::from),
            "handle" | "slot" | "module" => {
                return Err(LoadError::Unsupported {
                    key: format!("{name}.{key}"),
                })
            }
            _ => {
                return Err(LoadError::Unknown {
                    key: format!("{name}.{key}"),
                })
            }
        }
    }
    let cert = cert.ok_or(LoadError::Missing { key: "cacert" })?;
    Ok(Authority {
        name: name.to_string(),
        cert,
        crl_uris,
        ocsp_uris,
        cert_uri_base,
    })
}

/// How the data of a `certs`/`cacerts` list becomes the names the file
/// would give.
type CertNames<'a> = dyn FnMut(&str, &[Vec<u8>]) -> Result<String, LoadError> + 'a;

/// A vici section as the settings tree swanctl.conf would give: values
/// as they are, lists joined with commas, sections nested; `certs` and
/// `cacerts` carry certificates (swanctl read the files), named by
/// `certs`.
fn tree(name: &str, body: &Section, certs: &mut CertNames<'_>) -> Result<Tree, LoadError> {
    let mut t = Tree {
        name: name.to_string(),
        ..Tree::default()
    };
    for (key, value) in &body.entries {
        let not_text = || LoadError::NotText { key: key.clone() };
        match value {
            Value::Str(v) => {
                let v = std::str::from_utf8(v).map_err(|_| not_text())?;
                t.settings.push(setting(key, v));
            }
            Value::List(items) if key == "certs" || key == "cacerts" => {
                if !items.is_empty() {
                    let names = certs(key, items)?;
                    t.settings.push(setting(key, &names));
                }
            }
            Value::List(items) if key == "pubkeys" && !items.is_empty() => {
                return Err(LoadError::InlineCredential { key: key.clone() });
            }
            Value::List(items) => {
                let items: Result<Vec<&str>, _> =
                    items.iter().map(|i| std::str::from_utf8(i)).collect();
                let joined = items.map_err(|_| not_text())?.join(", ");
                // An empty list is a key not given (swanctl sends none).
                if !joined.is_empty() {
                    t.settings.push(setting(key, &joined));
                }
            }
            Value::Section(s) => t.sections.push(tree(key, s, certs)?),
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(name: &str, remote: &str) -> Section {
        let child = Section::default()
            .with_list("local_ts", vec![b"10.1.0.0/16".to_vec()])
            .with_list("remote_ts", vec![b"10.2.0.0/16".to_vec()]);
        let body = Section::default()
            .with_list(
                "remote_addrs",
                vec![remote.as_bytes().to_vec(), b"192.0.2.9".to_vec()],
            )
            .with_list("local_addrs", vec![b"192.0.2.1".to_vec()])
            .with("version", "2")
            .with_section("local", Section::default().with("auth", "psk"))
            .with_section("remote", Section::default().with("auth", "psk"))
            .with_section("children", Section::default().with_section("net", child));
        Section::default().with_section(name, body)
    }

    #[test]
    fn a_swanctl_connection_is_the_files_tree() {
        let l = Loaded::default()
            .with_conn(&conn("gw", "192.0.2.2"))
            .unwrap();
        let shared = Section::default()
            .with("id", "ike-1")
            .with("type", "IKE")
            .with("data", b"\x00secret".to_vec())
            .with_list("owners", vec![b"moon".to_vec(), b"sun".to_vec()]);
        let l = l.with_shared(&shared).unwrap();
        let config = flowsec_ike::config::from_tree("vici", &l.tree()).unwrap();
        let c = &config.connections[0];
        assert_eq!(c.name, "gw");
        assert_eq!(c.remote_addrs.len(), 2);
        assert_eq!(c.children[0].name, "net");
        assert_eq!(config.secrets[0].name, "ike-1");
        assert_eq!(config.secrets[0].secret.as_slice(), b"\x00secret");
        assert_eq!(config.secrets[0].ids.len(), 2);
        // swanctl --load-creds sends `secrets.ppk-…` as type PPK (RFC 8784).
        let ppk = Section::default()
            .with("id", "ppk-gw")
            .with("type", "PPK")
            .with("data", b"post-quantum".to_vec())
            .with_list("owners", vec![b"ppk-gw".to_vec()]);
        let with_ppk = l.with_shared(&ppk).unwrap();
        let config = flowsec_ike::config::from_tree("vici", &with_ppk.tree()).unwrap();
        assert_eq!(config.find_ppk(b"ppk-gw"), Some(&b"post-quantum"[..]));
        // Loaded again: replaced in place, not added.
        let l = l.with_conn(&conn("gw", "192.0.2.3")).unwrap();
        assert_eq!(l.conn_names(), vec!["gw"]);
        assert!(l.without_conn("nope").is_none());
        assert!(l.without_conn("gw").unwrap().conn_names().is_empty());
        assert_eq!(l.shared_ids(), vec!["ike-1"]);
        assert!(l.without_shared("ike-1").unwrap().shared_ids().is_empty());
    }

    /// The message of a captured frame.
    fn message(frame: &[u8]) -> Section {
        flowsec_wire::vici::Packet::parse(&frame[4..])
            .unwrap()
            .message
            .unwrap()
    }

    #[test]
    fn what_swanctl_sends_loads_as_the_file_would() {
        use flowsec_wire::vici::captures::{LOAD_CONN_REQUEST, LOAD_SHARED_REQUEST};
        let l = Loaded::default()
            .with_shared(&message(LOAD_SHARED_REQUEST))
            .unwrap()
            .with_conn(&message(LOAD_CONN_REQUEST))
            .unwrap();
        let config = flowsec_ike::config::from_tree("vici", &l.tree()).unwrap();
        let file = flowsec_ike::config::parse(
            "swanctl.conf",
            "connections { gw { version = 2\n local_addrs = 192.0.2.1\n remote_addrs = 192.0.2.2\n \
             proposals = aes128gcm16-prfsha256-ecp256\n local { auth = psk\n id = moon.example }\n \
             remote { auth = psk\n id = sun.example }\n children { net { local_ts = 10.1.0.0/24\n \
             remote_ts = 10.2.0.0/24\n esp_proposals = aes128gcm16 } } } }\n\
             secrets { ike-1 { id-1 = moon.example\n secret = 0x0123456789 } }",
        )
        .unwrap();
        assert_eq!(config.connections, file.connections);
        assert_eq!(config.secrets, file.secrets);
    }

    #[test]
    fn what_is_not_a_configuration_is_refused() {
        let l = Loaded::default();
        assert_eq!(
            l.with_conn(&Section::default()).unwrap_err(),
            LoadError::Empty
        );
        let e = l
            .with_conn(&Section::default().with("gw", "x"))
            .unwrap_err();
        assert_eq!(e, LoadError::Shape { key: "gw".into() });
        let bad =
            Section::default().with_section("gw", Section::default().with("version", vec![0xff]));
        assert_eq!(
            l.with_conn(&bad).unwrap_err().to_string(),
            "version: value is not text"
        );
        let xauth = Section::default().with("type", "XAUTH").with("data", "x");
        assert!(matches!(
            l.with_shared(&xauth),
            Err(LoadError::SharedType(_))
        ));
        let certs = Section::default().with_section(
            "gw",
            Section::default().with_section(
                "local",
                Section::default().with_list("certs", vec![vec![0x30, 0x82]]),
            ),
        );
        assert!(matches!(
            l.with_conn(&certs),
            Err(LoadError::Certificate(_))
        ));
        let pubkeys = Section::default().with_section(
            "gw",
            Section::default().with_section(
                "local",
                Section::default().with_list("pubkeys", vec![vec![0x30, 0x82]]),
            ),
        );
        assert!(matches!(
            l.with_conn(&pubkeys),
            Err(LoadError::InlineCredential { .. })
        ));
    }

    /// A self-signed certificate, a CA one or not.
    fn self_signed(ca: bool) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::new(vec![]).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "flowsec test CA");
        if ca {
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        }
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn an_authority_is_a_trust_anchor_with_its_uris_until_unloaded() {
        let ca = self_signed(true);
        let msg = Section::default().with_section(
            "strongswan",
            Section::default()
                .with("cacert", ca.clone())
                .with_list("crl_uris", vec![b"http://crl.example/ca.crl".to_vec()])
                .with("ocsp_uris", "http://ocsp.example, http://ocsp2.example"),
        );
        let l = Loaded::default().with_authority(&msg).unwrap();
        let a = &l.authorities()[0];
        assert_eq!(a.name, "strongswan");
        assert_eq!(a.crl_uris, ["http://crl.example/ca.crl"]);
        assert_eq!(a.ocsp_uris, ["http://ocsp.example", "http://ocsp2.example"]);
        assert!(
            a.cert.subject_text().contains("flowsec test CA"),
            "{}",
            a.cert.subject_text()
        );
        assert_eq!(l.credentials().cas().count(), 1);
        // Loaded again under its name: replaced, not added.
        let again = l.with_authority(&msg).unwrap();
        assert_eq!(again.authorities().len(), 1);
        let gone = again.without_authority("strongswan").unwrap();
        assert!(gone.authorities().is_empty());
        assert_eq!(gone.credentials().cas().count(), 0);
        assert!(gone.without_authority("strongswan").is_none());
        // Refused: no certificate, one that is no CA, a token, a typo.
        let one = |body: Section| l.with_authority(&Section::default().with_section("x", body));
        assert_eq!(
            one(Section::default().with("crl_uris", "http://a")).unwrap_err(),
            LoadError::Missing { key: "cacert" }
        );
        assert!(matches!(
            one(Section::default().with("cacert", self_signed(false))),
            Err(LoadError::Certificate(_))
        ));
        assert_eq!(
            one(Section::default().with("module", "p11"))
                .unwrap_err()
                .to_string(),
            "x.module: not supported by flowsec"
        );
        assert_eq!(
            one(Section::default().with("crl_uri", "http://a"))
                .unwrap_err()
                .to_string(),
            "x.crl_uri: unknown key"
        );
    }

    #[test]
    fn a_key_has_charons_id() {
        // openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256;
        // the id from strongSwan 5.9.8's `pki --keyid --type priv`
        // ("subjkey (SHA-1 of subjectPublicKey)").
        let pem = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgB2QRxhuhr383n+oc
aScIh6GAnMYw37OeAe1XCrvNTWChRANCAATG1Pl0tlT+nZGSQTHFJ+A+FBNK9tF+
bvd5x+CG+AqbxwqQXUEIt3KEaQLFO+b/YvcPQT8XbZrQkzm0zAVXbaBB
-----END PRIVATE KEY-----
";
        let msg = Section::default().with("type", "ANY").with("data", pem);
        let provider = flowsec_crypto::Provider::fastest();
        let (l, id) = Loaded::default().with_key(&provider, &msg).unwrap();
        assert_eq!(id, "d6cc5e7eda4bbf8fc58010a5f7d110be75bf8912");
        assert_eq!(l.key_ids(), std::slice::from_ref(&id));
        assert!(l.without_key(&id).unwrap().key_ids().is_empty());
    }
}
