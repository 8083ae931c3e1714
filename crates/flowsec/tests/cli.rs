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
