//! A blocking vici client (strongSwan's src/libcharon/plugins/vici/
//! README.md): `flowsec ctl` and `flowsec setkey` ask the daemon with it,
//! over the control socket (which speaks vici) or any vici URI.
//! Requests are framed, events streamed before the answer handed to the
//! caller, and an answer may be as long as flowsec's answers are
//! ([`MAX_ANSWER`]).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use flowsec_wire::vici::{frame_len_up_to, Packet, PacketType, Section, LENGTH_LEN, MAX_ANSWER};
use zeroize::Zeroizing;

use crate::ctl::CtlError;

/// Where the daemon listens: a Unix socket path, or a vici URI
/// (`unix:///PATH`, `tcp://ADDR:PORT`).
#[derive(Debug, Clone)]
pub struct Target(pub String);

enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn io(&mut self) -> &mut dyn ReadWrite {
        match self {
            Stream::Unix(s) => s,
            Stream::Tcp(s) => s,
        }
    }

    fn set_read_timeout(&self, t: Option<Duration>) {
        let _ = match self {
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tcp(s) => s.set_read_timeout(t),
        };
    }
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// One connection to a vici server.
pub struct Connection {
    stream: Stream,
    target: Target,
}

impl Connection {
    /// Connect to `target`; answers are waited for at most `wait`
    /// (`None`: as long as the daemon takes).
    pub fn open(target: &Target, wait: Option<Duration>) -> Result<Connection, CtlError> {
        let t = target.0.as_str();
        let connect_err = |error| CtlError::Connect {
            path: t.into(),
            error,
        };
        let stream = match flowsec_daemon::ViciUri::parse(t) {
            Some(flowsec_daemon::ViciUri::Tcp(a)) => {
                Stream::Tcp(TcpStream::connect(a).map_err(connect_err)?)
            }
            Some(flowsec_daemon::ViciUri::Unix(p)) => {
                Stream::Unix(UnixStream::connect(p).map_err(connect_err)?)
            }
            None => Stream::Unix(UnixStream::connect(t).map_err(connect_err)?),
        };
        stream.set_read_timeout(wait);
        Ok(Connection {
            stream,
            target: target.clone(),
        })
    }

    /// Ask for `event`'s packets (answered with a confirmation).
    pub fn register(&mut self, event: &str) -> Result<(), CtlError> {
        self.send(&Packet {
            ty: PacketType::EventRegister,
            name: Some(event.into()),
            message: None,
        })?;
        let p = self.receive()?;
        match p.ty {
            PacketType::EventConfirm => Ok(()),
            PacketType::CmdResponse => Err(refusal(&p)),
            _ => Err(self.bad(&format!("no confirmation of event {event}"))),
        }
    }

    /// Run `command` with `message`; the events registered for before
    /// the answer go to `event`. An answer with charon's `success = no`
    /// is the daemon's error.
    pub fn call(
        &mut self,
        command: &str,
        message: Section,
        event: &mut dyn FnMut(&str, &Section),
    ) -> Result<Section, CtlError> {
        let mut request = Packet {
            ty: PacketType::CmdRequest,
            name: Some(command.into()),
            message: Some(message),
        };
        let sent = self.send(&request);
        // A setkey text holds keys.
        if let Some(m) = request.message.as_mut() {
            flowsec_daemon::wipe_vici(m);
        }
        sent?;
        loop {
            let p = self.receive()?;
            match p.ty {
                PacketType::Event => {
                    let name = p.name.as_deref().unwrap_or_default();
                    event(name, p.message.as_ref().unwrap_or(&Section::default()));
                }
                PacketType::CmdResponse => {
                    let answer = p.message.unwrap_or_default();
                    return match answer.str("success") {
                        Some("no") => Err(CtlError::Daemon {
                            message: answer.str("errmsg").unwrap_or("failed").to_string(),
                        }),
                        _ => Ok(answer),
                    };
                }
                PacketType::CmdUnknown => {
                    return Err(CtlError::Daemon {
                        message: format!(
                            "{}: unknown command {command} (is it flowsec?)",
                            self.target.0
                        ),
                    })
                }
                _ => return Err(self.bad("unexpected packet")),
            }
        }
    }

    fn send(&mut self, packet: &Packet) -> Result<(), CtlError> {
        let bytes = Zeroizing::new(packet.emit().map_err(|e| CtlError::Daemon {
            message: format!("request not sent: {e}"),
        })?);
        let target = &self.target.0;
        self.stream
            .io()
            .write_all(&bytes)
            .map_err(|error| CtlError::Io {
                path: target.into(),
                error,
            })
    }

    fn receive(&mut self) -> Result<Packet, CtlError> {
        let target = self.target.0.clone();
        let io = |error| CtlError::Io {
            path: target.clone().into(),
            error,
        };
        let mut head = [0u8; LENGTH_LEN];
        self.stream.io().read_exact(&mut head).map_err(io)?;
        let n = match frame_len_up_to(&head, MAX_ANSWER) {
            Some(Ok(n)) => n,
            Some(Err(e)) => return Err(self.bad(&e.to_string())),
            None => return Err(self.bad("short frame")),
        };
        let mut body = Zeroizing::new(vec![0u8; n]);
        self.stream.io().read_exact(&mut body).map_err(io)?;
        Packet::parse_up_to(&body, MAX_ANSWER).map_err(|e| self.bad(&e.to_string()))
    }

    fn bad(&self, why: &str) -> CtlError {
        CtlError::BadAnswer {
            path: self.target.0.clone().into(),
            why: why.to_string(),
        }
    }
}

/// A refusal before any request (the control socket's credentials
/// check answers with charon's failure).
fn refusal(p: &Packet) -> CtlError {
    let m = p.message.clone().unwrap_or_default();
    CtlError::Daemon {
        message: m.str("errmsg").unwrap_or("refused").to_string(),
    }
}
