//! The stream thread on loopback, talking to itself or to a test's
//! sockets; the test plays the control thread (`Rig::ike`, `Rig::sink`).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream};

use super::*;
use crate::channels::{IkeIn, IkeQueues, Inbox, Msg};

/// A stream thread on a free loopback port, talking to itself: it
/// originates to its own listener. `None` (the test skips) where the
/// sockets cannot be marked (SO_MARK needs CAP_NET_ADMIN).
struct Rig {
    sink: StreamSink,
    ike: IkeQueues,
    worker: Inbox,
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Rig {
    fn new() -> Option<Rig> {
        let port = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .ok()?
            .local_addr()
            .ok()?
            .port();
        let (sink, parts) = match open(&[port]) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("SKIP: stream thread test: {e} (needs CAP_NET_ADMIN for SO_MARK)");
                return None;
            }
        };
        let (ike_sink, ike) = IkeSink::for_tests();
        let (mailbox, worker, _wake) = Mailbox::new().ok()?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = parts
            .spawn(ike_sink, vec![mailbox], Arc::clone(&stop), Instant::now())
            .ok()?;
        Some(Rig {
            sink,
            ike,
            worker,
            port,
            stop,
            thread: Some(thread),
        })
    }

    fn ends(&self) -> (SocketAddr, SocketAddr) {
        (
            SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 0),
            SocketAddr::new(Ipv4Addr::LOCALHOST.into(), self.port),
        )
    }

    fn counter(&self, name: &str) -> u64 {
        let named = self.sink.counters().named();
        named
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, v)| *v)
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// IKE over the stream it opens, then ESP back to a worker by SPI.
fn round_trip(transport: Transport) {
    let Some(rig) = Rig::new() else { return };
    let (local, remote) = rig.ends();
    let ike = b"an IKE message, not parsed here".to_vec();
    rig.sink.ike(transport, local, remote, ike.clone());
    let got = rig
        .ike
        .recv_timeout(Duration::from_secs(5))
        .expect("IKE arrives");
    let IkeIn::Message {
        transport: t,
        local: l,
        data,
        ..
    } = got
    else {
        panic!("not a message");
    };
    // The accepting side reports its own listening port, and how the
    // stream came (TLS sniffed from the first byte).
    assert_eq!((t, l.port(), data), (transport, rig.port, ike));
    let esp = [0x10, 0, 0, 1, 0, 0, 0, 7, 0xaa, 0xbb];
    let to = UdpEndpoints {
        local,
        remote,
        tos: 0,
    };
    rig.sink.esp(vec![(to, esp.to_vec())]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match rig.worker.msgs.recv_timeout(Duration::from_millis(100)) {
            Ok(Msg::Stream(frames)) => {
                assert_eq!(frames.len(), 1);
                assert_eq!(frames[0].1, esp);
                break;
            }
            Ok(_) => {}
            Err(_) => assert!(Instant::now() < deadline, "ESP never reached the worker"),
        }
    }
    assert_eq!((rig.counter("ike_out"), rig.counter("ike_in")), (1, 1));
    assert_eq!((rig.counter("esp_out"), rig.counter("esp_in")), (1, 1));
    assert_eq!(rig.counter("accepted"), 1);
}

#[test]
fn ike_and_esp_over_tcp() {
    round_trip(Transport::Tcp);
}

#[test]
fn ike_and_esp_over_tls() {
    round_trip(Transport::Tls);
}

#[test]
fn a_wrong_prefix_is_closed_and_counted() {
    let Some(rig) = Rig::new() else { return };
    let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, rig.port)).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut b = [0u8; 1];
    let n = s.read(&mut b).unwrap_or(0);
    assert_eq!(n, 0, "closed by the thread");
    assert_eq!(rig.counter("bad_prefix"), 1);
}

/// A framed IKE message ("IKE" behind the non-ESP marker, RFC 9329 §3).
fn ike_frame(body: &[u8]) -> Vec<u8> {
    let mut f = length_field(NON_ESP_MARKER.len() + body.len())
        .unwrap()
        .to_vec();
    f.extend_from_slice(&NON_ESP_MARKER);
    f.extend_from_slice(body);
    f
}

/// The next IKE message the rig's control side gets: its connection and
/// the names IKE gives its ends.
fn next_message(rig: &Rig) -> (ConnId, SocketAddr, SocketAddr) {
    match rig.ike.recv_timeout(Duration::from_secs(5)) {
        Some(IkeIn::Message {
            conn: Some(id),
            local,
            remote,
            ..
        }) => (id, local, remote),
        _ => panic!("no IKE message from a stream"),
    }
}

/// Read one frame from `s` within `wait`, if one comes.
fn read_frame(s: &mut TcpStream, wait: Duration) -> Option<Vec<u8>> {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut len = [0u8; 2];
    s.read_exact(&mut len).ok()?;
    let mut body = vec![0; usize::from(u16::from_be_bytes(len)) - 2];
    s.read_exact(&mut body).ok()?;
    Some(body)
}

/// Issue 29 item 12: a connection closes and a new one comes from the
/// same address and port (a carrier-grade NAT gives the port to another
/// subscriber). The SA traffic of the old one, found by its endpoints,
/// and the answers to the old one's messages must not go to the new one;
/// answers to the new one's messages do, and once IKE authenticates a
/// message on it, so does the SA traffic.
#[test]
fn a_new_connection_on_a_closed_ones_address_and_port_gets_none_of_its_traffic() {
    let Some(rig) = Rig::new() else { return };
    let listener = SocketAddr::new(Ipv4Addr::LOCALHOST.into(), rig.port);
    // SO_REUSEADDR on both ends of the port's two lives, as a NAT's.
    let any_port = SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 0);
    let mut a = tcp::connect_from(any_port, listener).unwrap();
    let from = a.local_addr().unwrap();
    a.write_all(b"IKETCP").unwrap();
    a.write_all(&ike_frame(b"IKE_AUTH of the first peer"))
        .unwrap();
    let (id_a, local, remote) = next_message(&rig);
    assert_eq!(remote, from);
    // HDR, SK {...} verified, the IKE SA established: the control thread
    // says so; the SA's ESP then goes on that connection.
    rig.sink.authenticated(id_a);
    let ends = UdpEndpoints {
        local,
        remote,
        tos: 0,
    };
    let esp = [0x10, 0, 0, 1, 0, 0, 0, 7, 0xaa, 0xbb];
    rig.sink.esp(vec![(ends, esp.to_vec())]).unwrap();
    assert_eq!(
        read_frame(&mut a, Duration::from_secs(5)),
        Some(esp.to_vec())
    );
    // The first peer's connection is reset; another comes from its port.
    tcp::reset(a).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while rig.counter("closed") == 0 {
        assert!(Instant::now() < deadline, "the reset was not seen");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut b = tcp::connect_from(from, listener).unwrap();
    b.write_all(b"IKETCP").unwrap();
    b.write_all(&ike_frame(b"IKE_SA_INIT of another")).unwrap();
    let (id_b, local_b, remote_b) = next_message(&rig);
    assert_eq!((local_b, remote_b), (local, remote), "the same name");
    assert_ne!(id_b, id_a, "another connection");
    // The old SA's ESP, and a late answer to the first peer: not to b.
    rig.sink.esp(vec![(ends, esp.to_vec())]).unwrap();
    let late = b"an answer to the first peer".to_vec();
    rig.sink.ike_on(id_a, Transport::Tcp, local, remote, late);
    // An answer to b's own message: to b, and the first thing it gets.
    let own = b"an answer to b".to_vec();
    rig.sink
        .ike_on(id_b, Transport::Tcp, local, remote, own.clone());
    let got = read_frame(&mut b, Duration::from_secs(5)).expect("b's answer");
    assert_eq!(&got[NON_ESP_MARKER.len()..], &own[..]);
    assert_eq!(read_frame(&mut b, Duration::from_millis(300)), None);
    assert_eq!(rig.counter("not_authenticated"), 1);
    assert_eq!(rig.counter("no_stream"), 1);
    // Once b's peer authenticates, the traffic for the name is its own.
    rig.sink.authenticated(id_b);
    rig.sink.esp(vec![(ends, esp.to_vec())]).unwrap();
    assert_eq!(
        read_frame(&mut b, Duration::from_secs(5)),
        Some(esp.to_vec())
    );
    assert_eq!(rig.counter("authenticated"), 2);
}

/// Issue 29 item 2: a peer that writes IKE messages and never reads the
/// answers. Before, the thread read on, and every answer stayed queued
/// (up to 5 MiB a connection); now the connection is no longer read once
/// its unread output passes a few KiB: what the peer writes waits in the
/// kernel, under TCP's flow control.
#[test]
fn a_peer_that_never_reads_is_read_no_more() {
    let Some(rig) = Rig::new() else { return };
    let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, rig.port)).unwrap();
    s.write_all(b"IKETCP").unwrap();
    s.set_nonblocking(true).unwrap();
    let frame = ike_frame(&[0x5a; 300]);
    // The test plays the control thread: each message gets an 8 KB answer.
    let mut flood = |until: Instant| {
        while Instant::now() < until {
            for _ in 0..64 {
                if s.write(&frame).is_err() {
                    break;
                }
            }
            while let Some(m) = rig.ike.recv_timeout(Duration::ZERO) {
                if let IkeIn::Message {
                    transport,
                    local,
                    remote,
                    conn: Some(id),
                    ..
                } = m
                {
                    rig.sink.ike_on(id, transport, local, remote, vec![0; 8000]);
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    flood(Instant::now() + Duration::from_secs(3));
    let read = rig.counter("ike_in");
    flood(Instant::now() + Duration::from_secs(1));
    assert_eq!(
        rig.counter("ike_in"),
        read,
        "read on while its answers wait"
    );
    assert!(rig.counter("read_paused") >= 1);
}
