//! `include` and section references (templates): what they add, and the
//! errors naming the included file and its line.

use std::path::{Path, PathBuf};

use super::*;

/// A fresh directory under the system's temporary one, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("flowsec-include-{}-{tag}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn parse(&self, main: &str) -> Result<Config, ConfigError> {
        let path = self.0.join(main);
        parse(
            &path.display().to_string(),
            &std::fs::read_to_string(&path).unwrap(),
        )
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn conn(name: &str, remote: &str) -> String {
    format!(
        "{name} {{\n remote_addrs = {remote}\n local {{ auth = psk }}\n remote {{ auth = psk }}\n}}\n"
    )
}

fn shown(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn glob_include_in_a_section_adds_to_it() {
    let d = TempDir::new("glob");
    d.write(
        "swanctl.conf",
        "connections {\n include conf.d/*.conf\n}\ninclude secrets.conf\n",
    );
    d.write("conf.d/b.conf", &conn("b", "10.0.0.2"));
    d.write("conf.d/a.conf", &conn("a", "10.0.0.1"));
    d.write("conf.d/a.conf.bak", "not a config {");
    d.write("conf.d/.hidden.conf", "not a config {");
    d.write("secrets.conf", "secrets { ike-1 { secret = abc } }\n");
    let c = d.parse("swanctl.conf").unwrap();
    let names: Vec<_> = c.connections.iter().map(|c| c.name.as_str()).collect();
    // glob(3) order.
    assert_eq!(names, ["a", "b"]);
    assert_eq!(c.secrets.len(), 1);
}

#[test]
fn glob_matching_nothing_includes_nothing() {
    let d = TempDir::new("empty");
    d.write(
        "swanctl.conf",
        "include conf.d/*.conf\ninclude none/*/x.conf\n",
    );
    assert!(d.parse("swanctl.conf").unwrap().connections.is_empty());
}

#[test]
fn nested_includes_relative_to_the_including_file() {
    let d = TempDir::new("nested");
    d.write("swanctl.conf", "include sub/one.conf\n");
    d.write(
        "sub/one.conf",
        "connections {\n include deeper/two.conf\n}\n",
    );
    d.write("sub/deeper/two.conf", &conn("gw", "192.0.2.1"));
    let c = d.parse("swanctl.conf").unwrap();
    assert_eq!(c.connections[0].name, "gw");
    // An absolute path, quoted, with a space in it.
    let abs = d.write("with space.conf", &conn("x", "192.0.2.9"));
    d.write(
        "abs.conf",
        &format!(
            "connections {{\n include \"{}\"  # comment\n}}\n",
            shown(&abs)
        ),
    );
    assert_eq!(d.parse("abs.conf").unwrap().connections[0].name, "x");
}

#[test]
fn errors_in_included_files_name_them() {
    let d = TempDir::new("errors");
    d.write("swanctl.conf", "connections {\n include conf.d/*.conf\n}\n");
    let bad = d.write(
        "conf.d/gw.conf",
        "gw {\n remote_addrs = 10.0.0.1\n local {\n auth = psk\n }\n remote { auth = psk }\n proposals = aes128-nonsense\n}\n",
    );
    let e = d.parse("swanctl.conf").unwrap_err();
    assert_eq!(e.file, shown(&bad));
    assert_eq!((e.line, e.key.as_str()), (7, "connections.gw.proposals"));
    // A syntax error in the included file.
    d.write("conf.d/gw.conf", "gw {\n local {\n");
    let e = d.parse("swanctl.conf").unwrap_err();
    assert_eq!(e.file, shown(&bad));
    assert!(e.kind.to_string().contains("not closed"), "{e}");
    // A key given in the main file and again in the included one.
    d.write("dup.conf", "a {\n x = 1\n include dup2.conf\n}\n");
    let dup2 = d.write("dup2.conf", "\nx = 2\n");
    let e = d.parse("dup.conf").unwrap_err();
    assert_eq!((e.file.as_str(), e.line), (shown(&dup2).as_str(), 2));
    assert_eq!(e.key, "a.x");
}

#[test]
fn include_refusals_name_the_include_line() {
    let d = TempDir::new("refuse");
    let main = d.write(
        "swanctl.conf",
        "\nconnections {\n include missing.conf\n}\n",
    );
    let e = d.parse("swanctl.conf").unwrap_err();
    assert_eq!((e.file.as_str(), e.line), (shown(&main).as_str(), 3));
    assert!(
        matches!(&e.kind, ConfigErrorKind::IncludeRead(p, _) if p.ends_with("missing.conf")),
        "{e}"
    );
    // A directory is not a file.
    std::fs::create_dir_all(d.0.join("dir.conf")).unwrap();
    d.write("d.conf", "include dir.conf\n");
    assert!(matches!(
        d.parse("d.conf").unwrap_err().kind,
        ConfigErrorKind::IncludeNotFile(_)
    ));
    d.write("e.conf", "include \"\"\n");
    assert!(matches!(
        d.parse("e.conf").unwrap_err().kind,
        ConfigErrorKind::IncludeEmpty
    ));
}

#[test]
fn include_loops_and_depth_are_refused() {
    let d = TempDir::new("loop");
    d.write("a.conf", "include b.conf\n");
    let b = d.write("b.conf", "\n\ninclude *.conf\n");
    let e = d.parse("a.conf").unwrap_err();
    assert_eq!((e.file.as_str(), e.line), (shown(&b).as_str(), 3));
    assert!(matches!(e.kind, ConfigErrorKind::IncludeLoop(_)), "{e}");
    // A chain deeper than the limit, without a loop.
    let n = include::MAX_INCLUDE_DEPTH + 1;
    for i in 0..n {
        d.write(
            &format!("chain{i}.cf"),
            &format!("include chain{}.cf\n", i + 1),
        );
    }
    d.write(&format!("chain{n}.cf"), "");
    let e = d.parse("chain0.cf").unwrap_err();
    assert!(matches!(e.kind, ConfigErrorKind::IncludeTooDeep), "{e}");
    assert_eq!(e.line, 1);
}

#[test]
fn templates_inherit_and_override() {
    // strongswan.conf(5), REFERENCING OTHER SECTIONS.
    let text = "conn-defaults {\n remote_addrs = 10.0.0.1\n proposals = aes128-sha256-modp2048\n \
                local { auth = psk\n id = moon }\n remote { auth = psk }\n}\n\
                child-defaults {\n local_ts = 10.1.0.0/16\n mode = transport\n}\n\
                connections {\n a : conn-defaults {\n proposals = aes256-sha384-ecp384\n \
                local { id = sun }\n children {\n net : child-defaults {\n mode =\n }\n }\n }\n \
                c : connections.a {\n remote_addrs = 10.0.0.3\n }\n}\n";
    let c = parse("t", text).unwrap();
    let a = c.connection("a").unwrap();
    assert_eq!(a.remote_host(), Some("10.0.0.1".parse().unwrap()));
    assert_eq!(
        a.proposals,
        parse_ike_proposals("aes256-sha384-ecp384").unwrap()
    );
    assert_eq!(a.local.id, Some(Identity::parse("sun").unwrap()));
    assert_eq!(a.local.auth, AuthKind::Psk);
    let net = &a.children[0];
    assert_eq!(net.local_ts, vec![TsSpec::parse("10.1.0.0/16").unwrap()]);
    // `mode =` clears the inherited value back to the default.
    assert_eq!(net.mode, flowsec_ipsec::Mode::Tunnel);
    // c inherits what a inherits, children included.
    let cc = c.connection("c").unwrap();
    assert_eq!(cc.remote_host(), Some("10.0.0.3".parse().unwrap()));
    assert_eq!(cc.proposals, a.proposals);
    assert_eq!(cc.children[0].local_ts, net.local_ts);
    // The templates at the top are not sections of their own.
    assert_eq!(c.connections.len(), 2);
}

#[test]
fn several_references_left_one_wins() {
    let text = "x { remote_addrs = 10.0.0.1\n local { auth = psk } }\n\
                y { remote_addrs = 10.0.0.2\n remote { auth = psk } }\n\
                connections { gw : x, y { } }\n";
    let c = parse("t", text).unwrap();
    assert_eq!(
        c.connections[0].remote_host(),
        Some("10.0.0.1".parse().unwrap())
    );
}

#[test]
fn template_errors_name_file_and_line() {
    let e = parse("f.conf", "connections {\n gw : nowhere { }\n}\n").unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (2, "connections.gw"));
    assert!(matches!(&e.kind, ConfigErrorKind::UnknownReference(n) if n == "nowhere"));
    let e = parse("f.conf", "a : b { }\nb : a { }\nconnections { }\n").unwrap_err();
    assert!(matches!(e.kind, ConfigErrorKind::ReferenceLoop(_)), "{e}");
    let e = parse(
        "f.conf",
        "connections {\n gw {\n  x : connections.gw { }\n }\n}",
    )
    .unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (3, "connections.gw.x"));
    assert!(matches!(e.kind, ConfigErrorKind::ReferenceLoop(_)), "{e}");
    // A bad value inherited from a template names the template's line.
    let e = parse(
        "f.conf",
        "t {\n proposals = nonsense\n}\nconnections {\n gw : t {\n local { auth = psk }\n remote { auth = psk }\n }\n}\n",
    )
    .unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (2, "connections.gw.proposals"));
    // An unreferenced unknown top-level section is still refused.
    let e = parse("f.conf", "t { }\nconnections { }\n").unwrap_err();
    assert!(matches!(e.kind, ConfigErrorKind::UnknownSection));
}

#[test]
fn templates_from_included_files() {
    let d = TempDir::new("tmpl");
    d.write(
        "swanctl.conf",
        "connections {\n gw : defaults { }\n}\ninclude defaults.conf\n",
    );
    let inc = d.write(
        "defaults.conf",
        "defaults {\n remote_addrs = 10.0.0.1\n local { auth = psk }\n remote { auth = bogus }\n}\n",
    );
    let e = d.parse("swanctl.conf").unwrap_err();
    assert_eq!((e.file.as_str(), e.line), (shown(&inc).as_str(), 4));
    assert_eq!(e.key, "connections.gw.remote.auth");
}
