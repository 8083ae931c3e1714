//! Distinguished names as identities (ID_DER_ASN1_DN, RFC 7296 §3.5):
//! written as strongSwan writes them (`C=CH, O=strongSwan, CN=moon`, RDNs
//! in the order they are encoded, `,` or `/` between them; strongSwan's
//! `atodn()` in `identification.c`), encoded and decoded with the
//! `x509-cert` crate, and compared as strongSwan's `compare_dn`/`match_dn`
//! do: the same attribute types in the same order, values equal without
//! regard to ASCII case, and a value `*` in the configured name matching
//! any value.

use core::fmt;

use der::asn1::{Any, SetOfVec};
use der::oid::ObjectIdentifier;
use der::{Decode, Encode, Tag};
use x509_cert::attr::AttributeTypeAndValue;
use x509_cert::name::{RdnSequence, RelativeDistinguishedName};

/// The attribute types a written DN may use, strongSwan's names first
/// (`x501rdns` in `identification.c`).
const ATTRIBUTES: &[(&str, &str)] = &[
    ("CN", "2.5.4.3"),
    ("C", "2.5.4.6"),
    ("L", "2.5.4.7"),
    ("ST", "2.5.4.8"),
    ("O", "2.5.4.10"),
    ("OU", "2.5.4.11"),
    ("T", "2.5.4.12"),
    ("SN", "2.5.4.4"),
    ("serialNumber", "2.5.4.5"),
    ("G", "2.5.4.42"),
    ("I", "2.5.4.43"),
    ("dnQualifier", "2.5.4.46"),
    ("DC", "0.9.2342.19200300.100.1.25"),
    ("UID", "0.9.2342.19200300.100.1.1"),
    ("E", "1.2.840.113549.1.9.1"),
    ("Email", "1.2.840.113549.1.9.1"),
    ("emailAddress", "1.2.840.113549.1.9.1"),
];

/// The most RDNs a DN may have (a bound on hostile input; real ones have
/// fewer than 10).
const MAX_RDNS: usize = 32;

/// Why a written DN was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DnError {
    /// A component without `=`.
    NoEquals(String),
    /// An attribute type strongSwan does not know.
    UnknownAttribute(String),
    /// An empty value.
    EmptyValue(String),
    /// More than [`MAX_RDNS`] components.
    TooLong,
}

impl fmt::Display for DnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DnError::NoEquals(c) => write!(f, "'{c}' is not TYPE=VALUE"),
            DnError::UnknownAttribute(a) => write!(
                f,
                "unknown attribute type '{a}' (C, ST, L, O, OU, CN, E, serialNumber, DC, UID, \
                 SN, G, I, T, dnQualifier)"
            ),
            DnError::EmptyValue(a) => write!(f, "'{a}=' has no value"),
            DnError::TooLong => write!(f, "more than {MAX_RDNS} components"),
        }
    }
}

/// The DER encoding of a DN written `C=CH, O=strongSwan, CN=moon`: each
/// component its own RDN, in the written order; a value of printable
/// characters a PrintableString, an e-mail address an IA5String, anything
/// else UTF8String (as strongSwan encodes them).
pub fn encode(text: &str) -> Result<Vec<u8>, DnError> {
    let mut rdns = Vec::new();
    for part in split(text) {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| DnError::NoEquals(part.to_string()))?;
        let (key, value) = (key.trim(), value.trim());
        let oid = ATTRIBUTES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(key))
            .map(|&(_, oid)| ObjectIdentifier::new_unwrap(oid))
            .ok_or_else(|| DnError::UnknownAttribute(key.to_string()))?;
        if value.is_empty() {
            return Err(DnError::EmptyValue(key.to_string()));
        }
        let tag = if oid == ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.1") && value.is_ascii()
        {
            Tag::Ia5String
        } else if value.bytes().all(printable) {
            Tag::PrintableString
        } else {
            Tag::Utf8String
        };
        let value = Any::new(tag, value.as_bytes()).map_err(|_| DnError::TooLong)?;
        let atv = AttributeTypeAndValue { oid, value };
        let set = SetOfVec::try_from(vec![atv]).map_err(|_| DnError::TooLong)?;
        rdns.push(RelativeDistinguishedName(set));
        if rdns.len() > MAX_RDNS {
            return Err(DnError::TooLong);
        }
    }
    RdnSequence(rdns).to_der().map_err(|_| DnError::TooLong)
}

/// The components of a written DN: split at `,` or `/` (strongSwan
/// accepts both; a leading `/` as in OpenSSL's form is skipped).
fn split(text: &str) -> impl Iterator<Item = &str> {
    text.split([',', '/'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
}

/// PrintableString's characters (X.680 §41.4).
fn printable(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b" '()+,-./:=?".contains(&b)
}

/// One attribute of a decoded DN: the index of its RDN, its type, and
/// its value's tag and octets.
struct Attr {
    rdn: usize,
    oid: ObjectIdentifier,
    tag: Tag,
    value: Vec<u8>,
}

/// The string types whose values compare without regard to ASCII case.
fn is_string(tag: Tag) -> bool {
    matches!(
        tag,
        Tag::PrintableString | Tag::Utf8String | Tag::Ia5String | Tag::TeletexString
    )
}

/// A decoded DN, attribute by attribute in order. `None` if `der` is no
/// Name, or has more than [`MAX_RDNS`] RDNs.
fn decode(der: &[u8]) -> Option<Vec<Attr>> {
    let name = RdnSequence::from_der(der).ok()?;
    if name.0.len() > MAX_RDNS {
        return None;
    }
    let mut out = Vec::new();
    for (rdn, set) in name.0.iter().enumerate() {
        for atv in set.0.iter() {
            out.push(Attr {
                rdn,
                oid: atv.oid,
                tag: der::Tagged::tag(&atv.value),
                value: atv.value.value().to_vec(),
            });
        }
    }
    Some(out)
}

/// Whether `der` is a DER Name within the bounds.
pub fn is_valid(der: &[u8]) -> bool {
    decode(der).is_some()
}

/// Whether `der` is a DN that names something: valid, with at least one
/// attribute. The empty DN (a certificate may have one, with its names in
/// subjectAltName) is nobody's identity: every such peer would be one.
pub fn is_named(der: &[u8]) -> bool {
    decode(der).is_some_and(|a| !a.is_empty())
}

/// The DN as strongSwan writes it: `C=CH, O=strongSwan, CN=moon`
/// (unknown attribute types by their OID).
pub fn to_text(der: &[u8]) -> String {
    let Some(attrs) = decode(der) else {
        return "(bad DN)".into();
    };
    let mut s = String::new();
    for (i, a) in attrs.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let oid_text = a.oid.to_string();
        match ATTRIBUTES.iter().find(|(_, o)| *o == oid_text) {
            Some((name, _)) => s.push_str(name),
            None => s.push_str(&oid_text),
        }
        s.push('=');
        let text = String::from_utf8_lossy(&a.value);
        s.extend(text.chars().map(|c| if c.is_control() { '?' } else { c }));
    }
    s
}

/// How `id` matches the configured `pattern`: `None` if it does not,
/// otherwise the number of `*` values the match needed (0: equal). The
/// RDNs and attribute types must be the same, in order; string values
/// compare without regard to ASCII case, others octet by octet.
pub fn matches(id: &[u8], pattern: &[u8]) -> Option<usize> {
    let (a, p) = (decode(id)?, decode(pattern)?);
    if a.len() != p.len() {
        return None;
    }
    let mut wildcards = 0;
    for (x, y) in a.iter().zip(&p) {
        if x.rdn != y.rdn || x.oid != y.oid {
            return None;
        }
        if is_string(y.tag) && y.value == b"*" {
            wildcards += 1;
        } else if is_string(x.tag) && is_string(y.tag) {
            if !x.value.eq_ignore_ascii_case(&y.value) {
                return None;
            }
        } else if x.tag != y.tag || x.value != y.value {
            return None;
        }
    }
    Some(wildcards)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_order_is_kept_and_reads_back() {
        let der = encode("C=CH, O=strongSwan, CN=moon.strongswan.org").unwrap();
        assert_eq!(to_text(&der), "C=CH, O=strongSwan, CN=moon.strongswan.org");
        let slashes = encode("/C=CH/O=strongSwan/CN=moon.strongswan.org").unwrap();
        assert_eq!(der, slashes);
        assert_eq!(matches(&der, &der), Some(0));
    }

    #[test]
    fn case_and_wildcards() {
        let id = encode("C=CH, O=strongSwan, CN=moon").unwrap();
        let upper = encode("c=ch, o=STRONGSWAN, cn=MOON").unwrap();
        assert_eq!(matches(&id, &upper), Some(0));
        let any_cn = encode("C=CH, O=strongSwan, CN=*").unwrap();
        assert_eq!(matches(&id, &any_cn), Some(1));
        let other = encode("C=CH, O=other, CN=*").unwrap();
        assert_eq!(matches(&id, &other), None);
        let shorter = encode("C=CH, O=strongSwan").unwrap();
        assert_eq!(matches(&id, &shorter), None);
    }

    #[test]
    fn value_types_as_strongswan() {
        // PrintableString (0x13) for plain text, UTF8String (0x0c) else,
        // IA5String (0x16) for the e-mail address.
        let der = encode("CN=a b, O=Zürich, E=a@b.c").unwrap();
        let attrs = RdnSequence::from_der(&der).unwrap();
        let tags: Vec<Tag> = attrs
            .0
            .iter()
            .map(|r| der::Tagged::tag(&r.0.get(0).unwrap().value))
            .collect();
        assert_eq!(
            tags,
            [Tag::PrintableString, Tag::Utf8String, Tag::Ia5String]
        );
    }

    #[test]
    fn values_that_are_not_strings_compare_octet_by_octet() {
        // Two OCTET STRING values that are different bytes but the same
        // "text" after a lossy decoding must not match.
        let name = |v: &[u8]| {
            let value = Any::new(Tag::OctetString, v).unwrap();
            let atv = AttributeTypeAndValue {
                oid: ObjectIdentifier::new_unwrap("2.5.4.3"),
                value,
            };
            let rdn = RelativeDistinguishedName(SetOfVec::try_from(vec![atv]).unwrap());
            RdnSequence(vec![rdn]).to_der().unwrap()
        };
        let (a, b) = (name(&[0xff, 0x41]), name(&[0xfe, 0x41]));
        assert_eq!(matches(&a, &b), None);
        assert_eq!(matches(&a, &a), Some(0));
    }

    #[test]
    fn bad_names_are_refused() {
        assert!(matches!(encode("CN=x, junk"), Err(DnError::NoEquals(_))));
        assert!(matches!(encode("XX=x"), Err(DnError::UnknownAttribute(_))));
        assert!(matches!(encode("CN="), Err(DnError::EmptyValue(_))));
        assert!(!is_valid(b"\x30\x03\x02\x01\x00"));
        assert!(!is_valid(&[0xff; 3]));
    }
}
