//! flowsec's own commands over vici (`flowsec-status`, `flowsec-sas`,
//! `flowsec-policies`, `flowsec-stats`, `flowsec-reload`,
//! `flowsec-setkey`): the control socket's answers, one encoding of the
//! same document in the other. A JSON object is a section, an array of
//! scalars a list, an array of objects a section keyed `0`, `1`, …, a
//! scalar its text (`true`/`false` as vici's `yes`/`no`), `null` left
//! out.

use flowsec_wire::vici::{Section, Value as Vici};
use serde_json::Value;

/// The vici command `flowsec-NAME` as the control socket's request
/// `{"cmd": NAME, …}` (the message's text values beside it).
pub fn request(command: &str, message: &Section) -> Option<Value> {
    let cmd = command.strip_prefix("flowsec-")?;
    let mut req = serde_json::Map::new();
    req.insert("cmd".into(), Value::String(cmd.into()));
    for (k, v) in &message.entries {
        if let Vici::Str(bytes) = v {
            let text = String::from_utf8_lossy(bytes).into_owned();
            req.insert(k.clone(), Value::String(text));
        }
    }
    Some(Value::Object(req))
}

/// A JSON answer as a vici message (a non-object answer under `answer`).
pub fn section(v: &Value) -> Section {
    match v {
        Value::Object(map) => {
            let mut s = Section::default();
            for (k, v) in map {
                add(&mut s, k, v);
            }
            s
        }
        other => {
            let mut s = Section::default();
            add(&mut s, "answer", other);
            s
        }
    }
}

fn scalar(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::Null => None,
        Value::Bool(b) => Some(if *b { b"yes".to_vec() } else { b"no".to_vec() }),
        Value::String(s) => Some(s.clone().into_bytes()),
        Value::Number(n) => Some(n.to_string().into_bytes()),
        Value::Array(_) | Value::Object(_) => None,
    }
}

fn add(s: &mut Section, key: &str, v: &Value) {
    match v {
        Value::Null => {}
        Value::Object(_) => s.entries.push((key.into(), Vici::Section(section(v)))),
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            let list = items.iter().filter_map(scalar).collect();
            s.entries.push((key.into(), Vici::List(list)));
        }
        Value::Array(items) => {
            let mut inner = Section::default();
            for (i, item) in items.iter().enumerate() {
                add(&mut inner, &i.to_string(), item);
            }
            s.entries.push((key.into(), Vici::Section(inner)));
        }
        scalar_value => {
            if let Some(b) = scalar(scalar_value) {
                s.entries.push((key.into(), Vici::Str(b)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_json_answer_reads_as_a_vici_message() {
        let v = json!({"tun": "fs0", "workers": 2, "ok": true, "gone": null,
            "caps": ["cap_net_admin"], "ike_sas": [{"name": "gw"}], "m": {"a": 1}});
        let s = section(&v);
        assert_eq!(s.str("tun"), Some("fs0"));
        assert_eq!(s.str("workers"), Some("2"));
        assert_eq!(s.str("ok"), Some("yes"));
        assert!(s.get("gone").is_none());
        assert_eq!(
            s.get("caps"),
            Some(&Vici::List(vec![b"cap_net_admin".to_vec()]))
        );
        let Some(Vici::Section(sas)) = s.get("ike_sas") else {
            panic!()
        };
        let Some(Vici::Section(first)) = sas.get("0") else {
            panic!()
        };
        assert_eq!(first.str("name"), Some("gw"));
        assert_eq!(
            section(&json!([1])).get("answer"),
            Some(&Vici::List(vec![b"1".to_vec()]))
        );
        let r = request("flowsec-setkey", &Section::default().with("text", "flush;")).unwrap();
        assert_eq!(r, json!({"cmd": "setkey", "text": "flush;"}));
        assert!(request("list-sas", &Section::default()).is_none());
    }
}
