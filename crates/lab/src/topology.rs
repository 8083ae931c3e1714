//! The lab's network: hostA — gwA — gwB — hostB in network namespaces
//! (the e2e tests' topology), built with iproute2 and removed on drop, and
//! the processes started in it (killed on drop). Every name carries a
//! per-run prefix (`fl<pid>-`), so nothing else is touched.
//!
//! ```text
//! hostA 10.1.0.2     — 10.1.0.1     gwA 192.0.2.1   ═ 192.0.2.2   gwB 10.2.0.1     — 10.2.0.2     hostB
//!       2001:db8:1::2 — 2001:db8:1::1     2001:db8::1 ═ 2001:db8::2     2001:db8:2::1 — 2001:db8:2::2
//! ```

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{sys, LabError};

/// Let SIGINT and SIGTERM end a lab run cleanly: instead of killing this
/// process (and leaving its namespaces behind), they set a flag; the
/// programs the lab runs get the terminal's SIGINT themselves and end, the
/// step waiting on them fails with "interrupted", and every topology is
/// removed on the way out.
pub fn catch_interrupts() {
    sys::catch_signals(&[libc::SIGINT, libc::SIGTERM]);
}

/// Whether the run was interrupted.
pub fn interrupted() -> bool {
    sys::caught()
}

pub(crate) fn check_interrupted() -> Result<(), LabError> {
    if interrupted() {
        Err(LabError::Interrupted)
    } else {
        Ok(())
    }
}

/// The namespaces, by role.
pub const HOSTS: [&str; 4] = ["hostA", "gwA", "gwB", "hostB"];

/// A built topology; dropping it stops its processes and removes it
/// (unless [`Topology::keep`] handed it over).
pub struct Topology {
    prefix: String,
    children: Vec<Child>,
    kept: bool,
}

/// How to build a [`Topology`]: the lab's (the default), or the one the
/// end-to-end scripts assert on (`flowsec lab net up`).
#[derive(Debug, Clone)]
pub struct Build {
    /// Namespace names are this and the host's (`fl<pid>-gwA`).
    pub prefix: String,
    /// Plain routes between the sites over the transit link (the `none`
    /// implementation; a tunnel's routes take precedence).
    pub site_routes: bool,
    /// What the end-to-end tests want beside: no reverse-path filter on
    /// the gateways (a tunnel's packets come from the TUN), and the veths'
    /// offloads off with ethtool where it is installed (captures count
    /// the segments on the wire).
    pub for_tests: bool,
}

impl Default for Build {
    fn default() -> Self {
        Build {
            prefix: format!("fl{}-", std::process::id()),
            site_routes: true,
            for_tests: false,
        }
    }
}

/// `cmd` could not be started or waited for.
fn spawn_error<'a>(cmd: &'a [&'a str]) -> impl FnOnce(std::io::Error) -> LabError + 'a {
    move |error| LabError::Spawn {
        command: cmd.join(" "),
        error,
    }
}

fn run(args: &[&str]) -> Result<(), LabError> {
    check_interrupted()?;
    run_anyway(args)
}

/// [`run`] also when interrupted (for the clean-up).
fn run_anyway(args: &[&str]) -> Result<(), LabError> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|error| LabError::Spawn {
            command: args.join(" "),
            error,
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(LabError::Failed {
            host: None,
            command: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

impl Topology {
    /// Build it: namespaces, veths, addresses, forwarding, and plain
    /// routes between the sites (the `none` implementation; a tunnel's
    /// routes go into its own table and take precedence).
    pub fn build() -> Result<Topology, LabError> {
        Topology::build_with(&Build::default())
    }

    /// Build it as `how` says.
    pub fn build_with(how: &Build) -> Result<Topology, LabError> {
        let t = Topology {
            prefix: how.prefix.clone(),
            children: Vec::new(),
            kept: false,
        };
        for h in HOSTS {
            run(&["ip", "netns", "add", &t.ns(h)])?;
            t.exec(h, &["ip", "link", "set", "lo", "up"])?;
        }
        t.links()?;
        t.addresses()?;
        t.exec(
            "hostA",
            &["ip", "route", "add", "default", "via", "10.1.0.1"],
        )?;
        t.exec(
            "hostB",
            &["ip", "route", "add", "default", "via", "10.2.0.1"],
        )?;
        for (h, via) in [("hostA", "2001:db8:1::1"), ("hostB", "2001:db8:2::1")] {
            t.exec(h, &["ip", "-6", "route", "add", "default", "via", via])?;
        }
        for gw in ["gwA", "gwB"] {
            t.exec(gw, &["sysctl", "-qw", "net.ipv4.ip_forward=1"])?;
            t.exec(gw, &["sysctl", "-qw", "net.ipv6.conf.all.forwarding=1"])?;
        }
        if how.site_routes {
            t.site_routes()?;
        }
        if how.for_tests {
            t.tune_for_tests()?;
        }
        Ok(t)
    }

    /// hostA - gwA ==transit== gwB - hostB, eth0 towards the sites, eth1
    /// the transit link.
    fn links(&self) -> Result<(), LabError> {
        for (a, ad, b, bd) in [
            ("hostA", "eth0", "gwA", "eth0"),
            ("gwA", "eth1", "gwB", "eth1"),
            ("gwB", "eth0", "hostB", "eth0"),
        ] {
            let (na, nb) = (self.ns(a), self.ns(b));
            run(&[
                "ip", "link", "add", ad, "netns", &na, "type", "veth", "peer", "name", bd, "netns",
                &nb,
            ])?;
            self.exec(a, &["ip", "link", "set", ad, "up"])?;
            self.exec(b, &["ip", "link", "set", bd, "up"])?;
        }
        Ok(())
    }

    /// 10.1.0.0/24 and 2001:db8:1::/64 at site A, 10.2.0.0/24 and
    /// 2001:db8:2::/64 at site B, 192.0.2.0/24 and 2001:db8::/64 between
    /// the gateways (IPv6 without duplicate address detection: usable at
    /// once).
    fn addresses(&self) -> Result<(), LabError> {
        for (h, dev, v4, v6) in [
            ("hostA", "eth0", "10.1.0.2/24", "2001:db8:1::2/64"),
            ("gwA", "eth0", "10.1.0.1/24", "2001:db8:1::1/64"),
            ("gwA", "eth1", "192.0.2.1/24", "2001:db8::1/64"),
            ("gwB", "eth1", "192.0.2.2/24", "2001:db8::2/64"),
            ("gwB", "eth0", "10.2.0.1/24", "2001:db8:2::1/64"),
            ("hostB", "eth0", "10.2.0.2/24", "2001:db8:2::2/64"),
        ] {
            self.exec(h, &["ip", "addr", "add", v4, "dev", dev])?;
            self.exec(h, &["ip", "addr", "add", v6, "dev", dev, "nodad"])?;
        }
        Ok(())
    }

    /// Plain forwarding between the sites over the transit link.
    fn site_routes(&self) -> Result<(), LabError> {
        for (gw, net, via) in [
            ("gwA", "10.2.0.0/24", "192.0.2.2"),
            ("gwB", "10.1.0.0/24", "192.0.2.1"),
        ] {
            self.exec(gw, &["ip", "route", "add", net, "via", via])?;
        }
        for (gw, net, via) in [
            ("gwA", "2001:db8:2::/64", "2001:db8::2"),
            ("gwB", "2001:db8:1::/64", "2001:db8::1"),
        ] {
            self.exec(gw, &["ip", "-6", "route", "add", net, "via", via])?;
        }
        Ok(())
    }

    /// No reverse-path filter on the gateways; offloads off on every veth
    /// (where ethtool is installed).
    fn tune_for_tests(&self) -> Result<(), LabError> {
        for gw in ["gwA", "gwB"] {
            for key in ["all", "default", "eth0", "eth1"] {
                let set = format!("net.ipv4.conf.{key}.rp_filter=0");
                self.exec(gw, &["sysctl", "-qw", &set])?;
            }
        }
        let ethtool = Command::new("ethtool").arg("--version").output().is_ok();
        for (h, dev) in [
            ("hostA", "eth0"),
            ("gwA", "eth0"),
            ("gwA", "eth1"),
            ("gwB", "eth1"),
            ("gwB", "eth0"),
            ("hostB", "eth0"),
        ] {
            if ethtool {
                let off = [
                    "tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off",
                ];
                let mut cmd = vec!["ethtool", "-K", dev];
                cmd.extend(off);
                // Best effort, as ethtool refuses what a veth cannot change.
                let _ = self.exec(h, &cmd);
            }
        }
        Ok(())
    }

    /// Leave the namespaces in place when this is dropped (whoever built
    /// it through `flowsec lab net up` removes them with `lab net down`).
    pub fn keep(mut self) {
        self.kept = true;
    }

    /// Remove the namespaces of a topology built with `prefix`, whatever
    /// built it; those not there are fine.
    pub fn remove(prefix: &str) {
        for h in HOSTS {
            let _ = run_anyway(&["ip", "netns", "del", &format!("{prefix}{h}")]);
        }
    }

    /// The full name of namespace `host`.
    pub fn ns(&self, host: &str) -> String {
        format!("{}{host}", self.prefix)
    }

    /// Run a command in `host` and wait for it.
    pub fn exec(&self, host: &str, cmd: &[&str]) -> Result<(), LabError> {
        let ns = self.ns(host);
        let mut args = vec!["ip", "netns", "exec", ns.as_str()];
        args.extend_from_slice(cmd);
        run(&args)
    }

    /// Run a command in `host` and return its standard output.
    /// An interrupt is passed on to the command (a SIGINT sent to the lab
    /// alone, not to its process group, would otherwise leave the run
    /// waiting for it).
    pub fn output(&self, host: &str, cmd: &[&str]) -> Result<String, LabError> {
        check_interrupted()?;
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.ns(host)])
            .args(cmd)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn_error(cmd))?;
        let read = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut text = Vec::new();
                if let Some(mut p) = pipe {
                    let _ = p.read_to_end(&mut text);
                }
                text
            })
        };
        let stdout = read(child.stdout.take().map(|p| Box::new(p) as _));
        let stderr = read(child.stderr.take().map(|p| Box::new(p) as _));
        let mut passed_on = false;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) => {}
                Err(e) => return Err(spawn_error(cmd)(e)),
            }
            if interrupted() && !passed_on {
                // Not reaped yet (try_wait said so): the pid is the
                // command's (`ip netns exec` execs it).
                signal(child.id(), libc::SIGINT);
                passed_on = true;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let out = std::process::Output {
            status,
            stdout: stdout.join().unwrap_or_default(),
            stderr: stderr.join().unwrap_or_default(),
        };
        check_interrupted()?;
        if !out.status.success() {
            return Err(LabError::Failed {
                host: Some(host.to_string()),
                command: cmd.join(" "),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Start a command in `host` in the background, its stderr to `log`;
    /// when `ready` is given, wait (up to 10 s) for that text in the log.
    pub fn spawn(
        &mut self,
        host: &str,
        cmd: &[&str],
        log: &Path,
        ready: Option<&str>,
    ) -> Result<(), LabError> {
        let file = std::fs::File::create(log).map_err(crate::error::at(log))?;
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns(host)])
            .args(cmd)
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .map_err(spawn_error(cmd))?;
        self.children.push(child);
        if let Some(text) = ready {
            let start = Instant::now();
            loop {
                let seen = std::fs::read_to_string(log).unwrap_or_default();
                if seen.contains(text) {
                    break;
                }
                let exited = self
                    .children
                    .last_mut()
                    .and_then(|c| c.try_wait().ok().flatten());
                check_interrupted()?;
                if exited.is_some() || start.elapsed() > Duration::from_secs(10) {
                    return Err(LabError::NotReady {
                        host: host.to_string(),
                        command: cmd.join(" "),
                        log: seen.trim().to_string(),
                    });
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    }

    /// Stop every background process (SIGTERM, then SIGKILL after 5 s).
    pub fn stop_all(&mut self) {
        for c in &self.children {
            signal(c.id(), libc::SIGTERM);
        }
        let start = Instant::now();
        for c in &mut self.children {
            while c.try_wait().ok().flatten().is_none() {
                if start.elapsed() > Duration::from_secs(5) {
                    let _ = c.kill();
                    let _ = c.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        self.children.clear();
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        self.stop_all();
        if !self.kept {
            Topology::remove(&self.prefix);
        }
    }
}

/// Send `sig` to our child `pid`, which has not been reaped yet (so its
/// pid cannot have been reused).
fn signal(pid: u32, sig: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        sys::kill(pid, sig);
    }
}

/// Whether this process may build topologies.
pub fn can_build() -> bool {
    let root = sys::euid() == 0;
    root && Command::new("ip").arg("-V").output().is_ok()
}
