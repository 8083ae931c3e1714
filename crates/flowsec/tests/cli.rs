//! The `flowsec` binary as a user runs it.

use std::process::Command;

fn flowsec(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_flowsec"))
        .args(args)
        .output()
        .expect("run flowsec")
}

#[test]
fn speed_json_reports_every_cell_and_the_raw_rows() {
    let out = flowsec(&[
        "speed",
        "aes128gcm16",
        "3des-md5",
        "ah-sha1",
        "--json",
        "-s",
        "0.01",
        "--sizes",
        "64,1420",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rows = v["rows"].as_array().unwrap();
    for suite in ["aes128gcm16", "3des-md5", "ah-sha1"] {
        for op in ["seal", "open"] {
            for size in [64, 1420] {
                let row = rows
                    .iter()
                    .find(|r| r["suite"] == suite && r["op"] == op && r["size"] == size)
                    .unwrap_or_else(|| panic!("{suite} {op} {size} missing"));
                assert!(row["mb_per_s"].as_f64().unwrap() > 0.0);
            }
        }
    }
    assert!(rows.iter().any(|r| r["suite"] == "raw aes128gcm16"));
    assert!(rows
        .iter()
        .any(|r| r["suite"] == "sha1" && r["size"] == 1500));
    // RFC 8221: 3DES is SHOULD NOT and HMAC-MD5 MUST NOT; marked as such.
    let des = rows.iter().find(|r| r["suite"] == "3des-md5").unwrap();
    assert!(des["warning"].as_str().unwrap().contains("MUST NOT"));
    assert_eq!(v["summary"].as_array().unwrap().len(), 2);
}

#[test]
fn speed_rejects_unknown_suites_with_usage_exit_code() {
    let out = flowsec(&["speed", "aes128-sha3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sha3"));
    let out = flowsec(&["speed", "--backend", "openssl"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn aws_lc_backend_skips_what_it_lacks() {
    let out = flowsec(&[
        "speed",
        "--backend",
        "aws-lc",
        "aes128gcm16",
        "-s",
        "0.01",
        "--sizes",
        "64",
        "--no-s4",
    ]);
    assert!(out.status.success());
    let out = flowsec(&[
        "speed",
        "--backend",
        "aws-lc",
        "twofish128-sha1",
        "-s",
        "0.01",
        "--sizes",
        "64",
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a named suite the backend lacks is an error"
    );
}

#[test]
fn setkey_check_only_validates_a_file_and_names_the_error_position() {
    let dir = std::env::temp_dir().join(format!("flowsec-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("s1.conf");
    std::fs::write(
        &good,
        "# study S1\n\
         add 192.0.2.1 192.0.2.2 ah 0x1001 -A hmac-sha1 0x0102030405060708091011121314151617181920;\n\
         add 192.0.2.1 192.0.2.2 esp 0x1002 -E aes-gcm-16 0x0102030405060708091011121314151617181920;\n\
         spdadd 192.0.2.1 192.0.2.2 any -P out ipsec esp/transport//require ah/transport//require;\n",
    )
    .unwrap();
    let out = flowsec(&["setkey", "-n", "-f", good.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dump = String::from_utf8_lossy(&out.stdout);
    assert!(dump.contains("esp mode=transport spi=4098"), "{dump}");
    assert!(!dump.contains("0102030405"), "keys are never printed");
    let bad = dir.join("bad.conf");
    std::fs::write(
        &bad,
        "add 192.0.2.1 192.0.2.2 esp 0x1002\n    -E 3des-cbd 0x00;\n",
    )
    .unwrap();
    let out = flowsec(&["setkey", "-n", "-f", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.conf:2:8:") && err.contains("3des-cbd"),
        "{err}"
    );
    // Without -n it goes to the daemon; without one, flowsec says so.
    let sock = dir.join("none.sock");
    let out = flowsec(&[
        "setkey",
        "-f",
        good.to_str().unwrap(),
        "--socket",
        sock.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is `flowsec up` running?"));
    // Usage errors exit 2.
    for args in [
        &["setkey", "-D", "-F"][..],
        &["setkey", "-P"],
        &["setkey"],
        &["setkey", "-n", "-D"],
    ] {
        assert_eq!(flowsec(args).status.code(), Some(2), "{args:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ctl_without_a_daemon_says_so() {
    let out = flowsec(&["ctl", "status", "--socket", "/nonexistent/flowsec.sock"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is `flowsec up` running?"));
    let out = flowsec(&["ctl", "bogus"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "unknown question is a usage error"
    );
}

#[test]
fn perf_client_and_server_talk_netperf() {
    // A server on a free port of 127.0.0.1, in the background.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_flowsec"))
        .args([
            "perf",
            "server",
            "--bind",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Ready when it says so (its first line on stderr).
    let mut banner = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(server.stderr.take().unwrap()),
        &mut banner,
    )
    .unwrap();
    assert!(banner.contains("listening"), "{banner}");
    let p = port.to_string();
    let out = flowsec(&[
        "perf",
        "client",
        "-H",
        "127.0.0.1",
        "-p",
        &p,
        "-t",
        "tcp_rr",
        "-l",
        "0.3",
        "-r",
        "32,64",
        "--json",
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["test"], "TCP_RR");
    assert!(v["transactions"].as_u64().unwrap() > 0);
    for bad in [
        &["perf", "client", "-H", "127.0.0.1", "-t", "TCP_MAERTS"][..],
        &[
            "perf",
            "client",
            "-H",
            "127.0.0.1",
            "-t",
            "CBR",
            "--rate",
            "fast",
        ],
        &[
            "perf",
            "client",
            "-H",
            "127.0.0.1",
            "-t",
            "TCP_RR",
            "-r",
            "x",
        ],
    ] {
        assert_eq!(flowsec(bad).status.code(), Some(2), "{bad:?}");
    }
}

#[test]
fn setkey_check_only_checks_what_the_daemon_would() {
    let dir = std::env::temp_dir().join(format!("flowsec-cli-n-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("dup.conf");
    // Parses fine; the daemon would refuse line 2 (an SPI that exists) and
    // line 3 (deleting an SA that does not).
    let sa = "add 192.0.2.1 192.0.2.2 esp 0x1001 -E aes-gcm-16 0x0102030405060708091011121314151617181920;";
    for (text, line) in [
        (format!("{sa}\n{sa}\n"), "dup.conf:2:1:"),
        (
            format!("{sa}\ndelete 192.0.2.1 192.0.2.2 esp 0x2002;\n"),
            "dup.conf:2:1:",
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        let out = flowsec(&["setkey", "-n", "-f", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(line), "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn up_refuses_a_bad_ike_configuration_naming_file_line_and_key() {
    let dir = std::env::temp_dir().join(format!("flowsec-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("swanctl.conf");
    std::fs::write(
        &conf,
        "connections {\n  gw {\n    remote_addrs = 192.0.2.2\n    local { auth = psk }\n    remote { auth = psk }\n    children {\n      net {\n        esp_proposals = aes129gcm16\n      }\n    }\n  }\n}\n",
    )
    .unwrap();
    let out = flowsec(&[
        "up",
        "-c",
        conf.to_str().unwrap(),
        "--socket",
        dir.join("s").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("swanctl.conf:8:"), "{err}");
    assert!(
        err.contains("connections.gw.children.net.esp_proposals"),
        "{err}"
    );
    assert!(err.contains("aes129gcm16"), "{err}");
    // Neither keys nor IKE: the service's default file, named when it
    // cannot be read.
    if !std::path::Path::new("/etc/flowsec/swanctl.conf").exists() {
        let out = flowsec(&["up", "--socket", dir.join("s").to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("/etc/flowsec/swanctl.conf: No such file"),
            "{err}"
        );
    }
    // ctl initiate names what to initiate.
    let out = flowsec(&[
        "ctl",
        "initiate",
        "--socket",
        dir.join("s").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `flowsec ctl` speaks vici: against a stand-in server that answers
/// `flowsec-stats` with a typed answer and refuses `initiate` as charon
/// does, it prints the counters, the JSON shape scripts read, and the
/// daemon's error with exit 1.
#[test]
fn ctl_is_a_vici_client() {
    use flowsec_daemon::answers::{Counters, StatsAnswer, WorkerCounters};
    use flowsec_wire::vici::{Packet, PacketType, Section};
    use std::io::{Read, Write};
    use std::os::unix::net::UnixListener;

    let dir = std::env::temp_dir().join(format!("flowsec-cli-vici-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ctl.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let stats = StatsAnswer {
        total: WorkerCounters {
            counters: Counters(vec![("sent".into(), 7), ("delivered".into(), 5)]),
            drops: Counters(vec![("replay".into(), 2)]),
        },
        ike: Some(Counters(vec![("ike_sas".into(), 1)])),
        ..Default::default()
    };
    let answer = flowsec_daemon::to_vici(&stats).unwrap();
    let server = std::thread::spawn(move || {
        let mut asked = Vec::new();
        for _ in 0..3 {
            let (mut s, _) = listener.accept().unwrap();
            loop {
                let mut head = [0u8; 4];
                if s.read_exact(&mut head).is_err() {
                    break;
                }
                let mut body = vec![0u8; u32::from_be_bytes(head) as usize];
                s.read_exact(&mut body).unwrap();
                let p = Packet::parse(&body).unwrap();
                let (ty, message) = match (p.ty, p.name.as_deref()) {
                    (PacketType::EventRegister, _) => (PacketType::EventConfirm, None),
                    (PacketType::CmdRequest, Some("flowsec-stats")) => {
                        (PacketType::CmdResponse, Some(answer.clone()))
                    }
                    (_, name) => {
                        asked.push(name.unwrap_or_default().to_string());
                        let no = Section::default()
                            .with("success", "no")
                            .with("errmsg", "no config named 'nope'");
                        (PacketType::CmdResponse, Some(no))
                    }
                };
                let reply = Packet {
                    ty,
                    name: None,
                    message,
                };
                s.write_all(&reply.emit().unwrap()).unwrap();
            }
        }
        asked
    });
    let sock = path.to_str().unwrap();
    let out = flowsec(&["ctl", "stats", "--socket", sock]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("total: sent=7 delivered=5 replay=2"),
        "{text}"
    );
    assert!(text.contains("ike: ike_sas=1"), "{text}");
    let out = flowsec(&["ctl", "stats", "--json", "--socket", sock]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["total"]["sent"], 7);
    assert_eq!(v["total"]["drops"]["replay"], 2);
    assert!(v.get("tcp").is_none(), "{v}");
    let out = flowsec(&["ctl", "initiate", "--child", "nope", "--socket", sock]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no config named 'nope'"), "{err}");
    assert_eq!(server.join().unwrap(), ["initiate"]);
    let _ = std::fs::remove_dir_all(&dir);
}
