#!/usr/bin/env bash
# Tunnel throughput side by side (issue 3): one TCP stream hostA -> hostB on
# the namespace topology of tests/e2e/lib.sh,
#
#   hostA 10.1.0.2 -- gwA 10.1.0.1 | 192.0.2.1 == transit == 192.0.2.2 | 10.2.0.1 gwB -- hostB 10.2.0.2
#
# through, in one run:
#   1. plain forwarding (no tunnel), with the kernel's GSO on the veths and
#      with `gso_max_segs 1` on every veth (one packet per MSS, as the demo);
#   2. flowsec: two `flowsec up` gateways, ESP tunnel mode, AES-GCM-16,
#      manual keys (release build): raw ESP without and with TUN offloads,
#      with one worker per CPU and with one worker, and ESP in UDP 4500
#      (UDP GSO/GRO, as wireguard-go's UDP);
#   3. wireguard-go on TUN in gwA/gwB (skipped, with a message, when it or
#      `wg` is missing and cannot be installed).
# Each path: SECONDS of traffic, REPEATS times; the table shows the median
# (and min-max) Mbit/s, the CPU time of the two tunnel endpoints' processes
# per GB of payload (utime+stime from /proc/PID/stat, before and after each
# measurement; "kernel" for plain forwarding) and the ratio to plain
# forwarding with GSO off. The tunnel rows run with the kernel's default
# gso_max_segs on the veths.
#
#   scripts/bench-tunnels.sh [--seconds S] [--repeats R] [--json FILE]
#                            [--no-install] [--no-wireguard]
#
# The Markdown table goes to stdout, progress to stderr. Everything it
# creates carries a per-run prefix (fs<pid>-) and is removed on exit, on
# error and on Ctrl-C (tests/e2e/lib.sh's traps; the ping and TCP
# measurements are scripts/lib.sh's, as the demo's). Needs root and `ip
# netns`; prints SKIP and exits 0 otherwise.
#
#   WIREGUARD_GO=PATH   the wireguard-go binary (default: wireguard-go or
#                       wireguard on PATH, else ~/go/bin/wireguard)
#   FLOWSEC_E2E_KEEP=1  keep the work directory (logs, setkey files, JSON)
set -euo pipefail
CALLER_PWD="$PWD"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"

SECS=10
REPEATS=3
JSON_OUT=""
INSTALL=1
WG_ENABLED=1
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) SECS="${2:?--seconds needs a value}"; shift 2 ;;
        --seconds=*) SECS="${1#*=}"; shift ;;
        --repeats) REPEATS="${2:?--repeats needs a value}"; shift 2 ;;
        --repeats=*) REPEATS="${1#*=}"; shift ;;
        --json) JSON_OUT="${2:?--json needs a file}"; shift 2 ;;
        --json=*) JSON_OUT="${1#*=}"; shift ;;
        --no-install) INSTALL=0; shift ;;
        --no-wireguard) WG_ENABLED=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "bench-tunnels: unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
[[ "$SECS" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "bench-tunnels: --seconds: not a number: $SECS" >&2; exit 2; }
[[ "$REPEATS" =~ ^[1-9][0-9]*$ ]] || { echo "bench-tunnels: --repeats: not a positive integer: $REPEATS" >&2; exit 2; }
# a relative --json path is relative to where the script was started
case "$JSON_OUT" in ""|/*) ;; *) JSON_OUT="$CALLER_PWD/$JSON_OUT" ;; esac
[ "$INSTALL" = 1 ] || export FLOWSEC_NO_INSTALL=1

# shellcheck source=tests/e2e/lib.sh
. "$ROOT/tests/e2e/lib.sh"
if ! e2e_have_root_netns; then
    echo "SKIP: bench-tunnels: $E2E_NO_NETNS_REASON"
    exit 0
fi
# stdout is the table's (fd 3 from here on); the stages and measurements
# (scripts/lib.sh's step, say) go to stderr.
exec 3>&1 1>&2

release_flowsec

# ----------------------------------------------------------- wireguard-go
WG_GO=""
WG_SKIP=""
if [ "$WG_ENABLED" = 1 ]; then
    step "wireguard-go and wg"
    if ! wireguard_go >/dev/null && [ -z "${WIREGUARD_GO:-}" ]; then
        install_wireguard_go || log "go install failed (or no go, or --no-install)"
    fi
    WG_GO="$(wireguard_go)" || WG_SKIP="wireguard-go not found and could not be installed (go install golang.zx2c4.com/wireguard@$WIREGUARD_GO_VERSION)"
    if [ -z "$WG_SKIP" ] && ! command -v wg >/dev/null 2>&1; then
        apt_install wireguard-tools || log "apt-get install wireguard-tools failed (or --no-install)"
        command -v wg >/dev/null 2>&1 || WG_SKIP="wg (wireguard-tools) not found and could not be installed"
    fi
    if [ -n "$WG_SKIP" ]; then
        log "SKIP wireguard-go row: $WG_SKIP"
    else
        log "$WG_GO: $("$WG_GO" --version | head -n 1); wg: $(wg --version 2>&1 | head -n 1)"
    fi
else
    WG_SKIP="--no-wireguard"
fi

# --------------------------------------------------------------- harness
e2e_init
W="$E2E_WORK"
WG_IFS=()
bench_cleanup() {
    e2e_cleanup
    local i
    # wireguard-go's UAPI sockets live in /var/run/wireguard, outside the
    # namespaces; a killed daemon leaves its socket behind.
    for i in "${WG_IFS[@]}"; do rm -f "/var/run/wireguard/$i.sock"; done
}
trap 'bench_cleanup 2>&"$E2E_ERR_FD"' EXIT
trap 'log "interrupted" 2>&"$E2E_ERR_FD"; bench_cleanup 2>&"$E2E_ERR_FD"; trap - EXIT; exit 130' INT
trap 'log "terminated" 2>&"$E2E_ERR_FD"; bench_cleanup 2>&"$E2E_ERR_FD"; trap - EXIT; exit 143' TERM

RESULTS="$W/results.txt"   # KEY RUN MBIT BYTES CPU_SECONDS|-
: >"$RESULTS"
measure() {  # measure KEY [PID...]: REPEATS runs of tcp_run, the PIDs' CPU time, into RESULTS
    local key="$1" r
    shift
    for ((r = 1; r <= REPEATS; r++)); do
        tcp_run "$key-$r" "$@"
        echo "$key $r $MBIT $TCP_BYTES $TCP_CPU_S" >>"$RESULTS"
    done
}

# ---------------------------------------------------------------- topology
step "topology: namespaces ${E2E_PREFIX}{hostA,gwA,gwB,hostB}"
e2e_topology_gateway
if command -v ethtool >/dev/null 2>&1; then
    # lib.sh turned the veths' offloads off (belt and braces for its tests);
    # this benchmark wants the kernel's defaults back
    for l in "${E2E_LINKS[@]}"; do
        ns_exec "${l%%:*}" ethtool -K "${l#*:}" tx on rx on tso on gso on gro on >/dev/null 2>&1 || true
    done
fi
SEGS="$(e2e_gso_max_segs)"
SEGS="${SEGS:-65535}"
log "veths: kernel default gso_max_segs $SEGS; ${SECS} s per measurement, $REPEATS runs per path"

# ----------------------------------------------------------- plain forwarding
step "plain forwarding, kernel GSO on the veths"
e2e_standin_routes
pings plain
measure plain-gso

step "plain forwarding, gso_max_segs 1 on every veth (one packet per MSS)"
e2e_gso_max_segs 1
measure plain-nogso
e2e_gso_max_segs "$SEGS"
log "gso_max_segs back to $SEGS for the tunnels"
e2e_standin_routes del

# ------------------------------------------------------------------ flowsec
e2e_need_nft || die "nftables could not be installed (flowsec up needs nft for its plaintext filter)"
run_flowsec() {  # run_flowsec KEY raw|udp [flowsec up options...]
    local key="$1" encap="$2"; shift 2
    e2e_write_gcm_setkeys "$W" bench-tunnels "$encap"
    step "flowsec ($key): two gateways, ESP tunnel mode ($encap), AES-GCM-16, manual keys${*:+, $*}"
    for gw in gwA gwB; do
        daemon_up "$gw" "$W/$key-$gw.log" "$FLOWSEC" up --tun fsec0 --setkey "$W/$gw.setkey" --socket "$W/$gw.sock" "$@" ||
            die "$gw: flowsec up failed"
    done
    pings "$key"
    measure "$key" "${GW_PID[gwA]}" "${GW_PID[gwB]}"
    for gw in gwA gwB; do
        daemon_down "$gw" || true
        say "$gw: $(grep -m1 'flowsec: down' "$W/$key-$gw.log" || echo "(no counters; exit status $E2E_LAST_RC)")"
    done
}
run_flowsec flowsec-nooffload raw --no-offload
run_flowsec flowsec raw
run_flowsec flowsec-1w raw --workers 1
run_flowsec flowsec-udp udp

# ------------------------------------------------------------- wireguard-go
if [ -z "$WG_SKIP" ]; then
    step "wireguard-go: TUN in gwA and gwB, UDP 51820 over the transit link, MTU 1420"
    WGA="${E2E_PREFIX}wgA"
    WGB="${E2E_PREFIX}wgB"
    if [ ${#WGA} -gt 15 ]; then WGA="wg$$A"; WGB="wg$$B"; fi
    mkdir -p /var/run/wireguard
    for i in "$WGA" "$WGB"; do
        [ -e "/var/run/wireguard/$i.sock" ] && die "/var/run/wireguard/$i.sock exists already"
        WG_IFS+=("$i")
    done
    umask_old="$(umask)"; umask 077
    for side in A B; do
        wg genkey >"$W/wg$side.key"
        wg pubkey <"$W/wg$side.key" >"$W/wg$side.pub"
    done
    umask "$umask_old"
    declare -A WG_PID
    start_bg gwA "$W/wireguard-gwA.log" env WG_PROCESS_FOREGROUND=1 LOG_LEVEL=error "$WG_GO" -f "$WGA"
    WG_PID[gwA]=$E2E_LAST_PID
    start_bg gwB "$W/wireguard-gwB.log" env WG_PROCESS_FOREGROUND=1 LOG_LEVEL=error "$WG_GO" -f "$WGB"
    WG_PID[gwB]=$E2E_LAST_PID
    for i in 0 1; do
        gw=gwA; dev="$WGA"; [ "$i" = 1 ] && { gw=gwB; dev="$WGB"; }
        for ((t = 0; t < 100; t++)); do
            [ -S "/var/run/wireguard/$dev.sock" ] && break
            pid_alive "${WG_PID[$gw]}" || break
            sleep 0.1
        done
        [ -S "/var/run/wireguard/$dev.sock" ] || die "$gw: wireguard-go did not create its UAPI socket"
    done
    wg_conf() {  # wg_conf GW DEV SIDE PEER_SIDE PEER_ADDR REMOTE_NET
        ns_exec "$1" wg set "$2" private-key "$W/wg$3.key" listen-port 51820 \
            peer "$(cat "$W/wg$4.pub")" endpoint "$5:51820" allowed-ips "$6"
        ns_exec "$1" ip link set dev "$2" mtu 1420 up
        ns_exec "$1" ip route add "$6" dev "$2"
    }
    wg_conf gwA "$WGA" A B 192.0.2.2 10.2.0.0/24 || die "gwA: configuring $WGA failed"
    wg_conf gwB "$WGB" B A 192.0.2.1 10.1.0.0/24 || die "gwB: configuring $WGB failed"
    pings wireguard-go
    measure wireguard-go "${WG_PID[gwA]}" "${WG_PID[gwB]}"
    say "gwA: $(ns_exec gwA wg show "$WGA" transfer | awk '{printf "received %s B, sent %s B", $2, $3}')"
    for gw in gwA gwB; do stop_bg "${WG_PID[$gw]}" 5; done
fi

# ------------------------------------------------------------------ report
step "results"
MACHINE="$(uname -r); $(nproc) CPUs ($(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1))"
python3 - "$RESULTS" "$SECS" "$REPEATS" "$JSON_OUT" "$WG_SKIP" "$MACHINE" \
    "$("$FLOWSEC" --version 2>/dev/null || echo flowsec)" "$([ -n "$WG_GO" ] && "$WG_GO" --version 2>/dev/null | head -n 1 || true)" >&3 <<'EOF'
import json, statistics, sys, time
results, secs, repeats, json_out, wg_skip, machine, fs_ver, wg_ver = sys.argv[1:9]
runs = {}
for line in open(results):
    key, run, mbit, nbytes, cpu = line.split()
    runs.setdefault(key, []).append((float(mbit), int(nbytes), None if cpu == "-" else float(cpu)))
paths = [("plain-gso", "plain forwarding, kernel GSO"),
         ("plain-nogso", "plain forwarding, GSO off (gso_max_segs 1)"),
         ("flowsec-nooffload", "flowsec, ESP tunnel AES-GCM-16, --no-offload"),
         ("flowsec", "flowsec, ESP tunnel AES-GCM-16 (TUN offloads)"),
         ("flowsec-1w", "flowsec, ESP tunnel AES-GCM-16 (TUN offloads), --workers 1"),
         ("flowsec-udp", "flowsec, ESP-in-UDP tunnel AES-GCM-16 (TUN offloads, UDP GSO/GRO)"),
         ("wireguard-go", "wireguard-go (TUN)")]
base = statistics.median(m for m, _, _ in runs["plain-nogso"]) if "plain-nogso" in runs else None
rows = []
for key, name in paths:
    if key not in runs:
        if key == "wireguard-go":
            rows.append({"key": key, "path": name, "skipped": wg_skip or "not run"})
        continue
    rs = runs[key]
    mb = [m for m, _, _ in rs]
    cpu = [c / (b / 1e9) for _, b, c in rs if c is not None]
    med = statistics.median(mb)
    rows.append({"key": key, "path": name, "mbit_s_runs": mb, "mbit_s_median": med,
                 "mbit_s_min": min(mb), "mbit_s_max": max(mb),
                 "bytes_runs": [b for _, b, _ in rs],
                 "cpu_s_runs": [c for _, _, c in rs] if cpu else None,
                 "cpu_s_per_gb_runs": [round(c, 3) for c in cpu] if cpu else None,
                 "cpu_s_per_gb_median": round(statistics.median(cpu), 3) if cpu else None,
                 "cpu_note": None if cpu else "kernel (not measurable per process)",
                 "ratio_to_plain_gso_off": round(med / base, 3) if base else None})
print("| path | Mbit/s median (min–max) | CPU s/GB | ratio to plain-GSO-off |")
print("|---|---|---|---|")
for r in rows:
    if "skipped" in r:
        print("| %s | skipped: %s | – | – |" % (r["path"], r["skipped"]))
        continue
    cpu = "kernel" if r["cpu_s_per_gb_median"] is None else "%.2f" % r["cpu_s_per_gb_median"]
    print("| %s | %s (%s–%s) | %s | %s |" % (
        r["path"], "{:,.0f}".format(r["mbit_s_median"]), "{:,.0f}".format(r["mbit_s_min"]),
        "{:,.0f}".format(r["mbit_s_max"]), cpu,
        "%.3f" % r["ratio_to_plain_gso_off"] if r["ratio_to_plain_gso_off"] is not None else "–"))
print()
print("One TCP stream hostA → hostB, %s s × %s runs per path (median); CPU s/GB: utime+stime of the "
      "two tunnel endpoints' processes per GB (1e9 B) of TCP payload, median of the runs." % (secs, repeats))
if json_out:
    doc = {"benchmark": "bench-tunnels", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "machine": machine, "seconds": float(secs), "repeats": int(repeats),
           "flowsec": fs_ver, "wireguard_go": wg_ver or None, "rows": rows}
    with open(json_out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
EOF
[ -z "$JSON_OUT" ] || log "JSON written to $JSON_OUT"
bench_cleanup 2>&"$E2E_ERR_FD"
