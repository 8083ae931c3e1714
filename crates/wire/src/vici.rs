//! strongSwan's vici protocol (the Versatile IKE Control Interface, the
//! `charon.vici` socket that `swanctl` and the vici libraries speak): its
//! framing and its messages, as strongSwan's
//! `src/libcharon/plugins/vici/README.md` specifies them. Control plane,
//! so owned representations only, like [`crate::ike`]: a packet is parsed
//! whole from its frame and emitted whole.
//!
//! ```text
//! frame:   | length (u32, big endian, of what follows) | packet |
//! packet:  | type (u8) | [name length (u8) | name] | [message] |
//!            named: CMD_REQUEST, EVENT_REGISTER, EVENT_UNREGISTER, EVENT
//!            with a message: CMD_REQUEST, CMD_RESPONSE, EVENT
//! message: elements, each | type (u8) | ... |
//!            SECTION_START 1 | name len (u8) | name |      SECTION_END 2
//!            KEY_VALUE     3 | name len (u8) | name | value len (u16) | value |
//!            LIST_START    4 | name len (u8) | name |      LIST_END 6
//!            LIST_ITEM     5 | value len (u16) | value |    (inside a list only)
//! ```
//!
//! Hostile input is normal input: a frame longer than [`MAX_FRAME`]
//! (charon's 512 KiB), sections nested deeper than [`MAX_DEPTH`], an
//! element cut short, an unknown type, a list item outside a list, an
//! unbalanced section or list — each is a named [`ViciError`], never a
//! panic and never an allocation larger than the frame.

use core::fmt;

pub mod captures;

/// The most bytes a frame's packet may have (charon's `VICI_MAX_MSGLEN`).
pub const MAX_FRAME: usize = 512 * 1024;
/// The longest answer flowsec sends and `flowsec ctl` reads: its own
/// `flowsec-*` answers list a whole SAD, which can pass [`MAX_FRAME`]
/// (under 16 MiB, a frame's first byte stays zero, which is how the
/// control socket tells vici from JSON).
pub const MAX_ANSWER: usize = 16 * 1024 * 1024 - 1;
/// The deepest sections may nest (strongSwan sets no limit; its own
/// messages nest four deep: a connection, its children, their sections).
pub const MAX_DEPTH: usize = 16;
/// The frame's length field.
pub const LENGTH_LEN: usize = 4;

/// A packet's type (README "Packet types").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketType {
    /// A named request with a message (0).
    CmdRequest,
    /// The answer to a request, with a message (1).
    CmdResponse,
    /// The answer to a request for a command that does not exist (2).
    CmdUnknown,
    /// Register for a named event (3).
    EventRegister,
    /// Unregister from a named event (4).
    EventUnregister,
    /// The answer to a (un)registration that succeeded (5).
    EventConfirm,
    /// The answer to a (un)registration for an event that does not exist (6).
    EventUnknown,
    /// A named event with a message (7).
    Event,
}

impl PacketType {
    fn from_u8(v: u8) -> Option<PacketType> {
        Some(match v {
            0 => PacketType::CmdRequest,
            1 => PacketType::CmdResponse,
            2 => PacketType::CmdUnknown,
            3 => PacketType::EventRegister,
            4 => PacketType::EventUnregister,
            5 => PacketType::EventConfirm,
            6 => PacketType::EventUnknown,
            7 => PacketType::Event,
            _ => return None,
        })
    }

    fn to_u8(self) -> u8 {
        self as u8
    }

    /// Whether a name follows the type.
    pub fn is_named(self) -> bool {
        matches!(
            self,
            PacketType::CmdRequest
                | PacketType::EventRegister
                | PacketType::EventUnregister
                | PacketType::Event
        )
    }

    /// Whether a client sends it (a request, an event registration);
    /// the others are the server's.
    pub fn from_client(self) -> bool {
        matches!(
            self,
            PacketType::CmdRequest | PacketType::EventRegister | PacketType::EventUnregister
        )
    }

    /// Whether a message follows the name.
    pub fn has_message(self) -> bool {
        matches!(
            self,
            PacketType::CmdRequest | PacketType::CmdResponse | PacketType::Event
        )
    }
}

/// A message element's type (README "Message format").
mod element {
    pub const SECTION_START: u8 = 1;
    pub const SECTION_END: u8 = 2;
    pub const KEY_VALUE: u8 = 3;
    pub const LIST_START: u8 = 4;
    pub const LIST_ITEM: u8 = 5;
    pub const LIST_END: u8 = 6;
}

/// A value in a section: a string of bytes (vici values are not always
/// text: keys and certificates travel as they are), a list of them, or a
/// section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// `KEY_VALUE`.
    Str(Vec<u8>),
    /// `LIST_START` … `LIST_END`.
    List(Vec<Vec<u8>>),
    /// `SECTION_START` … `SECTION_END`.
    Section(Section),
}

/// A message, or a section in one: named values in the order they came
/// (names may repeat; vici's clients read the last, strongSwan's the first
/// for some keys, so nothing is merged here).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Section {
    /// The entries, in order.
    pub entries: Vec<(String, Value)>,
}

impl Section {
    /// The first value named `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The first string value named `name`, if it is text.
    pub fn str(&self, name: &str) -> Option<&str> {
        match self.get(name)? {
            Value::Str(v) => core::str::from_utf8(v).ok(),
            _ => None,
        }
    }

    /// Add a string value (builder style).
    pub fn with(mut self, name: &str, value: impl Into<Vec<u8>>) -> Section {
        self.entries
            .push((name.to_string(), Value::Str(value.into())));
        self
    }

    /// Add a list (builder style).
    pub fn with_list(mut self, name: &str, items: Vec<Vec<u8>>) -> Section {
        self.entries.push((name.to_string(), Value::List(items)));
        self
    }

    /// Add a section (builder style).
    pub fn with_section(mut self, name: &str, section: Section) -> Section {
        self.entries
            .push((name.to_string(), Value::Section(section)));
        self
    }
}

/// One vici packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// Its type.
    pub ty: PacketType,
    /// The command or event name, for the named types.
    pub name: Option<String>,
    /// The message, for the types that carry one.
    pub message: Option<Section>,
}

/// Why bytes are not a vici packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViciError {
    /// The frame's length is over [`MAX_FRAME`].
    TooLong(usize),
    /// An element or the packet ends before its bytes do.
    Truncated,
    /// The packet type is not one of the eight.
    UnknownPacketType(u8),
    /// A named packet without a name, or a name that is not UTF-8.
    BadName,
    /// An element type that does not exist.
    UnknownElement(u8),
    /// Sections nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// `SECTION_END` without a section, `LIST_END` without a list, an
    /// element other than `LIST_ITEM` inside a list, `LIST_ITEM` outside
    /// one, or the message ends inside one.
    Unbalanced,
    /// A name or value too long for its length field (emitting).
    FieldTooLong,
}

impl fmt::Display for ViciError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ViciError::TooLong(n) => write!(f, "vici frame of {n} bytes (too long)"),
            ViciError::Truncated => f.write_str("vici packet cut short"),
            ViciError::UnknownPacketType(t) => write!(f, "vici packet type {t} unknown"),
            ViciError::BadName => f.write_str("vici packet without a valid name"),
            ViciError::UnknownElement(t) => write!(f, "vici message element {t} unknown"),
            ViciError::TooDeep => write!(f, "vici sections nested deeper than {MAX_DEPTH}"),
            ViciError::Unbalanced => f.write_str("vici sections or lists unbalanced"),
            ViciError::FieldTooLong => f.write_str("vici name or value too long"),
        }
    }
}

impl std::error::Error for ViciError {}

/// The length a frame's header announces, checked against [`MAX_FRAME`];
/// `None` until the four bytes are there.
pub fn frame_len(buf: &[u8]) -> Option<Result<usize, ViciError>> {
    frame_len_up_to(buf, MAX_FRAME)
}

/// [`frame_len`] with another limit (a client reading flowsec's answers,
/// [`MAX_ANSWER`]).
pub fn frame_len_up_to(buf: &[u8], limit: usize) -> Option<Result<usize, ViciError>> {
    let head: [u8; LENGTH_LEN] = buf.get(..LENGTH_LEN)?.try_into().ok()?;
    let n = u32::from_be_bytes(head) as usize;
    Some(if n > limit {
        Err(ViciError::TooLong(n))
    } else {
        Ok(n)
    })
}

/// A cursor over a packet's bytes.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn u8(&mut self) -> Result<u8, ViciError> {
        let (&b, rest) = self.buf.split_first().ok_or(ViciError::Truncated)?;
        self.buf = rest;
        Ok(b)
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], ViciError> {
        if self.buf.len() < n {
            return Err(ViciError::Truncated);
        }
        let (b, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(b)
    }

    /// A name: one length byte, then that many bytes of UTF-8.
    fn name(&mut self) -> Result<String, ViciError> {
        let n = usize::from(self.u8()?);
        let b = self.bytes(n)?;
        core::str::from_utf8(b)
            .map(str::to_string)
            .map_err(|_| ViciError::BadName)
    }

    /// A value: a 16-bit big-endian length, then that many bytes.
    fn value(&mut self) -> Result<Vec<u8>, ViciError> {
        let hi = self.u8()?;
        let lo = self.u8()?;
        let n = usize::from(u16::from_be_bytes([hi, lo]));
        Ok(self.bytes(n)?.to_vec())
    }
}

impl Packet {
    /// The packet of one frame's bytes (without the length field).
    pub fn parse(packet: &[u8]) -> Result<Packet, ViciError> {
        Packet::parse_up_to(packet, MAX_FRAME)
    }

    /// [`Packet::parse`] with another limit ([`MAX_ANSWER`]).
    pub fn parse_up_to(packet: &[u8], limit: usize) -> Result<Packet, ViciError> {
        if packet.len() > limit {
            return Err(ViciError::TooLong(packet.len()));
        }
        let mut r = Reader { buf: packet };
        let t = r.u8()?;
        let ty = PacketType::from_u8(t).ok_or(ViciError::UnknownPacketType(t))?;
        let name = match ty.is_named() {
            true => Some(r.name().map_err(|_| ViciError::BadName)?),
            false => None,
        };
        let message = match ty.has_message() {
            true => Some(parse_message(&mut r)?),
            false if r.buf.is_empty() => None,
            false => return Err(ViciError::Truncated),
        };
        Ok(Packet { ty, name, message })
    }

    /// The frame of this packet: its length, then the packet.
    pub fn emit(&self) -> Result<Vec<u8>, ViciError> {
        self.emit_up_to(MAX_FRAME)
    }

    /// [`Packet::emit`] with another limit ([`MAX_ANSWER`]).
    pub fn emit_up_to(&self, limit: usize) -> Result<Vec<u8>, ViciError> {
        let mut out = vec![0; LENGTH_LEN];
        out.push(self.ty.to_u8());
        if self.ty.is_named() {
            emit_name(&mut out, self.name.as_deref().unwrap_or(""))?;
        }
        if self.ty.has_message() {
            let empty = Section::default();
            emit_section(&mut out, self.message.as_ref().unwrap_or(&empty), 0)?;
        }
        let n = out.len() - LENGTH_LEN;
        if n > limit {
            return Err(ViciError::TooLong(n));
        }
        out[..LENGTH_LEN].copy_from_slice(&(n as u32).to_be_bytes());
        Ok(out)
    }
}

/// A message: elements until the end of the packet, every section and
/// list closed.
fn parse_message(r: &mut Reader<'_>) -> Result<Section, ViciError> {
    let mut root = Section::default();
    // The sections open inside it, outermost first, with the names they
    // will have in their parent.
    let mut open: Vec<(String, Section)> = Vec::new();
    let mut list: Option<(String, Vec<Vec<u8>>)> = None;
    while !r.buf.is_empty() {
        let t = r.u8()?;
        if let Some((_, items)) = list.as_mut() {
            match t {
                element::LIST_ITEM => items.push(r.value()?),
                element::LIST_END => {
                    let (name, items) = list.take().ok_or(ViciError::Unbalanced)?;
                    top(&mut root, &mut open)
                        .entries
                        .push((name, Value::List(items)));
                }
                _ => return Err(ViciError::Unbalanced),
            }
            continue;
        }
        match t {
            element::SECTION_START => {
                if open.len() >= MAX_DEPTH {
                    return Err(ViciError::TooDeep);
                }
                open.push((r.name()?, Section::default()));
            }
            element::SECTION_END => {
                let (name, section) = open.pop().ok_or(ViciError::Unbalanced)?;
                let parent = top(&mut root, &mut open);
                parent.entries.push((name, Value::Section(section)));
            }
            element::KEY_VALUE => {
                let name = r.name()?;
                let value = r.value()?;
                top(&mut root, &mut open)
                    .entries
                    .push((name, Value::Str(value)));
            }
            element::LIST_START => list = Some((r.name()?, Vec::new())),
            element::LIST_ITEM | element::LIST_END => return Err(ViciError::Unbalanced),
            other => return Err(ViciError::UnknownElement(other)),
        }
    }
    if list.is_some() || !open.is_empty() {
        return Err(ViciError::Unbalanced);
    }
    Ok(root)
}

/// The innermost open section: the last of `open`, or the message itself.
fn top<'a>(root: &'a mut Section, open: &'a mut [(String, Section)]) -> &'a mut Section {
    match open.last_mut() {
        Some((_, s)) => s,
        None => root,
    }
}

fn emit_name(out: &mut Vec<u8>, name: &str) -> Result<(), ViciError> {
    let n = u8::try_from(name.len()).map_err(|_| ViciError::FieldTooLong)?;
    out.push(n);
    out.extend_from_slice(name.as_bytes());
    Ok(())
}

fn emit_value(out: &mut Vec<u8>, value: &[u8]) -> Result<(), ViciError> {
    let n = u16::try_from(value.len()).map_err(|_| ViciError::FieldTooLong)?;
    out.extend_from_slice(&n.to_be_bytes());
    out.extend_from_slice(value);
    Ok(())
}

fn emit_section(out: &mut Vec<u8>, s: &Section, depth: usize) -> Result<(), ViciError> {
    if depth > MAX_DEPTH {
        return Err(ViciError::TooDeep);
    }
    for (name, value) in &s.entries {
        match value {
            Value::Str(v) => {
                out.push(element::KEY_VALUE);
                emit_name(out, name)?;
                emit_value(out, v)?;
            }
            Value::List(items) => {
                out.push(element::LIST_START);
                emit_name(out, name)?;
                for item in items {
                    out.push(element::LIST_ITEM);
                    emit_value(out, item)?;
                }
                out.push(element::LIST_END);
            }
            Value::Section(inner) => {
                out.push(element::SECTION_START);
                emit_name(out, name)?;
                emit_section(out, inner, depth + 1)?;
                out.push(element::SECTION_END);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The README's example message, "key1 = value1, section1 { sub-section
    /// { key2 = value2 } list1 = [ item1, item2 ] }", byte by byte.
    const README_EXAMPLE: &[u8] = &[
        3, 4, b'k', b'e', b'y', b'1', 0, 6, b'v', b'a', b'l', b'u', b'e', b'1', //
        1, 8, b's', b'e', b'c', b't', b'i', b'o', b'n', b'1', //
        1, 11, b's', b'u', b'b', b'-', b's', b'e', b'c', b't', b'i', b'o', b'n', //
        3, 4, b'k', b'e', b'y', b'2', 0, 6, b'v', b'a', b'l', b'u', b'e', b'2', //
        2,    //
        4, 5, b'l', b'i', b's', b't', b'1', //
        5, 0, 5, b'i', b't', b'e', b'm', b'1', //
        5, 0, 5, b'i', b't', b'e', b'm', b'2', //
        6,    //
        2,
    ];

    fn readme_message() -> Section {
        Section::default().with("key1", "value1").with_section(
            "section1",
            Section::default()
                .with_section("sub-section", Section::default().with("key2", "value2"))
                .with_list("list1", vec![b"item1".to_vec(), b"item2".to_vec()]),
        )
    }

    #[test]
    fn the_readme_example_parses_and_emits_byte_for_byte() {
        let mut packet = vec![0u8, 7];
        packet.extend_from_slice(b"version");
        packet.extend_from_slice(README_EXAMPLE);
        let p = Packet::parse(&packet).unwrap();
        assert_eq!(p.ty, PacketType::CmdRequest);
        assert_eq!(p.name.as_deref(), Some("version"));
        assert_eq!(p.message.as_ref(), Some(&readme_message()));
        let frame = p.emit().unwrap();
        assert_eq!(frame_len(&frame), Some(Ok(packet.len())));
        assert_eq!(&frame[LENGTH_LEN..], &packet[..]);
    }

    #[test]
    fn unnamed_packets_without_a_message_are_one_byte() {
        for (ty, b) in [(PacketType::CmdUnknown, 2), (PacketType::EventConfirm, 5)] {
            let p = Packet {
                ty,
                name: None,
                message: None,
            };
            assert_eq!(p.emit().unwrap(), vec![0, 0, 0, 1, b]);
            assert_eq!(Packet::parse(&[b]).unwrap(), p);
        }
        assert_eq!(Packet::parse(&[2, 0]), Err(ViciError::Truncated));
    }

    #[test]
    fn hostile_packets_are_refused_by_name() {
        let named = |body: &[u8]| {
            let mut p = vec![0u8, 1, b'x'];
            p.extend_from_slice(body);
            Packet::parse(&p)
        };
        assert_eq!(Packet::parse(&[]), Err(ViciError::Truncated));
        assert_eq!(Packet::parse(&[9]), Err(ViciError::UnknownPacketType(9)));
        assert_eq!(Packet::parse(&[0, 5, b'a']), Err(ViciError::BadName));
        assert_eq!(Packet::parse(&[0, 1, 0xff]), Err(ViciError::BadName));
        assert_eq!(named(&[3, 1, b'k', 0, 9, b'v']), Err(ViciError::Truncated));
        assert_eq!(named(&[8]), Err(ViciError::UnknownElement(8)));
        assert_eq!(named(&[2]), Err(ViciError::Unbalanced));
        assert_eq!(named(&[1, 1, b's']), Err(ViciError::Unbalanced));
        assert_eq!(named(&[5, 0, 0]), Err(ViciError::Unbalanced));
        assert_eq!(named(&[6]), Err(ViciError::Unbalanced));
        assert_eq!(
            named(&[4, 1, b'l', 3, 1, b'k', 0, 0]),
            Err(ViciError::Unbalanced)
        );
        assert_eq!(named(&[4, 1, b'l', 5, 0, 0]), Err(ViciError::Unbalanced));
        let mut deep = Vec::new();
        for _ in 0..=MAX_DEPTH {
            deep.extend_from_slice(&[1, 1, b's']);
        }
        assert_eq!(named(&deep), Err(ViciError::TooDeep));
        let too_long = ((MAX_FRAME + 1) as u32).to_be_bytes();
        assert_eq!(
            frame_len(&too_long),
            Some(Err(ViciError::TooLong(MAX_FRAME + 1)))
        );
        assert_eq!(frame_len(&[0, 0]), None);
    }

    #[test]
    fn what_cannot_be_framed_is_refused_when_emitting() {
        let long_name = "n".repeat(256);
        let p = Packet {
            ty: PacketType::CmdRequest,
            name: Some(long_name),
            message: None,
        };
        assert_eq!(p.emit(), Err(ViciError::FieldTooLong));
        let p = Packet {
            ty: PacketType::CmdResponse,
            name: None,
            message: Some(Section::default().with("v", vec![0; 65536])),
        };
        assert_eq!(p.emit(), Err(ViciError::FieldTooLong));
        let mut s = Section::default().with("k", "v");
        for _ in 0..=MAX_DEPTH {
            s = Section::default().with_section("s", s);
        }
        let p = Packet {
            ty: PacketType::Event,
            name: Some("e".into()),
            message: Some(s),
        };
        assert_eq!(p.emit(), Err(ViciError::TooDeep));
    }

    #[test]
    fn values_are_bytes_and_names_repeat_in_order() {
        let s = Section::default()
            .with("k", vec![0, 0xff, 1])
            .with("k", "second");
        let p = Packet {
            ty: PacketType::CmdResponse,
            name: None,
            message: Some(s.clone()),
        };
        let back = Packet::parse(&p.emit().unwrap()[LENGTH_LEN..]).unwrap();
        assert_eq!(back.message, Some(s.clone()));
        assert_eq!(s.get("k"), Some(&Value::Str(vec![0, 0xff, 1])));
        assert_eq!(s.str("k"), None, "not text");
    }
}

#[cfg(test)]
mod charon_tests {
    //! The codec against what strongSwan's own swanctl and charon sent
    //! each other ([`captures`]).
    use super::captures::*;
    use super::*;

    fn packet(frame: &[u8]) -> Packet {
        let len = frame_len(frame).unwrap().unwrap();
        assert_eq!(len, frame.len() - LENGTH_LEN);
        Packet::parse(&frame[LENGTH_LEN..]).unwrap()
    }

    #[test]
    fn charons_frames_parse_and_emit_byte_for_byte() {
        for frame in [
            STATS_REQUEST,
            STATS_RESPONSE,
            LOAD_SHARED_REQUEST,
            LOAD_CONN_REQUEST,
            LOAD_CONN_RESPONSE,
            GET_CONNS_RESPONSE,
            REGISTER_LIST_CONN,
            EVENT_CONFIRM,
            LIST_CONN_EVENT,
            LIST_SAS_RESPONSE,
        ] {
            assert_eq!(packet(frame).emit().unwrap(), frame);
        }
    }

    #[test]
    fn charons_messages_read_as_the_readme_says() {
        let p = packet(STATS_REQUEST);
        assert_eq!(
            (p.ty, p.name.as_deref()),
            (PacketType::CmdRequest, Some("stats"))
        );
        assert_eq!(p.message, Some(Section::default()));
        let stats = packet(STATS_RESPONSE).message.unwrap();
        let Some(Value::Section(ikesas)) = stats.get("ikesas") else {
            panic!("{stats:?}")
        };
        assert_eq!(ikesas.str("total"), Some("0"));
        assert!(matches!(stats.get("plugins"), Some(Value::List(l)) if !l.is_empty()));
        let shared = packet(LOAD_SHARED_REQUEST).message.unwrap();
        assert_eq!(shared.str("type"), Some("ike"));
        assert_eq!(
            shared.get("data"),
            Some(&Value::Str(vec![1, 0x23, 0x45, 0x67, 0x89]))
        );
        let conn = packet(LOAD_CONN_REQUEST);
        assert_eq!(conn.name.as_deref(), Some("load-conn"));
        let Some(Value::Section(gw)) = conn.message.unwrap().get("gw").cloned() else {
            panic!("no gw")
        };
        assert_eq!(
            gw.get("local_addrs"),
            Some(&Value::List(vec![b"192.0.2.1".to_vec()]))
        );
        let Some(Value::Section(children)) = gw.get("children") else {
            panic!("no children")
        };
        assert!(matches!(children.get("net"), Some(Value::Section(_))));
        let r = packet(REGISTER_LIST_CONN);
        assert_eq!(
            (r.ty, r.name.as_deref(), r.message),
            (PacketType::EventRegister, Some("list-conn"), None)
        );
        assert_eq!(packet(EVENT_CONFIRM).ty, PacketType::EventConfirm);
        let e = packet(LIST_CONN_EVENT);
        assert_eq!(
            (e.ty, e.name.as_deref()),
            (PacketType::Event, Some("list-conn"))
        );
        assert_eq!(
            packet(GET_CONNS_RESPONSE).message.unwrap().get("conns"),
            Some(&Value::List(Vec::new()))
        );
    }

    #[test]
    fn every_cut_of_charons_frames_is_refused_by_name() {
        for frame in [LOAD_CONN_REQUEST, LIST_CONN_EVENT, STATS_RESPONSE] {
            let body = &frame[LENGTH_LEN..];
            for cut in 1..body.len() {
                // A cut message is one of the named errors (or, rarely, a
                // shorter valid message: a cut exactly between elements at
                // the top level).
                match Packet::parse(&body[..cut]) {
                    Ok(p) => assert!(p.emit().is_ok()),
                    Err(e) => assert!(!e.to_string().is_empty()),
                }
            }
        }
    }
}
