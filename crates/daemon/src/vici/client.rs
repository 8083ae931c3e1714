//! One vici client connection: bytes in, whole packets out of them; packets
//! queued, bytes out. No system calls but the stream's own read and write,
//! so the framing is tested on a socket pair.

use std::collections::BTreeSet;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;

use flowsec_wire::vici::{
    frame_len, Packet, Section, Value, ViciError, LENGTH_LEN, MAX_ANSWER, MAX_FRAME,
};
use zeroize::{Zeroize, Zeroizing};

/// The most a client may leave unread of what we sent before it is
/// dropped (a `list-sas` of thousands of SAs is a few MiB).
pub const MAX_QUEUED: usize = 16 << 20;
/// The most read from one client per turn of the control loop, so that
/// one busy client cannot starve IKE.
const READ_PER_TURN: usize = 1 << 20;

/// A client's stream: a Unix socket or a TCP connection (`tcp://`).
#[derive(Debug)]
pub enum Stream {
    /// `unix://PATH`.
    Unix(UnixStream),
    /// `tcp://ADDR:PORT`.
    Tcp(std::net::TcpStream),
}

impl Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }

    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        }
    }
}

/// Why a client is dropped.
#[derive(Debug)]
pub enum Closed {
    /// It closed the connection (or reading failed).
    Gone,
    /// What it sent is no vici packet.
    Malformed(ViciError),
    /// It sent a packet only the server sends (a response or an event).
    Unexpected,
    /// It does not read what it asked for.
    Slow,
}

/// One connected client.
#[derive(Debug)]
pub struct Client {
    /// Its stream (non-blocking).
    pub stream: Stream,
    /// Bytes read and not yet a whole frame (secrets travel in
    /// `load-shared`: wiped as they are consumed).
    inbuf: Zeroizing<Vec<u8>>,
    /// Bytes to send.
    outbuf: Vec<u8>,
    /// The events it registered for.
    pub events: BTreeSet<String>,
}

impl Client {
    /// A client on `stream` (already non-blocking).
    pub fn new(stream: Stream) -> Client {
        Client {
            stream,
            inbuf: Zeroizing::new(Vec::new()),
            outbuf: Vec::new(),
            events: BTreeSet::new(),
        }
    }

    /// Read what is there (at most [`READ_PER_TURN`]) and return the whole
    /// packets in it; a malformed one ends the client.
    pub fn read_packets(&mut self) -> Result<Vec<Packet>, Closed> {
        let mut chunk = [0u8; 16 * 1024];
        let mut read = 0;
        let mut eof = false;
        while read < READ_PER_TURN {
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => {
                    // Room for the whole frame at once: no reallocation
                    // leaves a copy of its bytes behind.
                    if let Some(Ok(len)) = frame_len(&self.inbuf) {
                        let want = (LENGTH_LEN + len).saturating_sub(self.inbuf.len());
                        self.inbuf.reserve(want.max(n));
                    }
                    self.inbuf.extend_from_slice(&chunk[..n]);
                    read += n;
                    // Never more than one frame's worth waits here.
                    if let Some(Err(e)) = frame_len(&self.inbuf) {
                        return Err(Closed::Malformed(e));
                    }
                    if self.inbuf.len() > 2 * (LENGTH_LEN + MAX_FRAME) {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return Err(Closed::Gone),
            }
        }
        chunk.zeroize();
        let packets = self.take_frames()?;
        if eof && packets.is_empty() {
            return Err(Closed::Gone);
        }
        Ok(packets)
    }

    /// The whole frames in `inbuf`, parsed; what remains of a frame stays.
    fn take_frames(&mut self) -> Result<Vec<Packet>, Closed> {
        let mut packets = Vec::new();
        let mut at = 0;
        while let Some(len) = frame_len(&self.inbuf[at..]) {
            let len = len.map_err(Closed::Malformed)?;
            let Some(body) = self.inbuf.get(at + LENGTH_LEN..at + LENGTH_LEN + len) else {
                break;
            };
            let packet = Packet::parse(body).map_err(Closed::Malformed)?;
            if !packet.ty.from_client() {
                return Err(Closed::Unexpected);
            }
            packets.push(packet);
            at += LENGTH_LEN + len;
        }
        if at > 0 {
            let rest = Zeroizing::new(self.inbuf[at..].to_vec());
            self.inbuf = rest;
        }
        Ok(packets)
    }

    /// Queue `packet` and send what the socket takes.
    pub fn send(&mut self, packet: &Packet) -> Result<(), Closed> {
        // Our own messages, up to MAX_ANSWER (a whole SAD in a
        // `flowsec-sas`). One that is still too long, or has a field too
        // long for vici, is answered with charon's failure, not sent wrong.
        let bytes = match packet.emit_up_to(MAX_ANSWER) {
            Ok(bytes) => bytes,
            Err(e) => {
                let failure = Packet {
                    ty: packet.ty,
                    name: packet.name.clone(),
                    message: Some(super::messages::failure(format!("answer not sent: {e}"))),
                };
                match failure.emit() {
                    Ok(bytes) => bytes,
                    Err(_) => return Ok(()),
                }
            }
        };
        // `emit` writes the frame, its length first.
        self.outbuf.extend_from_slice(&bytes);
        self.flush()
    }

    /// Send what is queued, as far as the socket takes it.
    pub fn flush(&mut self) -> Result<(), Closed> {
        let mut sent = 0;
        while sent < self.outbuf.len() {
            match self.stream.write(&self.outbuf[sent..]) {
                Ok(0) => return Err(Closed::Gone),
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return Err(Closed::Gone),
            }
        }
        self.outbuf.drain(..sent);
        if self.outbuf.len() > MAX_QUEUED {
            return Err(Closed::Slow);
        }
        Ok(())
    }

    /// Whether bytes wait to be sent.
    pub fn wants_write(&self) -> bool {
        !self.outbuf.is_empty()
    }
}

/// Overwrite every name and value of `s` (a request that carried a
/// secret) before it is dropped.
pub fn wipe(s: &mut Section) {
    for (name, value) in &mut s.entries {
        name.zeroize();
        match value {
            Value::Str(v) => v.zeroize(),
            Value::List(items) => items.iter_mut().for_each(Zeroize::zeroize),
            Value::Section(inner) => wipe(inner),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flowsec_wire::vici::{PacketType, Section};

    fn frame(packet: &Packet) -> Vec<u8> {
        packet.emit().unwrap()
    }

    fn pair() -> (Client, UnixStream) {
        let (a, b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        (Client::new(Stream::Unix(a)), b)
    }

    #[test]
    fn packets_split_anywhere_come_out_whole() {
        let (mut c, mut peer) = pair();
        let req = Packet {
            ty: PacketType::CmdRequest,
            name: Some("list-sas".into()),
            message: Some(Section::default().with("ike", "gw")),
        };
        let mut bytes = frame(&req);
        bytes.extend(frame(&Packet {
            ty: PacketType::EventRegister,
            name: Some("list-sa".into()),
            message: None,
        }));
        for (i, b) in bytes.iter().enumerate() {
            peer.write_all(&[*b]).unwrap();
            let got = c.read_packets().unwrap();
            if i == bytes.len() - 1 {
                assert_eq!(got.len(), 1);
                assert_eq!(got[0].ty, PacketType::EventRegister);
            } else if i == frame(&req).len() - 1 {
                assert_eq!(got, vec![req.clone()]);
            } else {
                assert!(got.is_empty(), "at byte {i}");
            }
        }
        drop(peer);
        assert!(matches!(c.read_packets(), Err(Closed::Gone)));
    }

    #[test]
    fn hostile_frames_end_the_client() {
        let (mut c, mut peer) = pair();
        peer.write_all(&(MAX_FRAME as u32 + 1).to_be_bytes())
            .unwrap();
        assert!(matches!(
            c.read_packets(),
            Err(Closed::Malformed(ViciError::TooLong(_)))
        ));
        let (mut c, mut peer) = pair();
        peer.write_all(&[0, 0, 0, 2, 0, 9]).unwrap();
        assert!(matches!(c.read_packets(), Err(Closed::Malformed(_))));
        // A response is the server's to send.
        let (mut c, mut peer) = pair();
        let resp = Packet {
            ty: PacketType::CmdResponse,
            name: None,
            message: Some(Section::default()),
        };
        peer.write_all(&frame(&resp)).unwrap();
        assert!(matches!(c.read_packets(), Err(Closed::Unexpected)));
    }

    #[test]
    fn a_client_that_does_not_read_is_dropped() {
        let (mut c, _peer) = pair();
        let big = Packet {
            ty: PacketType::Event,
            name: Some("list-sa".into()),
            message: Some(Section::default().with("x", vec![b'a'; 60_000])),
        };
        let mut result = Ok(());
        for _ in 0..(MAX_QUEUED / 60_000 + 100) {
            result = c.send(&big);
            if result.is_err() {
                break;
            }
        }
        assert!(matches!(result, Err(Closed::Slow)));
    }
}
