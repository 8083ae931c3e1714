//! A serde data format for vici messages, so that one Rust type is both
//! the daemon's answer and the client's reading of it (`flowsec ctl`,
//! the `flowsec-*` commands), and the JSON socket's document is the
//! same type through serde_json.
//!
//! vici has text values, lists of text and sections (README "Message
//! format"); so here:
//! - a struct or map is a section; `None` and `()` leave their key out;
//! - a sequence of scalars is a list, a sequence of anything else a
//!   section keyed `0`, `1`, … (as strongSwan's `list-sas` keys its
//!   children by name); an empty sequence an empty list;
//! - a number is its decimal text, a bool charon's `yes`/`no`, a unit
//!   variant its name.
//!
//! vici says nothing of types, so reading is driven by the type asked
//! for: `u64` parses the text, `bool` takes `yes`/`no`. What serde reads
//! without a type (`deserialize_any`: untagged enums) sees text as a
//! string, a list as a sequence and a section as a map.

use core::fmt;

use flowsec_wire::vici::{Section, Value};
use serde::de::{self, DeserializeOwned, IntoDeserializer};
use serde::ser::{self, Serialize};

/// Why a value has no vici form, or a message is not the type asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError(String);

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FormatError {}

impl ser::Error for FormatError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        FormatError(msg.to_string())
    }
}

impl de::Error for FormatError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        FormatError(msg.to_string())
    }
}

/// `value` as a vici message: it must be a struct or a map.
pub fn to_section<T: Serialize + ?Sized>(value: &T) -> Result<Section, FormatError> {
    match value.serialize(ValueSer)? {
        Some(Value::Section(s)) => Ok(s),
        _ => Err(FormatError("a vici message is a section".into())),
    }
}

/// A vici message read as `T`.
pub fn from_section<T: DeserializeOwned>(section: &Section) -> Result<T, FormatError> {
    T::deserialize(SectionDe(section))
}

// ---------------------------------------------------------------------
// Writing.

/// Serializes one value: `None` where it leaves its key out.
struct ValueSer;

/// Scalars written as their text.
macro_rules! as_text {
    ($($method:ident $ty:ty),* $(,)?) => {$(
        fn $method(self, v: $ty) -> Result<Option<Value>, FormatError> {
            text(v)
        }
    )*};
}

fn text(s: impl ToString) -> Result<Option<Value>, FormatError> {
    Ok(Some(Value::Str(s.to_string().into_bytes())))
}

impl ser::Serializer for ValueSer {
    type Ok = Option<Value>;
    type Error = FormatError;
    type SerializeSeq = SeqSer;
    type SerializeTuple = SeqSer;
    type SerializeTupleStruct = SeqSer;
    type SerializeTupleVariant = ser::Impossible<Option<Value>, FormatError>;
    type SerializeMap = MapSer;
    type SerializeStruct = MapSer;
    type SerializeStructVariant = ser::Impossible<Option<Value>, FormatError>;

    fn serialize_bool(self, v: bool) -> Result<Self::Ok, FormatError> {
        text(if v { "yes" } else { "no" })
    }
    as_text! {
        serialize_i8 i8, serialize_i16 i16, serialize_i32 i32, serialize_i64 i64,
        serialize_u8 u8, serialize_u16 u16, serialize_u32 u32, serialize_u64 u64,
        serialize_f32 f32, serialize_f64 f64, serialize_char char,
    }
    fn serialize_str(self, v: &str) -> Result<Self::Ok, FormatError> {
        text(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Self::Ok, FormatError> {
        Ok(Some(Value::Str(v.to_vec())))
    }
    fn serialize_none(self) -> Result<Self::Ok, FormatError> {
        Ok(None)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<Self::Ok, FormatError> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<Self::Ok, FormatError> {
        Ok(None)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Self::Ok, FormatError> {
        Ok(None)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<Self::Ok, FormatError> {
        text(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<Self::Ok, FormatError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<Self::Ok, FormatError> {
        let mut s = Section::default();
        if let Some(inner) = v.serialize(ValueSer)? {
            s.entries.push((variant.into(), inner));
        }
        Ok(Some(Value::Section(s)))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqSer, FormatError> {
        Ok(SeqSer(Vec::with_capacity(len.unwrap_or(0).min(1024))))
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqSer, FormatError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<SeqSer, FormatError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, FormatError> {
        Err(FormatError(format!(
            "{name}: tuple variants have no vici form"
        )))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<MapSer, FormatError> {
        Ok(MapSer::default())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<MapSer, FormatError> {
        Ok(MapSer::default())
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, FormatError> {
        Err(FormatError(format!(
            "{name}: struct variants have no vici form"
        )))
    }
}

/// A sequence's items, made a list or a numbered section at its end.
struct SeqSer(Vec<Option<Value>>);

impl SeqSer {
    fn end(self) -> Result<Option<Value>, FormatError> {
        let items: Vec<Value> = self.0.into_iter().flatten().collect();
        if items.iter().all(|v| matches!(v, Value::Str(_))) {
            let list = items
                .into_iter()
                .filter_map(|v| match v {
                    Value::Str(b) => Some(b),
                    _ => None,
                })
                .collect();
            return Ok(Some(Value::List(list)));
        }
        let entries = items
            .into_iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), v))
            .collect();
        Ok(Some(Value::Section(Section { entries })))
    }
}

impl ser::SerializeSeq for SeqSer {
    type Ok = Option<Value>;
    type Error = FormatError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), FormatError> {
        self.0.push(v.serialize(ValueSer)?);
        Ok(())
    }
    fn end(self) -> Result<Option<Value>, FormatError> {
        SeqSer::end(self)
    }
}

impl ser::SerializeTuple for SeqSer {
    type Ok = Option<Value>;
    type Error = FormatError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), FormatError> {
        ser::SerializeSeq::serialize_element(self, v)
    }
    fn end(self) -> Result<Option<Value>, FormatError> {
        SeqSer::end(self)
    }
}

impl ser::SerializeTupleStruct for SeqSer {
    type Ok = Option<Value>;
    type Error = FormatError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), FormatError> {
        ser::SerializeSeq::serialize_element(self, v)
    }
    fn end(self) -> Result<Option<Value>, FormatError> {
        SeqSer::end(self)
    }
}

/// A section being filled; a map's key waits here for its value.
#[derive(Default)]
struct MapSer {
    section: Section,
    key: Option<String>,
}

impl MapSer {
    fn push(&mut self, key: String, v: Option<Value>) {
        if let Some(v) = v {
            self.section.entries.push((key, v));
        }
    }
}

impl ser::SerializeMap for MapSer {
    type Ok = Option<Value>;
    type Error = FormatError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), FormatError> {
        match k.serialize(ValueSer)? {
            Some(Value::Str(b)) => {
                self.key =
                    Some(String::from_utf8(b).map_err(|_| FormatError("key not UTF-8".into()))?);
                Ok(())
            }
            _ => Err(FormatError("a vici key is text".into())),
        }
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), FormatError> {
        let key = self
            .key
            .take()
            .ok_or(FormatError("a value without a key".into()))?;
        let v = v.serialize(ValueSer)?;
        self.push(key, v);
        Ok(())
    }
    fn end(self) -> Result<Option<Value>, FormatError> {
        Ok(Some(Value::Section(self.section)))
    }
}

impl ser::SerializeStruct for MapSer {
    type Ok = Option<Value>;
    type Error = FormatError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), FormatError> {
        let v = v.serialize(ValueSer)?;
        self.push(key.into(), v);
        Ok(())
    }
    fn end(self) -> Result<Option<Value>, FormatError> {
        Ok(Some(Value::Section(self.section)))
    }
}

// ---------------------------------------------------------------------
// Reading.

/// A section read as a struct or map (or, numbered, as a sequence).
struct SectionDe<'a>(&'a Section);

/// One value read as the type asked for.
struct ValueDe<'a>(&'a Value);

/// A list item or a value's text, read as the type asked for.
struct TextDe<'a>(&'a [u8]);

impl<'a> TextDe<'a> {
    fn str(&self) -> Result<&'a str, FormatError> {
        std::str::from_utf8(self.0).map_err(|_| FormatError("text not UTF-8".into()))
    }

    fn parse<T: std::str::FromStr>(&self, what: &str) -> Result<T, FormatError> {
        let s = self.str()?;
        s.parse()
            .map_err(|_| FormatError(format!("{s:?} is not {what}")))
    }
}

macro_rules! parsed {
    ($($method:ident $visit:ident $ty:ty),* $(,)?) => {$(
        fn $method<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, FormatError> {
            v.$visit(self.parse::<$ty>(stringify!($ty))?)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for TextDe<'_> {
    type Error = FormatError;

    fn deserialize_any<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, FormatError> {
        v.visit_str(self.str()?)
    }
    fn deserialize_bool<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, FormatError> {
        match self.str()? {
            "yes" | "true" => v.visit_bool(true),
            "no" | "false" => v.visit_bool(false),
            other => Err(FormatError(format!("{other:?} is not yes or no"))),
        }
    }
    parsed! {
        deserialize_i8 visit_i8 i8, deserialize_i16 visit_i16 i16,
        deserialize_i32 visit_i32 i32, deserialize_i64 visit_i64 i64,
        deserialize_u8 visit_u8 u8, deserialize_u16 visit_u16 u16,
        deserialize_u32 visit_u32 u32, deserialize_u64 visit_u64 u64,
        deserialize_f32 visit_f32 f32, deserialize_f64 visit_f64 f64,
    }
    fn deserialize_bytes<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, FormatError> {
        v.visit_bytes(self.0)
    }
    fn deserialize_byte_buf<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, FormatError> {
        v.visit_bytes(self.0)
    }
    fn deserialize_option<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, FormatError> {
        v.visit_some(self)
    }
    fn deserialize_enum<V: de::Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, FormatError> {
        v.visit_enum(self.str()?.into_deserializer())
    }
    fn deserialize_newtype_struct<V: de::Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, FormatError> {
        v.visit_newtype_struct(self)
    }
    serde::forward_to_deserialize_any! {
        char str string unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any i128 u128
    }
}

/// A value's scalars read from its text (an error for a list or section).
macro_rules! from_text {
    ($($method:ident),* $(,)?) => {$(
        fn $method<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, FormatError> {
            self.text()?.$method(v)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for ValueDe<'_> {
    type Error = FormatError;

    fn deserialize_any<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, FormatError> {
        match self.0 {
            Value::Str(b) => TextDe(b).deserialize_any(v),
            Value::List(items) => v.visit_seq(Items(items.iter())),
            Value::Section(s) => SectionDe(s).deserialize_any(v),
        }
    }
    fn deserialize_seq<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, FormatError> {
        match self.0 {
            Value::Str(_) => Err(FormatError("text where a list was expected".into())),
            Value::List(items) => v.visit_seq(Items(items.iter())),
            Value::Section(s) => SectionDe(s).deserialize_seq(v),
        }
    }
    fn deserialize_option<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, FormatError> {
        v.visit_some(self)
    }
    fn deserialize_newtype_struct<V: de::Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, FormatError> {
        v.visit_newtype_struct(self)
    }
    fn deserialize_tuple<V: de::Visitor<'de>>(
        self,
        _: usize,
        v: V,
    ) -> Result<V::Value, FormatError> {
        self.deserialize_seq(v)
    }
    fn deserialize_tuple_struct<V: de::Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        v: V,
    ) -> Result<V::Value, FormatError> {
        self.deserialize_seq(v)
    }
    fn deserialize_map<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, FormatError> {
        match self.0 {
            Value::Section(s) => SectionDe(s).deserialize_map(v),
            _ => Err(FormatError("a section was expected".into())),
        }
    }
    fn deserialize_struct<V: de::Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, FormatError> {
        self.deserialize_map(v)
    }
    fn deserialize_ignored_any<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, FormatError> {
        v.visit_unit()
    }
    serde::forward_to_deserialize_any! {
        char str string unit unit_struct identifier i128 u128
    }
    // The scalars are the text's.
    from_text! {
        deserialize_bool, deserialize_i8, deserialize_i16, deserialize_i32, deserialize_i64,
        deserialize_u8, deserialize_u16, deserialize_u32, deserialize_u64, deserialize_f32,
        deserialize_f64, deserialize_bytes, deserialize_byte_buf,
    }
    fn deserialize_enum<V: de::Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, FormatError> {
        self.text()?.deserialize_enum(name, variants, v)
    }
}

impl<'a> ValueDe<'a> {
    fn text(&self) -> Result<TextDe<'a>, FormatError> {
        match self.0 {
            Value::Str(b) => Ok(TextDe(b)),
            _ => Err(FormatError("text was expected".into())),
        }
    }
}

impl<'de> de::Deserializer<'de> for SectionDe<'_> {
    type Error = FormatError;

    fn deserialize_any<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, FormatError> {
        v.visit_map(Entries {
            entries: self.0.entries.iter(),
            value: None,
        })
    }
    /// A numbered section (`0`, `1`, …) read in its order.
    fn deserialize_seq<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, FormatError> {
        v.visit_seq(Values(self.0.entries.iter()))
    }
    fn deserialize_option<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, FormatError> {
        v.visit_some(self)
    }
    fn deserialize_newtype_struct<V: de::Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, FormatError> {
        v.visit_newtype_struct(self)
    }
    fn deserialize_ignored_any<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, FormatError> {
        v.visit_unit()
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct tuple tuple_struct map struct enum
        identifier
    }
}

/// A list's items.
struct Items<'a>(std::slice::Iter<'a, Vec<u8>>);

impl<'de> de::SeqAccess<'de> for Items<'_> {
    type Error = FormatError;
    fn next_element_seed<T: de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, FormatError> {
        self.0
            .next()
            .map(|b| seed.deserialize(TextDe(b)))
            .transpose()
    }
}

/// A numbered section's values.
struct Values<'a>(std::slice::Iter<'a, (String, Value)>);

impl<'de> de::SeqAccess<'de> for Values<'_> {
    type Error = FormatError;
    fn next_element_seed<T: de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, FormatError> {
        self.0
            .next()
            .map(|(_, v)| seed.deserialize(ValueDe(v)))
            .transpose()
    }
}

/// A section's keys and values.
struct Entries<'a> {
    entries: std::slice::Iter<'a, (String, Value)>,
    value: Option<&'a Value>,
}

impl<'de> de::MapAccess<'de> for Entries<'_> {
    type Error = FormatError;
    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, FormatError> {
        let Some((k, v)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(v);
        seed.deserialize(k.as_str().into_deserializer()).map(Some)
    }
    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, FormatError> {
        let v = self
            .value
            .take()
            .ok_or(FormatError("a value without a key".into()))?;
        seed.deserialize(ValueDe(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Child {
        name: String,
        bytes_in: u64,
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    #[serde(untagged)]
    enum Action {
        Word(String),
        Rules(Vec<String>),
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Sa {
        name: String,
        uniqueid: u32,
        initiator: bool,
        uptime: f64,
        cpu: Option<u16>,
        vips: Vec<String>,
        children: Vec<Child>,
        none: Vec<Child>,
        action: Action,
        other: Action,
    }

    fn sa() -> Sa {
        Sa {
            name: "gw".into(),
            uniqueid: 7,
            initiator: true,
            uptime: 1.5,
            cpu: None,
            vips: vec!["10.3.0.1".into()],
            children: vec![
                Child {
                    name: "net".into(),
                    bytes_in: 84,
                },
                Child {
                    name: "net".into(),
                    bytes_in: 0,
                },
            ],
            none: Vec::new(),
            action: Action::Word("discard".into()),
            other: Action::Rules(vec!["esp/tunnel/a-b/require".into()]),
        }
    }

    #[test]
    fn a_value_is_written_as_charon_writes_one_and_read_back() {
        let s = to_section(&sa()).unwrap();
        assert_eq!(s.str("uniqueid"), Some("7"));
        assert_eq!(s.str("initiator"), Some("yes"));
        assert_eq!(s.str("uptime"), Some("1.5"));
        assert!(s.get("cpu").is_none(), "None leaves its key out");
        assert_eq!(
            s.get("vips"),
            Some(&Value::List(vec![b"10.3.0.1".to_vec()]))
        );
        assert_eq!(s.get("none"), Some(&Value::List(Vec::new())));
        let Some(Value::Section(children)) = s.get("children") else {
            panic!("{s:?}")
        };
        let keys: Vec<&str> = children.entries.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["0", "1"]);
        // Through the wire and back.
        let packet = flowsec_wire::vici::Packet {
            ty: flowsec_wire::vici::PacketType::CmdResponse,
            name: None,
            message: Some(s),
        };
        let bytes = packet.emit().unwrap();
        let parsed = flowsec_wire::vici::Packet::parse(&bytes[4..]).unwrap();
        let back: Sa = from_section(parsed.message.as_ref().unwrap()).unwrap();
        assert_eq!(back, sa());
    }

    #[test]
    fn a_message_of_the_wrong_shape_is_an_error_not_a_panic() {
        let s = Section::default()
            .with("name", "gw")
            .with("uniqueid", "seven");
        let e = from_section::<Sa>(&s).unwrap_err();
        assert!(e.to_string().contains("\"seven\" is not u32"), "{e}");
        let s = Section::default().with("name", "gw");
        let e = from_section::<Sa>(&s).unwrap_err();
        assert!(e.to_string().contains("missing field"), "{e}");
        let s = Section::default().with_list("name", vec![b"a".to_vec()]);
        assert!(from_section::<Child>(&s).is_err());
        let s = Section::default()
            .with("name", "gw")
            .with("bytes_in", "1")
            .with("initiator", "maybe");
        assert!(
            from_section::<Child>(&s).is_ok(),
            "unknown keys are skipped"
        );
        assert!(to_section(&3u32).is_err());
    }
}
