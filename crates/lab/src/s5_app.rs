//! `s5-app` — study S5's application benchmark: a web server behind one
//! tunnel, both directions tunnelled. Real nginx (Debian's) at hostB
//! serves a file from memory (`/dev/shm`), with a worker process per core
//! and 10 requests per keep-alive connection; ApacheBench (`ab`, from
//! apache2-utils) at hostA keeps 256 requests in flight with keep-alive;
//! file sizes 64 B … 16 KB; requests per second for each of flowsec's
//! parallel modes (`flowsec up --parallel default | pcrypt | flow`, the
//! same SAs in all three: see `s5_micro`). The study's 10,000,000 requests per point are
//! scaled to a time per point (`ab -t`).

use std::path::Path;

use crate::bed::Step;
use crate::chart::{Plot, PlotKind, Series};
use crate::progress::Progress;
use crate::report::{Finding, Report, Table};
use crate::s5_micro::{bed, cores, pcrypt_shape, per_size, DEFAULT, FLOW, MODES, PCRYPT};
use crate::{cell, LabError, RunOptions, Scenario};

pub struct S5App;

/// The study's suite.
const SUITE: Step = Step::Esp {
    enc: "aes-cbc",
    auth: Some("hmac-sha1"),
};

const SIZES: [u32; 5] = [64, 256, 1024, 4096, 16384];
const QUICK_SIZES: [u32; 2] = [64, 16384];
/// Requests in flight (the study's `ab -c 256`).
const CONCURRENCY: u32 = 256;

/// One point: requests per second, and requests that failed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Point {
    pub per_s: f64,
    pub failed: u64,
    pub complete: u64,
}

/// `[mode][size]`.
pub(crate) struct Results {
    pub sizes: Vec<u32>,
    pub modes: Vec<Vec<Point>>,
}

/// Where a program is, if installed.
fn find(program: &str) -> Option<String> {
    ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        .iter()
        .map(|d| format!("{d}/{program}"))
        .find(|p| Path::new(p).is_file())
}

/// nginx's configuration: `workers` processes, files from `root`, ten
/// requests per keep-alive connection, everything it writes in `work`.
fn nginx_conf(workers: u32, root: &Path, work: &Path, listen: &str) -> String {
    let w = work.display();
    format!(
        "# flowsec lab s5-app: the study's web server\n\
         worker_processes {workers};\n\
         daemon off;\n\
         user root;\n\
         pid {w}/nginx.pid;\n\
         error_log {w}/nginx-error.log warn;\n\
         events {{ worker_connections 4096; }}\n\
         http {{\n\
         \x20   access_log off;\n\
         \x20   sendfile on;\n\
         \x20   tcp_nopush on;\n\
         \x20   keepalive_requests 10;\n\
         \x20   keepalive_timeout 30s;\n\
         \x20   open_file_cache max=64;\n\
         \x20   default_type application/octet-stream;\n\
         \x20   client_body_temp_path {w}/nginx-body;\n\
         \x20   proxy_temp_path {w}/nginx-proxy;\n\
         \x20   fastcgi_temp_path {w}/nginx-fastcgi;\n\
         \x20   uwsgi_temp_path {w}/nginx-uwsgi;\n\
         \x20   scgi_temp_path {w}/nginx-scgi;\n\
         \x20   server {{\n\
         \x20       listen {listen}:80 backlog=4096 reuseport;\n\
         \x20       root {};\n\
         \x20   }}\n\
         }}\n",
        root.display()
    )
}

/// ab's summary: requests per second, complete and failed requests.
pub(crate) fn parse_ab(out: &str) -> Result<Point, LabError> {
    let value = |key: &'static str| -> Result<f64, LabError> {
        out.lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .ok_or(LabError::Unreadable {
                program: "ab",
                what: key,
            })
    };
    let non_2xx = value("Non-2xx responses:").unwrap_or(0.0);
    Ok(Point {
        per_s: value("Requests per second:")?,
        complete: value("Complete requests:")? as u64,
        failed: (value("Failed requests:")? + non_2xx) as u64,
    })
}

impl Scenario for S5App {
    fn name(&self) -> &'static str {
        "s5-app"
    }

    fn summary(&self) -> &'static str {
        "S5 application benchmark: nginx behind one tunnel, ab -c 256 -k (10 requests per connection), 64 B-16 KB, --parallel default / pcrypt / flow"
    }

    fn needs_root(&self) -> bool {
        true
    }

    fn run(&self, opts: &RunOptions) -> Result<Report, LabError> {
        let missing = |program, package| LabError::Missing {
            scenario: "s5-app",
            program,
            package,
        };
        let nginx = find("nginx").ok_or_else(|| missing("nginx", "nginx"))?;
        let ab = find("ab").ok_or_else(|| missing("ab", "apache2-utils"))?;
        let work = crate::work_dir("s5-app")?;
        // The files, in memory.
        let root = Path::new("/dev/shm").join(format!("flowsec-lab-s5-app-{}", std::process::id()));
        std::fs::create_dir_all(&root).map_err(crate::error::at(&root))?;
        let sizes: Vec<u32> = if opts.quick {
            QUICK_SIZES.to_vec()
        } else {
            SIZES.to_vec()
        };
        for &size in &sizes {
            let file = root.join(format!("f{size}"));
            let body: Vec<u8> = (0..size).map(|i| b'a' + (i % 26) as u8).collect();
            std::fs::write(&file, body).map_err(crate::error::at(&file))?;
        }
        let secs = if opts.quick { "1" } else { "10" };
        let cores = cores();
        let workers = cores.min(8);
        let mut progress = Progress::new("s5-app", MODES.len() * sizes.len());
        let measured = (|| {
            let mut modes = Vec::new();
            for mode in MODES {
                let mut b = bed(SUITE, workers, mode, &work)?;
                let (_, (server, addr)) = b.setup_ends();
                let conf = work.join(format!("nginx-{mode}.conf"));
                std::fs::write(&conf, nginx_conf(cores, &root, &work, addr))
                    .map_err(crate::error::at(&conf))?;
                let pid = work.join("nginx.pid");
                let _ = std::fs::remove_file(&pid);
                let conf_s = conf.to_string_lossy().into_owned();
                let prefix = format!("{}/", work.display());
                b.spawn(
                    server,
                    &[&nginx, "-p", &prefix, "-c", &conf_s],
                    &work.join(format!("nginx-{mode}.log")),
                    None,
                )?;
                wait_for(&pid)?;
                let mut row = Vec::new();
                for &size in &sizes {
                    progress.step(&format!("{mode}, {size} B"));
                    let url = format!("http://{addr}/f{size}");
                    let c = CONCURRENCY.to_string();
                    let out = b.output(
                        "hostA",
                        &[&ab, "-q", "-k", "-c", &c, "-t", secs, "-n", "1000000", &url],
                    )?;
                    row.push(parse_ab(&out)?);
                }
                modes.push(row);
            }
            Ok(modes)
        })();
        progress.finish();
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(&work);
        let r = Results {
            sizes,
            modes: measured?,
        };
        Ok(report(&r, opts, secs, workers, cores))
    }
}

/// Wait (up to 5 s) for nginx to write its pid file: it is listening.
fn wait_for(pid: &Path) -> Result<(), LabError> {
    for _ in 0..100 {
        if pid.is_file() {
            return Ok(());
        }
        crate::topology::check_interrupted()?;
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Err(LabError::NotReady {
        host: "hostB".into(),
        command: "nginx".into(),
        log: format!("no {}", pid.display()),
    })
}

fn report(r: &Results, opts: &RunOptions, secs: &str, workers: u32, cores: u32) -> Report {
    let rows = r
        .sizes
        .iter()
        .enumerate()
        .map(|(i, size)| {
            let base = r.modes[0][i].per_s;
            let mut row = vec![size.to_string()];
            row.extend(r.modes.iter().map(|m| cell(m[i].per_s, base)));
            row.extend(
                r.modes
                    .iter()
                    .map(|m| format!("{}/{}", m[i].failed, m[i].complete)),
            );
            row
        })
        .collect();
    let mut columns = vec!["file (B)".to_string()];
    columns.extend(MODES.iter().map(|m| format!("{m} requests/s")));
    columns.extend(MODES.iter().map(|m| format!("{m} failed/complete")));
    Report {
        tables: vec![Table {
            title: format!(
                "nginx behind one tunnel (AES-128-CBC/HMAC-SHA1), {workers} workers per gateway (× default)"
            ),
            columns,
            rows,
        }],
        findings: findings(r),
        plots: vec![Plot {
            file: "s5-app".into(),
            title: "Web requests through one tunnel by file size".into(),
            kind: PlotKind::Lines,
            x_label: "file size (bytes)".into(),
            y_label: "requests/s (ab -c 256 -k)".into(),
            log_y: false,
            log_x: true,
            markers: Vec::new(),
            series: r
                .modes
                .iter()
                .enumerate()
                .map(|(m, points)| {
                    Series::today(
                        format!("{} mode", MODES[m]),
                        m,
                        r.sizes.iter().zip(points).map(|(s, p)| (f64::from(*s), p.per_s)),
                    )
                })
                .collect(),
            note: "nginx (a worker per core, 10 requests per keep-alive connection, files in /dev/shm) at hostB, ab at hostA. S5 published the ordering only, the micro-benchmark's: pcrypt below the default for small files and above it for large ones, flow-parallel above both.".into(),
        }],
        ..Report::new(
            "s5-app",
            "S5 application benchmark, flow-parallel IPsec tunnels (Linux XFRM, nginx and ab, 2014)",
            opts.quick,
            format!(
                "hostA → gwA ⇒ gwB → hostB in tunnel mode (both directions through the tunnel), AES-128-CBC + HMAC-SHA1 keyed by setkey with a fallback and one per-resource SA per worker each way; each gateway runs `flowsec up --workers {workers} --parallel MODE`. nginx (Debian's, `worker_processes {cores}`, `keepalive_requests 10`, sendfile, `access_log off`, its files in /dev/shm) at hostB; `ab -k -c {CONCURRENCY} -t {secs}` at hostA for each file (the study: 10,000,000 requests per point). {cores} cores are shared by the hosts, nginx, ab and both gateways."
            ),
        )
    }
}

pub(crate) fn findings(r: &Results) -> Vec<Finding> {
    let over = |a: usize, b: usize| -> Vec<f64> {
        (0..r.sizes.len())
            .map(|i| r.modes[a][i].per_s / r.modes[b][i].per_s)
            .collect()
    };
    let list = |ratios: &[f64]| per_size(&r.sizes, ratios);
    let (flow_default, flow_pcrypt) = (over(FLOW, DEFAULT), over(FLOW, PCRYPT));
    let pcrypt_default = over(PCRYPT, DEFAULT);
    let pcrypt_shape = pcrypt_shape(&r.sizes, &pcrypt_default);
    let failed: u64 = r.modes.iter().flatten().map(|p| p.failed).sum();
    vec![
        Finding {
            claim: "the micro-benchmark's ordering holds for a web server: pcrypt loses to the default below 256 B and wins from 512 B".into(),
            holds: pcrypt_shape,
            evidence: format!(
                "pcrypt/default requests/s: {} (holds if below 1 under 256 B and at least 1 from 512 B)",
                list(&pcrypt_default)
            ),
        },
        Finding {
            claim: "flow-parallel serves more requests than the default at every file size".into(),
            holds: flow_default.iter().all(|x| *x >= 1.0),
            evidence: format!("flow/default requests/s: {} (holds if all ≥ 1)", list(&flow_default)),
        },
        Finding {
            claim: "flow-parallel serves more requests than pcrypt at every file size".into(),
            holds: flow_pcrypt.iter().all(|x| *x >= 1.0),
            evidence: format!("flow/pcrypt requests/s: {} (holds if all ≥ 1)", list(&flow_pcrypt)),
        },
        Finding {
            claim: "every request is answered (the tunnel loses none under 256 concurrent clients)".into(),
            holds: failed == 0,
            evidence: format!("{failed} failed or non-2xx requests in all runs (holds if 0)"),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const AB: &str = "\
Server Software:        nginx/1.22.1
Document Length:        64 bytes
Concurrency Level:      256
Time taken for tests:   1.000 seconds
Complete requests:      12345
Failed requests:        2
   (Connect: 0, Receive: 0, Length: 2, Exceptions: 0)
Keep-Alive requests:    11100
Requests per second:    12345.67 [#/sec] (mean)
";

    #[test]
    fn ab_output_is_read() {
        let p = parse_ab(AB).unwrap();
        assert_eq!((p.per_s, p.complete, p.failed), (12345.67, 12345, 2));
        let p = parse_ab(&format!("{AB}Non-2xx responses:      5\n")).unwrap();
        assert_eq!(p.failed, 7);
        assert!(parse_ab("ab: something went wrong").is_err());
    }

    #[test]
    fn verdicts_follow_the_numbers() {
        let p = |per_s, failed| Point {
            per_s,
            failed,
            complete: 1000,
        };
        let r = |flow_small: f64, failed| Results {
            sizes: QUICK_SIZES.to_vec(),
            modes: vec![
                vec![p(100.0, 0), p(50.0, 0)],
                vec![p(90.0, 0), p(55.0, 0)],
                vec![p(flow_small, failed), p(60.0, 0)],
            ],
        };
        let holds = |r: &Results| findings(r).iter().map(|f| f.holds).collect::<Vec<_>>();
        assert_eq!(holds(&r(120.0, 0)), [true, true, true, true]);
        assert_eq!(holds(&r(95.0, 3)), [true, false, true, false]);
        let rep = report(&r(120.0, 0), &RunOptions::new(true), "1", 2, 2);
        assert_eq!(rep.tables[0].rows[0][3], "120 (1.20×)");
    }

    #[test]
    fn nginx_config_names_its_paths() {
        let c = nginx_conf(4, Path::new("/dev/shm/x"), Path::new("/tmp/w"), "10.2.0.2");
        assert!(c.contains("worker_processes 4;"));
        assert!(c.contains("listen 10.2.0.2:80"));
        assert!(c.contains("root /dev/shm/x;"));
        assert!(c.contains("keepalive_requests 10;"));
    }
}
