//! Staging setkey input: all or nothing, errors placed, keys kept out of
//! the model, and what the workers get of it.

use super::*;
use crate::datapath::Databases;

const CAPS: Capabilities = Capabilities {
    udp4: true,
    udp6: true,
};

fn stage_text(model: &Model, text: &str) -> Result<Staged, ConfigError> {
    stage(
        model,
        "t.conf",
        text,
        &Provider::rustcrypto(),
        CAPS,
        Duration::ZERO,
    )
}

const TWO: &str =
    "add 192.0.2.1 192.0.2.2 esp 0x1001 -E aes-gcm-16 0x0102030405060708091011121314151617181920;
add 192.0.2.2 192.0.2.1 esp 0x1002 -E aes-gcm-16 0x1102030405060708091011121314151617181920;
spdadd 10.1.0.0/16 10.2.0.0/16 any -P out ipsec esp/tunnel/192.0.2.1-192.0.2.2/require;
";

/// A counter-nonce SA under the key of another, in the same file or
/// already installed, is refused by name (its IVs would repeat the
/// other's); once that SA is gone the key may come back (a re-keyed
/// file that deletes first). CBC keys are not compared (random IVs).
#[test]
fn a_key_used_twice_with_counter_nonces_is_refused() {
    let again = "add 192.0.2.1 192.0.2.2 esp 0x1003 -E aes-gcm-16 0x0102030405060708091011121314151617181920;";
    let staged = stage_text(&Model::default(), TWO).unwrap();
    let e = stage_text(&staged.model, again).unwrap_err().to_string();
    assert!(
        e.contains("t.conf:1:") && e.contains("reuses the key of SA esp SPI 0x00001001"),
        "{e}"
    );
    let both = format!("{TWO}{again}");
    let e = stage_text(&Model::default(), &both)
        .unwrap_err()
        .to_string();
    assert!(e.contains("t.conf:4:"), "{e}");
    let replaced = format!("delete 192.0.2.1 192.0.2.2 esp 0x1001;\n{again}");
    stage_text(&staged.model, &replaced).unwrap();
    let cbc = |spi: u32| {
        format!("add 192.0.2.1 192.0.2.2 esp {spi:#x} -E aes-cbc 0x000102030405060708090a0b0c0d0e0f -A hmac-sha1 0x0001020304050607080910111213141516171819;\n")
    };
    stage_text(&Model::default(), &(cbc(0x2001) + &cbc(0x2002))).unwrap();
}

/// What a reload compares: the same SA gives the same fingerprint;
/// another key, reqid, lifetime or TFC padding another one.
#[test]
fn a_fingerprint_sees_every_field_and_the_keys() {
    let sa = |text: &str| match &stage_text(&Model::default(), text).unwrap().changes[0] {
        Change::AddSa(c) => fingerprint(c),
        other => panic!("{other:?}"),
    };
    let head = "add 192.0.2.1 192.0.2.2 esp 0x1001 -m tunnel";
    let algs = "-E aes-cbc 0x000102030405060708090a0b0c0d0e0f -A hmac-sha1 0x0001020304050607080910111213141516171819";
    let fp = sa(&format!("{head} {algs};"));
    assert_eq!(fp, sa(&format!("{head} {algs};")));
    let other_key = algs.replace("1819", "1810");
    for changed in [
        format!("{head} {other_key};"),
        format!("{head} -u 7 {algs};"),
        format!("{head} -lh 100 {algs};"),
        format!("{head} -r 64 {algs};"),
    ] {
        assert_ne!(sa(&changed), fp, "{changed}");
    }
}

#[test]
fn a_file_becomes_changes_and_the_model_keeps_no_keys() {
    let staged = stage_text(&Model::default(), TWO).unwrap();
    assert_eq!(staged.model.sas.len(), 2);
    assert_eq!(staged.model.spd.len(), 1);
    assert!(staged.model.sas.values().all(|c| c.encr_key.is_empty()));
    assert!(matches!(
        staged.changes[..],
        [Change::AddSa(_), Change::AddSa(_), Change::Spd(_)]
    ));
    let lists = per_worker(&staged.changes, 3, &Provider::rustcrypto(), Duration::ZERO).unwrap();
    assert_eq!(lists.len(), 3);
    let mut db = Databases::default();
    db.apply(lists.into_iter().next().unwrap());
    assert_eq!((db.sad.len(), db.spd.len()), (2, 1));
}

#[test]
fn an_error_anywhere_applies_nothing_and_names_the_place() {
    let model = stage_text(&Model::default(), TWO).unwrap().model;
    // The second statement collides with an SA already there.
    let text = "add 192.0.2.1 192.0.2.2 esp 0x2001 -E aes-gcm-16 0x2102030405060708091011121314151617181920;\n\
                add 192.0.2.1 192.0.2.2 esp 0x1001 -E aes-gcm-16 0x0102030405060708091011121314151617181920;\n";
    let e = stage_text(&model, text).unwrap_err().to_string();
    assert!(e.starts_with("t.conf:2:1: SA"), "{e}");
    assert!(e.contains("already exists"), "{e}");
    // An overlapping policy, a missing SA.
    let e = stage_text(&model, "spdadd 10.1.0.0/16 10.2.0.0/16 any -P out none;")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("t.conf:1:1:"), "{e}");
    let e = stage_text(&model, "flush;\ndelete 192.0.2.1 192.0.2.2 esp 0x1001;")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("t.conf:2:1: no SA"), "{e}");
    // The model passed in is untouched by all of this.
    assert_eq!(model.sas.len(), 2);
}

#[test]
fn errors_are_matchable_with_their_position() {
    let model = stage_text(&Model::default(), TWO).unwrap().model;
    let e = stage_text(&model, "\n  delete 192.0.2.1 192.0.2.2 esp 0x7777;").unwrap_err();
    match &e {
        ConfigError::Statement {
            file,
            line: 2,
            column: 3,
            problem: StatementError::NoSa(id),
        } => {
            assert_eq!(file, "t.conf");
            assert_eq!(id.spi, 0x7777);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        e.to_string(),
        "t.conf:2:3: no SA esp SPI 0x00007777 to 192.0.2.2"
    );
    let e = stage_text(&model, "spdadd 10.1.0.0/16 10.2.0.0/16 any -P out none;").unwrap_err();
    assert!(
        matches!(
            e,
            ConfigError::Statement {
                line: 1,
                problem: StatementError::Spd(_),
                ..
            }
        ),
        "{e:?}"
    );
    let e = stage_text(
        &model,
        "add 192.0.2.1 192.0.2.2 esp 0x1001 -E aes-gcm-16 0x01;",
    )
    .unwrap_err();
    assert!(matches!(e, ConfigError::Setkey(_)), "{e:?}");
    assert!(e.to_string().starts_with("t.conf:1:"), "{e}");
}

#[test]
fn flushes_deletes_and_queries() {
    let model = stage_text(&Model::default(), TWO).unwrap().model;
    let s = stage_text(
        &model,
        "dump; flush esp; spdflush; spddump; get 192.0.2.1 192.0.2.2 esp 0x1001;",
    );
    let e = s.unwrap_err().to_string();
    assert!(e.contains("no SA"), "get after flush: {e}");
    let s = stage_text(
        &model,
        "dump esp; deleteall 192.0.2.1 192.0.2.2 esp; spdflush; spddump;",
    )
    .unwrap();
    assert_eq!(s.model.sas.len(), 1);
    assert!(s.model.spd.is_empty());
    assert_eq!(
        s.queries,
        vec![Query::Dump(Some(Protocol::Esp)), Query::SpdDump]
    );
    assert!(matches!(
        s.changes[..],
        [Change::RemoveSa(_), Change::Spd(_)]
    ));
}

/// A manual AES-GCM SA gets its recorded sequence range right after it
/// is added; a CBC one does not; no replay window is warned about.
#[test]
fn counter_nonce_sas_get_recorded_sequence_numbers() {
    let dir = std::env::temp_dir().join(format!("flowsec-apply-seq-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let text = "add 192.0.2.1 192.0.2.2 esp 0x1001 -E aes-gcm-16 0x0102030405060708091011121314151617181920;\n\
                add 192.0.2.1 192.0.2.2 esp 0x1002 -r 64 -E aes-cbc 0x01020304050607080910111213141516 -A hmac-sha1 0x0102030405060708091011121314151617181920;";
    let staged = stage_text(&Model::default(), text).unwrap();
    assert_eq!(staged.warnings.len(), 1, "{:?}", staged.warnings);
    assert!(staged.warnings[0].starts_with("t.conf:1: 0x1001: no replay window"));
    let (changes, state) = reserve_sequences(staged.changes, &None, &dir).unwrap();
    assert!(state.is_some_and(|s| !s.is_empty()));
    assert!(matches!(
        changes[..],
        [Change::AddSa(_), Change::Seq(_, r), Change::AddSa(_)] if r.from == 0 && r.ceiling > 0
    ));
    let lists = per_worker(&changes, 1, &Provider::rustcrypto(), Duration::ZERO).unwrap();
    let mut db = Databases::default();
    db.apply(lists.into_iter().next().unwrap());
    let gcm = db.sad.iter().find(|sa| sa.id().spi == 0x1001).unwrap();
    assert_eq!(gcm.seq_ceiling(), crate::seqstate::RESERVE);
    // No state directory to be had: refused, naming why.
    let e = reserve_sequences(
        stage_text(&Model::default(), text).unwrap().changes,
        &None,
        std::path::Path::new("/proc/no-such-flowsec"),
    )
    .unwrap_err();
    assert!(matches!(e, ConfigError::StateDir(_)), "{e:?}");
    assert!(
        e.to_string().starts_with("state directory (--state-dir) "),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn udp_encapsulation_needs_the_port() {
    let text = "add 192.0.2.1[4500] 192.0.2.2[4500] esp-udp 0x1001 -E aes-gcm-16 0x0102030405060708091011121314151617181920;";
    let caps = Capabilities {
        udp4: false,
        udp6: true,
    };
    let e = stage(
        &Model::default(),
        "u",
        text,
        &Provider::rustcrypto(),
        caps,
        Duration::ZERO,
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            ConfigError::Statement {
                problem: StatementError::NoUdp { ipv6: false },
                ..
            }
        ),
        "{e:?}"
    );
    let e = e.to_string();
    assert_eq!(
        e,
        "u:1:1: UDP port 4500 over IPv4 could not be opened at start (in use?): no ESP in UDP"
    );
    assert!(stage_text(&Model::default(), text).is_ok());
}
