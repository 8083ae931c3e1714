//! The two-peer harness of the IKE integration tests: two `Ike` cores on
//! one virtual clock, their datagrams carried by hand (with an optional NAT
//! in front of a, and a's TCP connection).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use flowsec_crypto::Provider;
use flowsec_ike::random::SeededRandom;
use flowsec_ike::{config, Datagram, Ike, RecordingKernel, Settings};

pub const A: &str = "192.0.2.1";
pub const B: &str = "192.0.2.2";

/// A site-to-site pair: gwa (10.1.0.0/24) and gwb (10.2.0.0/24).
pub fn conf(
    me: &str,
    peer: &str,
    my_net: &str,
    peer_net: &str,
    extra_conn: &str,
    extra_child: &str,
    secret: &str,
) -> String {
    format!(
        r#"
connections {{
    gw {{
        local_addrs = {me}
        remote_addrs = {peer}
        proposals = aes128gcm16-prfsha256-ecp256
        {extra_conn}
        local {{
            auth = psk
            id = {me}
        }}
        remote {{
            auth = psk
            id = {peer}
        }}
        children {{
            net {{
                local_ts = {my_net}
                remote_ts = {peer_net}
                esp_proposals = aes128gcm16-ecp256
                {extra_child}
            }}
        }}
    }}
}}
secrets {{
    ike-gw {{
        id-a = {A}
        id-b = {B}
        secret = "{secret}"
    }}
}}
"#
    )
}

pub struct Pair {
    pub a: Ike,
    pub b: Ike,
    pub ka: RecordingKernel,
    pub kb: RecordingKernel,
    pub now: Duration,
    /// Datagrams in flight, a → b and b → a.
    pub ab: Vec<Datagram>,
    pub ba: Vec<Datagram>,
    /// A NAT in front of a: its public address, and what it adds to a's
    /// source ports.
    pub nat: Option<(std::net::IpAddr, u16)>,
    /// a's own address behind that NAT (where the NAT sends back to).
    pub a_inside: std::net::IpAddr,
    /// NAT-keepalives a sent.
    pub keepalives: usize,
    /// Over TCP (RFC 9329): the source port of a's current connection (a
    /// is the TCP Originator); what b sends to another port is lost with
    /// the connection it was for.
    pub tcp_port_a: u16,
    /// What both reported, as "a: …" and "b: …" lines, in order.
    pub events: Vec<String>,
}

pub fn ike(text: &str, seed: u64, settings: Settings) -> Ike {
    let config = config::parse("test.conf", text).expect("config");
    Ike::new(
        config,
        Provider::rustcrypto(),
        Box::new(SeededRandom::new(seed)),
        settings,
    )
}

impl Pair {
    pub fn new(a_conf: &str, b_conf: &str) -> Pair {
        Pair::with(a_conf, b_conf, Settings::default(), Settings::default())
    }

    pub fn with(a_conf: &str, b_conf: &str, sa: Settings, sb: Settings) -> Pair {
        Pair::of(ike(a_conf, 1, sa), ike(b_conf, 2, sb))
    }

    /// Two cores made by the caller.
    pub fn of(a: Ike, b: Ike) -> Pair {
        Pair {
            a,
            b,
            ka: RecordingKernel {
                spi_base: 0x100,
                ..Default::default()
            },
            kb: RecordingKernel {
                spi_base: 0x200,
                ..Default::default()
            },
            now: Duration::from_secs(1000),
            ab: Vec::new(),
            ba: Vec::new(),
            nat: None,
            a_inside: A.parse().unwrap(),
            keepalives: 0,
            tcp_port_a: 40000,
            events: Vec::new(),
        }
    }

    pub fn default_pair() -> Pair {
        Pair::new(
            &conf(
                A,
                B,
                "10.1.0.0/24",
                "10.2.0.0/24",
                "",
                "start_action = start",
                "s3cret",
            ),
            &conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "s3cret"),
        )
    }

    /// Collect what both sent.
    pub fn collect(&mut self) {
        for e in self.a.take_events() {
            eprintln!("a: {e}");
            self.events.push(format!("a: {e}"));
        }
        for e in self.b.take_events() {
            eprintln!("b: {e}");
            self.events.push(format!("b: {e}"));
        }
        while let Some(d) = self.a.poll_transmit() {
            self.ab.push(d);
        }
        while let Some(d) = self.b.poll_transmit() {
            self.ba.push(d);
        }
    }

    /// Deliver the oldest datagram a → b.
    pub fn b_gets(&mut self) -> Datagram {
        self.collect();
        assert!(!self.ab.is_empty(), "nothing in flight a -> b");
        let d = self.ab.remove(0);
        if d.is_keepalive() {
            // The data plane drops NAT-keepalives (RFC 3948 §2.3).
            self.keepalives += 1;
            return d;
        }
        // Through the NAT: a's source becomes the public address and port.
        let from = match self.nat {
            _ if d.transport.is_stream() => SocketAddr::new(d.local.ip(), self.tcp_port_a),
            Some((ip, shift)) => SocketAddr::new(ip, d.local.port() + shift),
            None => d.local,
        };
        self.b
            .handle_on(self.now, d.transport, d.remote, from, &d.data, &mut self.kb);
        self.collect();
        d
    }

    /// Deliver the oldest datagram b → a.
    pub fn a_gets(&mut self) -> Datagram {
        self.collect();
        assert!(!self.ba.is_empty(), "nothing in flight b -> a");
        let d = self.ba.remove(0);
        // Back through the NAT, when it still maps that port.
        let to = match self.nat {
            _ if d.transport.is_stream() => {
                if d.remote.port() != self.tcp_port_a {
                    self.collect();
                    return d;
                }
                SocketAddr::new(d.remote.ip(), 0)
            }
            Some((ip, shift)) if d.remote.ip() == ip => match d.remote.port().checked_sub(shift) {
                Some(port) if port == 500 || port == 4500 => SocketAddr::new(self.a_inside, port),
                _ => {
                    self.collect();
                    return d;
                }
            },
            _ => d.remote,
        };
        self.a
            .handle_on(self.now, d.transport, to, d.local, &d.data, &mut self.ka);
        self.collect();
        d
    }

    /// Deliver the oldest datagram each way, if any; `false` when nothing
    /// was in flight (for tests that check something between messages).
    pub fn step(&mut self) -> bool {
        self.collect();
        if self.ab.is_empty() && self.ba.is_empty() {
            return false;
        }
        if !self.ab.is_empty() {
            self.b_gets();
        }
        if !self.ba.is_empty() {
            self.a_gets();
        }
        self.advance(Duration::ZERO);
        true
    }

    /// Every datagram a→b and b→a until the pair goes quiet, in order
    /// (what `settle` delivers, kept for the test to look at).
    pub fn run(&mut self) -> (Vec<Datagram>, Vec<Datagram>) {
        let (mut ab, mut ba) = (Vec::new(), Vec::new());
        for _ in 0..200 {
            self.collect();
            if self.ab.is_empty() && self.ba.is_empty() {
                break;
            }
            if !self.ab.is_empty() {
                ab.push(self.b_gets());
            }
            if !self.ba.is_empty() {
                ba.push(self.a_gets());
            }
        }
        (ab, ba)
    }

    /// Deliver everything in flight, both ways, until quiet; then let the
    /// inbound SAs of replaced Child SAs (kept 5 s for late packets) go.
    pub fn settle(&mut self) {
        for _ in 0..100 {
            self.collect();
            if self.ab.is_empty() && self.ba.is_empty() {
                self.advance(Duration::from_secs(6));
                if self.ab.is_empty() && self.ba.is_empty() {
                    return;
                }
                continue;
            }
            if !self.ab.is_empty() {
                self.b_gets();
            }
            if !self.ba.is_empty() {
                self.a_gets();
            }
        }
        panic!("the peers never went quiet");
    }

    /// Advance the clock and let both run their timers.
    pub fn advance(&mut self, d: Duration) {
        self.now += d;
        self.a.poll(self.now, &mut self.ka);
        self.b.poll(self.now, &mut self.kb);
        self.collect();
    }

    pub fn start(&mut self) {
        self.a.start(self.now, &mut self.ka);
        self.collect();
    }

    /// Both have one established IKE SA and the Child SAs agree: a's
    /// outbound SA is b's inbound one, with the same keys, and back.
    pub fn assert_up(&self, children: usize) {
        let (la, lb) = (self.a.list(self.now), self.b.list(self.now));
        let est =
            |l: &[flowsec_ike::IkeSaInfo]| l.iter().filter(|s| s.state == "ESTABLISHED").count();
        assert_eq!((est(&la), est(&lb)), (1, 1), "a: {la:#?}\nb: {lb:#?}");
        let ca: Vec<_> = la.iter().flat_map(|s| s.children.iter()).collect();
        let cb: Vec<_> = lb.iter().flat_map(|s| s.children.iter()).collect();
        assert_eq!(
            (ca.len(), cb.len()),
            (children, children),
            "a: {la:#?}\nb: {lb:#?}"
        );
        assert_eq!(
            (self.ka.sas.len(), self.kb.sas.len()),
            (2 * children, 2 * children)
        );
        for c in &ca {
            let out_a = self.ka.sa(c.sa_out.spi).expect("a's outbound SA installed");
            let in_b = self
                .kb
                .sa(c.sa_out.spi)
                .expect("b's inbound SA with a's outbound SPI");
            assert_eq!(*out_a.encr_key, *in_b.encr_key);
            if self.nat.is_none() {
                assert_eq!((out_a.src, out_a.dst), (in_b.src, in_b.dst));
            }
            let in_a = self.ka.sa(c.sa_in.spi).expect("a's inbound SA");
            let out_b = self.kb.sa(c.sa_in.spi).expect("b's outbound SA");
            assert_eq!(*in_a.encr_key, *out_b.encr_key);
            assert_ne!(
                *in_a.encr_key, *out_a.encr_key,
                "each direction has its own key"
            );
        }
    }
}

/// The exchange type in a datagram's IKE header.
pub fn exchange(d: &Datagram) -> flowsec_wire::iana::ExchangeType {
    flowsec_wire::iana::ExchangeType(d.data[18])
}

/// The strongSwan-made test PKI (tests/data/pki).
pub fn fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pki")
}

/// A core loaded from a swanctl directory made for it: `files`
/// (fixture, subdirectory) copied in, `conf` as swanctl.conf.
pub fn loaded(tag: &str, conf: &str, files: &[(&str, &str)], seed: u64) -> Ike {
    Ike::new(
        loaded_config(tag, conf, files),
        Provider::rustcrypto(),
        Box::new(SeededRandom::new(seed)),
        Settings::default(),
    )
}

/// The configuration [`loaded`] runs (for a reload).
pub fn loaded_config(tag: &str, conf: &str, files: &[(&str, &str)]) -> config::Config {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir =
        std::env::temp_dir().join(format!("flowsec-ike-test-{}-{tag}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (file, sub) in files {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        std::fs::copy(fixtures().join(file), dir.join(sub).join(file)).unwrap();
    }
    std::fs::write(dir.join("swanctl.conf"), conf).unwrap();
    let config = config::load(&Provider::rustcrypto(), &dir.join("swanctl.conf"))
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::remove_dir_all(&dir).unwrap();
    config
}
