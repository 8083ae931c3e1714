//! The README's site-to-site example is a configuration flowsec accepts,
//! with the meaning the README gives it.

use flowsec_ike::config::{self, StartAction};

#[test]
fn the_readme_example_parses() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let section = readme
        .split("## IKEv2 with strongSwan")
        .nth(1)
        .expect("README section");
    let block = section.split("```").nth(1).expect("a code block in it");
    let c = config::parse("README.md", block).unwrap_or_else(|e| panic!("{e}"));
    let conn = &c.connections[0];
    assert_eq!(conn.name, "site");
    assert_eq!(conn.children[0].name, "net");
    assert_eq!(conn.children[0].start_action, StartAction::Start);
    assert_eq!(conn.dpd_delay.as_secs(), 30);
    let (me, peer) = (
        conn.local.id.clone().unwrap(),
        conn.remote.id.clone().unwrap(),
    );
    assert!(c.find_psk(&me, &peer).is_some());
}
