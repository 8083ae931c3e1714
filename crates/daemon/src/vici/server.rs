//! The vici socket (`--vici`, charon's `unix:///var/run/charon.vici` by
//! default): the listener, the clients, event registrations and the
//! counters of what was refused. What a command answers is the control
//! plane's (`crate::plane::vici`); this module only moves packets.

use core::fmt;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;

use flowsec_wire::vici::{Packet, PacketType, Section, ViciError};

use super::client::{Client, Closed, Stream};
use crate::control::{Control, ControlError};
use crate::sys::epoll::Epoll;

/// charon's socket, where `swanctl` and the vici libraries look first.
pub const DEFAULT_URI: &str = "unix:///var/run/charon.vici";
/// The most clients at once (charon sets none; each holds up to
/// [`super::client::MAX_QUEUED`] of answers): the next is refused.
pub const MAX_CLIENTS: usize = 64;

/// The events a client may register for (vici README, "Server-issued
/// events").
pub const EVENTS: &[&str] = &[
    "log",
    "control-log",
    "ike-updown",
    "ike-rekey",
    "child-updown",
    "child-rekey",
    "list-sa",
    "list-policy",
    "list-conn",
    "list-cert",
    "list-authority",
];

/// Where to listen (`--vici`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Uri {
    /// `unix://PATH` (charon's form: `unix:///var/run/charon.vici`).
    Unix(PathBuf),
    /// `tcp://ADDR:PORT`.
    Tcp(SocketAddr),
}

impl Uri {
    /// `unix://PATH` or `tcp://ADDR:PORT` (`none` is the caller's).
    pub fn parse(s: &str) -> Option<Uri> {
        if let Some(path) = s.strip_prefix("unix://") {
            return path
                .starts_with('/')
                .then(|| Uri::Unix(PathBuf::from(path)));
        }
        s.strip_prefix("tcp://")?.parse().ok().map(Uri::Tcp)
    }
}

impl fmt::Display for Uri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Uri::Unix(p) => write!(f, "unix://{}", p.display()),
            Uri::Tcp(a) => write!(f, "tcp://{a}"),
        }
    }
}

/// What was refused or dropped, by name (`ctl stats`, metrics).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counters {
    /// Clients accepted.
    pub accepted: u64,
    /// Clients refused for their credentials (Unix socket).
    pub refused: u64,
    /// Clients refused because [`MAX_CLIENTS`] were connected.
    pub too_many: u64,
    /// Requests answered (unknown ones included).
    pub requests: u64,
    /// Requests for commands that do not exist (answered CMD_UNKNOWN).
    pub unknown_command: u64,
    /// Registrations for events that do not exist (EVENT_UNKNOWN).
    pub unknown_event: u64,
    /// Frames longer than vici's 512 KiB: client dropped.
    pub too_long: u64,
    /// Packets that do not parse: client dropped.
    pub malformed: u64,
    /// Server-only packet types from a client: client dropped.
    pub unexpected: u64,
    /// Clients that did not read their answers: dropped.
    pub slow: u64,
    /// Events sent.
    pub events: u64,
}

impl Counters {
    /// The counters by name, in declaration order.
    pub fn named(&self) -> [(&'static str, u64); 11] {
        [
            ("accepted", self.accepted),
            ("refused", self.refused),
            ("too_many", self.too_many),
            ("requests", self.requests),
            ("unknown_command", self.unknown_command),
            ("unknown_event", self.unknown_event),
            ("too_long", self.too_long),
            ("malformed", self.malformed),
            ("unexpected", self.unexpected),
            ("slow", self.slow),
            ("events", self.events),
        ]
    }
}

/// A client's place, for answering it later.
pub type ClientId = u64;

/// The listener, its clients, and an epoll set of all of them: one
/// descriptor for the control loop's poll.
pub struct Server {
    unix: Option<Control>,
    tcp: Option<TcpListener>,
    epoll: Epoll,
    clients: Vec<(ClientId, Client)>,
    next_id: ClientId,
    /// What was refused or dropped.
    pub counters: Counters,
}

/// A request a client made, for the control plane to answer.
pub struct Request {
    /// Who asked.
    pub client: ClientId,
    /// The command.
    pub command: String,
    /// Its arguments.
    pub message: Section,
}

impl Server {
    /// Listen at `uri`; a Unix socket with the control socket's rules
    /// (mode 0600, or 0660 for `group`, and the peer's credentials
    /// checked).
    pub fn bind(uri: &Uri, group: Option<u32>) -> Result<Server, ControlError> {
        let (unix, tcp) = match uri {
            Uri::Unix(path) => (Some(Control::bind(path, group)?), None),
            Uri::Tcp(addr) => {
                let l = TcpListener::bind(addr)
                    .and_then(|l| l.set_nonblocking(true).map(|()| l))
                    .map_err(|error| ControlError::Io {
                        path: PathBuf::from(uri.to_string()),
                        error,
                    })?;
                (None, Some(l))
            }
        };
        let io_err = |error| ControlError::Io {
            path: PathBuf::from(uri.to_string()),
            error,
        };
        let epoll = Epoll::new().map_err(io_err)?;
        let listener = match (&unix, &tcp) {
            (Some(c), _) => c.listener().as_raw_fd(),
            (_, Some(t)) => t.as_raw_fd(),
            _ => unreachable!("one listener"),
        };
        epoll.add(listener, false).map_err(io_err)?;
        Ok(Server {
            unix,
            tcp,
            epoll,
            clients: Vec::new(),
            next_id: 1,
            counters: Counters::default(),
        })
    }

    /// A server without a socket of its own (`--vici none`, or charon's
    /// path taken): it serves the clients the control socket hands it
    /// ([`Server::adopt`], `flowsec ctl`).
    pub fn unbound() -> io::Result<Server> {
        Ok(Server {
            unix: None,
            tcp: None,
            epoll: Epoll::new()?,
            clients: Vec::new(),
            next_id: 1,
            counters: Counters::default(),
        })
    }

    /// Serve a client that connected elsewhere, its credentials checked
    /// there (the control socket's vici clients).
    pub fn adopt(&mut self, stream: std::os::unix::net::UnixStream) {
        self.add_client(Stream::Unix(stream));
    }

    /// The descriptor the control loop polls: readable when a client
    /// connects, sends, or can take what waits for it.
    pub fn fd(&self) -> RawFd {
        self.epoll.as_raw_fd()
    }

    /// Accept who connects, read every client, and return the requests
    /// that arrived. Registrations are answered here; a client that sent
    /// something malformed is dropped with its counter.
    pub fn serve(&mut self) -> Vec<Request> {
        // Drain the epoll set's readiness: the loop tries every client.
        self.epoll.drain();
        self.accept();
        let mut requests = Vec::new();
        let mut dropped = Vec::new();
        for (id, client) in &mut self.clients {
            let result = client.flush().and_then(|()| client.read_packets());
            let fd = client.stream.as_raw_fd();
            let _ = self.epoll.modify(fd, client.wants_write());
            match result {
                Ok(packets) => {
                    for p in packets {
                        if let Some(r) = take_packet(*id, client, p, &mut self.counters) {
                            requests.push(r);
                        }
                    }
                }
                Err(why) => {
                    count_closed(&mut self.counters, &why);
                    dropped.push(*id);
                }
            }
        }
        self.drop_clients(&dropped);
        requests
    }

    /// Send `client` the answer to its request.
    pub fn respond(&mut self, client: ClientId, message: Section) {
        self.send_to(
            client,
            &Packet {
                ty: PacketType::CmdResponse,
                name: None,
                message: Some(message),
            },
        );
    }

    /// Send `client` event `name` if it registered for it (the events a
    /// command streams before its answer).
    pub fn stream(&mut self, client: ClientId, name: &str, message: Section) {
        let registered = self
            .clients
            .iter()
            .any(|(id, c)| *id == client && c.events.contains(name));
        if registered {
            self.counters.events += 1;
            self.send_to(client, &event(name, message));
        }
    }

    /// Send event `name` to every client registered for it.
    pub fn broadcast(&mut self, name: &str, message: &Section) {
        let ids: Vec<ClientId> = self
            .clients
            .iter()
            .filter(|(_, c)| c.events.contains(name))
            .map(|(id, _)| *id)
            .collect();
        if ids.is_empty() {
            return;
        }
        let packet = event(name, message.clone());
        for id in ids {
            self.counters.events += 1;
            self.send_to(id, &packet);
        }
    }

    /// Whether any client registered for `name`.
    pub fn listens(&self, name: &str) -> bool {
        self.clients.iter().any(|(_, c)| c.events.contains(name))
    }

    /// Whether `client` is still connected.
    pub fn connected(&self, client: ClientId) -> bool {
        self.clients.iter().any(|(id, _)| *id == client)
    }

    fn send_to(&mut self, client: ClientId, packet: &Packet) {
        let Some(i) = self.clients.iter().position(|(id, _)| *id == client) else {
            return;
        };
        let c = &mut self.clients[i].1;
        match c.send(packet) {
            Ok(()) => {
                let fd = c.stream.as_raw_fd();
                let _ = self.epoll.modify(fd, c.wants_write());
            }
            Err(why) => {
                count_closed(&mut self.counters, &why);
                self.drop_clients(&[client]);
            }
        }
    }

    fn accept(&mut self) {
        loop {
            let stream = match (&self.unix, &self.tcp) {
                (Some(c), _) => match c.listener().accept() {
                    Ok((s, _)) => {
                        if c.allowed(&s).is_err() {
                            self.counters.refused += 1;
                            continue;
                        }
                        Stream::Unix(s)
                    }
                    Err(_) => return,
                },
                (_, Some(l)) => match l.accept() {
                    Ok((s, _)) => Stream::Tcp(s),
                    Err(_) => return,
                },
                _ => return,
            };
            self.add_client(stream);
        }
    }

    fn add_client(&mut self, stream: Stream) {
        if self.clients.len() >= MAX_CLIENTS {
            self.counters.too_many += 1;
            return;
        }
        if set_nonblocking(&stream).is_err() {
            return;
        }
        if self.epoll.add(stream.as_raw_fd(), false).is_err() {
            return;
        }
        self.counters.accepted += 1;
        self.clients.push((self.next_id, Client::new(stream)));
        self.next_id += 1;
    }

    fn drop_clients(&mut self, ids: &[ClientId]) {
        for id in ids {
            if let Some(i) = self.clients.iter().position(|(c, _)| c == id) {
                let (_, c) = self.clients.remove(i);
                let _ = self.epoll.remove(c.stream.as_raw_fd());
            }
        }
    }
}

/// A packet from a client: a request for the control plane, or a
/// registration answered here.
fn take_packet(
    id: ClientId,
    client: &mut Client,
    p: Packet,
    counters: &mut Counters,
) -> Option<Request> {
    let name = p.name.unwrap_or_default();
    match p.ty {
        PacketType::CmdRequest => {
            counters.requests += 1;
            Some(Request {
                client: id,
                command: name,
                message: p.message.unwrap_or_default(),
            })
        }
        PacketType::EventRegister | PacketType::EventUnregister => {
            let known = EVENTS.contains(&name.as_str());
            let ty = if known {
                if p.ty == PacketType::EventRegister {
                    client.events.insert(name);
                } else {
                    client.events.remove(&name);
                }
                PacketType::EventConfirm
            } else {
                counters.unknown_event += 1;
                PacketType::EventUnknown
            };
            let _ = client.send(&Packet {
                ty,
                name: None,
                message: None,
            });
            None
        }
        // `Client::read_packets` lets only the three through.
        _ => None,
    }
}

fn count_closed(counters: &mut Counters, why: &Closed) {
    match why {
        Closed::Gone => {}
        Closed::Malformed(ViciError::TooLong(_)) => counters.too_long += 1,
        Closed::Malformed(_) => counters.malformed += 1,
        Closed::Unexpected => counters.unexpected += 1,
        Closed::Slow => counters.slow += 1,
    }
}

/// An EVENT packet.
fn event(name: &str, message: Section) -> Packet {
    Packet {
        ty: PacketType::Event,
        name: Some(name.to_string()),
        message: Some(message),
    }
}

/// The CMD_UNKNOWN answer.
pub fn unknown_command() -> Packet {
    Packet {
        ty: PacketType::CmdUnknown,
        name: None,
        message: None,
    }
}

impl Server {
    /// Answer `client` CMD_UNKNOWN.
    pub fn unknown(&mut self, client: ClientId) {
        self.counters.unknown_command += 1;
        self.send_to(client, &unknown_command());
    }
}

fn set_nonblocking(s: &Stream) -> io::Result<()> {
    match s {
        Stream::Unix(s) => s.set_nonblocking(true),
        Stream::Tcp(s) => s.set_nonblocking(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_charons() {
        assert_eq!(
            Uri::parse(DEFAULT_URI),
            Some(Uri::Unix("/var/run/charon.vici".into()))
        );
        assert_eq!(
            Uri::parse("tcp://127.0.0.1:4502"),
            Some(Uri::Tcp("127.0.0.1:4502".parse().unwrap()))
        );
        assert_eq!(Uri::parse("unix://relative"), None);
        assert_eq!(Uri::parse("tcp://localhost"), None);
        assert_eq!(Uri::parse("/var/run/charon.vici"), None);
        assert_eq!(
            Uri::parse("tcp://[::1]:4502").unwrap().to_string(),
            "tcp://[::1]:4502"
        );
    }
}
