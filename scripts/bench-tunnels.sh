#!/usr/bin/env bash
# Tunnel performance side by side (issues 3 and 17) on the namespace
# topology of tests/e2e/lib.sh,
#
#   hostA 10.1.0.2 -- gwA 10.1.0.1 | 192.0.2.1 == transit == 192.0.2.2 | 10.2.0.1 gwB -- hostB 10.2.0.2
#
# Paths (--paths, comma-separated; default all), in this order:
#   plain-gso          plain forwarding (no tunnel), the kernel's GSO on the veths
#   plain-nogso        plain forwarding, gso_max_segs 1 on every veth (one packet per MSS)
#   flowsec-nooffload  two `flowsec up` gateways, ESP tunnel mode, AES-GCM-16,
#   flowsec            manual keys (release build): raw ESP without and with
#   flowsec-1w         TUN offloads, with one worker per CPU and with one
#   flowsec-udp        worker, and ESP in UDP 4500 (UDP GSO/GRO)
#   flowsec-rawrx      raw ESP as `flowsec`, received by a raw socket per
#                      worker (--esp-receive raw) instead of the fanout group
#   flowsec-link       raw ESP as `flowsec`, sent straight to the neighbor
#                      (--esp-send link) instead of through IP output
#   flowsec-rawio      both (--esp-receive raw --esp-send raw): raw ESP's
#                      sockets as they were before issue 34
#   wireguard-go       wireguard-go on TUN in gwA/gwB, MTU 1420 (wg-quick's
#                      default), with its own offloads (TUN vnet_hdr, UDP
#                      GSO/GRO), as its users run it; skipped, with a
#                      message, when it or `wg` is missing and cannot be installed
# Tests on each path (--tests, comma-separated; default all), hostA -> hostB,
# with Debian's iperf3 and sockperf beside our own `flowsec perf`:
#   perf     flowsec perf TCP_STREAM, one connection: Mbit/s
#   tcp1     iperf3, one TCP stream: Mbit/s, and the CPU time of the two
#            tunnel endpoints' processes per GB received (utime+stime from
#            /proc/PID/stat; "kernel" for plain forwarding)
#   tcp4     iperf3 -P 4: Mbit/s
#   udp64    iperf3 -u -l 64 -b 0 (as fast as the sender can): packets/s
#            received, the loss, and where it happened: the hops' kernel
#            counters (interface drops, UDP buffer errors, IP discards) and
#            flowsec's own drop counters, before and after
#   udprr    sockperf ping-pong, UDP, 64 B, one transaction in flight:
#            transactions/s and the half round trip
#   tcprr    the same over TCP
# Each test: SECONDS of traffic, REPEATS times; the tables show medians, and
# the ratios issue 17 sets goals for.
#
#   scripts/bench-tunnels.sh [--seconds S] [--repeats R] [--json FILE]
#                            [--paths LIST] [--tests LIST] [--policies N]
#                            [--workers LIST] [--no-install] [--no-wireguard]
#
# --workers LIST (e.g. 1,2,4,8): after the paths above, flowsec raw ESP and
# ESP in UDP once per worker count (rows flowsec-wN, flowsec-udp-wN; and
# flowsec-rawrx-wN when flowsec-rawrx is among the paths): how one tunnel
# scales with the gateways' workers.
#
# --policies N: each flowsec gateway's setkey file gets N more outbound
# and N more forward DISCARD policies (to and from 10.100.0.0/16 host
# addresses) in front of the tunnel's own: the SPD of a gateway with many
# peers, which every lookup scans before it reaches the tunnel's policy.
#
# The Markdown tables go to stdout, progress to stderr. Everything it
# creates carries a per-run prefix (fs<pid>-) and is removed on exit, on
# error and on Ctrl-C (tests/e2e/lib.sh's traps). Needs root and `ip
# netns`; prints SKIP and exits 0 otherwise. Installs iperf3, sockperf,
# nftables, ethtool (apt) and wireguard-go (go install) where missing.
#
#   FLOWSEC_BIN=PATH    the flowsec binary to measure (default: build the
#                       release binary of this tree)
#   WIREGUARD_GO=PATH   the wireguard-go binary (default: wireguard-go or
#                       wireguard on PATH, else ~/go/bin/wireguard)
#   FLOWSEC_E2E_KEEP=1  keep the work directory (logs, setkey files, results)
set -euo pipefail
CALLER_PWD="$PWD"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"

SECS=10
REPEATS=3
JSON_OUT=""
INSTALL=1
WG_ENABLED=1
ALL_PATHS=plain-gso,plain-nogso,flowsec-nooffload,flowsec,flowsec-1w,flowsec-udp,flowsec-rawrx,flowsec-link,flowsec-rawio,wireguard-go
ALL_TESTS=perf,tcp1,tcp4,udp64,udprr,tcprr
PATHS=$ALL_PATHS
TESTS=$ALL_TESTS
POLICIES=0
WORKERS_SWEEP=""
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) SECS="${2:?--seconds needs a value}"; shift 2 ;;
        --seconds=*) SECS="${1#*=}"; shift ;;
        --repeats) REPEATS="${2:?--repeats needs a value}"; shift 2 ;;
        --repeats=*) REPEATS="${1#*=}"; shift ;;
        --json) JSON_OUT="${2:?--json needs a file}"; shift 2 ;;
        --json=*) JSON_OUT="${1#*=}"; shift ;;
        --paths) PATHS="${2:?--paths needs a list}"; shift 2 ;;
        --paths=*) PATHS="${1#*=}"; shift ;;
        --tests) TESTS="${2:?--tests needs a list}"; shift 2 ;;
        --tests=*) TESTS="${1#*=}"; shift ;;
        --workers) WORKERS_SWEEP="${2:?--workers needs a list}"; shift 2 ;;
        --workers=*) WORKERS_SWEEP="${1#*=}"; shift ;;
        --policies) POLICIES="${2:?--policies needs a number}"; shift 2 ;;
        --policies=*) POLICIES="${1#*=}"; shift ;;
        --no-install) INSTALL=0; shift ;;
        --no-wireguard) WG_ENABLED=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "bench-tunnels: unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
[[ "$SECS" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "bench-tunnels: --seconds: not a number: $SECS" >&2; exit 2; }
[[ "$POLICIES" =~ ^[0-9]+$ ]] && [ "$POLICIES" -le 65000 ] || { echo "bench-tunnels: --policies: not a number up to 65000: $POLICIES" >&2; exit 2; }
[[ "$REPEATS" =~ ^[1-9][0-9]*$ ]] || { echo "bench-tunnels: --repeats: not a positive integer: $REPEATS" >&2; exit 2; }
in_list() { [[ ",$2," == *",$1,"* ]]; }  # in_list WORD LIST
for w in ${PATHS//,/ }; do in_list "$w" "$ALL_PATHS" || { echo "bench-tunnels: --paths: unknown path: $w (one of $ALL_PATHS)" >&2; exit 2; }; done
for w in ${TESTS//,/ }; do in_list "$w" "$ALL_TESTS" || { echo "bench-tunnels: --tests: unknown test: $w (one of $ALL_TESTS)" >&2; exit 2; }; done
in_list wireguard-go "$PATHS" || WG_ENABLED=0
for w in ${WORKERS_SWEEP//,/ }; do
    [[ "$w" =~ ^[1-9][0-9]*$ ]] || { echo "bench-tunnels: --workers: not a positive integer: $w" >&2; exit 2; }
done
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

if [ -n "${FLOWSEC_BIN:-}" ]; then
    # relative to where the script was started, as --json
    case "$FLOWSEC_BIN" in /*) FLOWSEC="$FLOWSEC_BIN" ;; *) FLOWSEC="$CALLER_PWD/$FLOWSEC_BIN" ;; esac
    [ -x "$FLOWSEC" ] || die "FLOWSEC_BIN=$FLOWSEC: not an executable"
    log "measuring $FLOWSEC (FLOWSEC_BIN)"
else
    release_flowsec
fi

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

# ----------------------------------------------------------------- tools
step "traffic tools: iperf3, sockperf"
for t in iperf3 sockperf; do
    command -v "$t" >/dev/null 2>&1 || apt_install "$t" || die "$t is missing and could not be installed"
done
log "$(iperf3 --version | head -n 1); $(sockperf --version 2>&1 | grep -m1 -o 'version [^ ]*')"

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

# One JSON object per measurement: {"path", "test", "run", and the figures}.
RESULTS="$W/results.jsonl"
: >"$RESULTS"
record() {  # record PATH TEST RUN JSON_FIELDS: a line of RESULTS
    printf '{"path": "%s", "test": "%s", "run": %s, %s}\n' "$1" "$2" "$3" "$4" >>"$RESULTS"
}

# The counters that say where 64-byte datagrams were lost: every
# namespace's /proc/net/snmp and interface statistics, and each flowsec
# gateway's counters. snapshot DIR [CTL_SOCKET_gwA CTL_SOCKET_gwB]
snapshot() {
    local dir="$1" n
    mkdir -p "$dir"
    for n in hostA gwA gwB hostB; do
        ns_exec "$n" cat /proc/net/snmp >"$dir/$n.snmp"
        ns_exec "$n" cat /proc/net/snmp6 >"$dir/$n.snmp6" 2>/dev/null || : >"$dir/$n.snmp6"
        ns_exec "$n" ip -s -j link show >"$dir/$n.link"
    done
    if [ $# -ge 3 ]; then
        "$FLOWSEC" ctl --socket "$2" --json stats >"$dir/gwA.flowsec" 2>/dev/null || true
        "$FLOWSEC" ctl --socket "$3" --json stats >"$dir/gwB.flowsec" 2>/dev/null || true
    fi
}
# Where the counters moved: "gwA:fsec0 tx_dropped 1234, hostB:Udp RcvbufErrors 56, ..."
lost_where() {  # lost_where BEFORE_DIR AFTER_DIR
    python3 - "$1" "$2" <<'EOF'
import json, os, sys
before, after = sys.argv[1:3]
def snmp(path):
    out, lines = {}, open(path).read().split("\n")
    for names, values in zip(lines[0::2], lines[1::2]):
        if not names:
            continue
        proto, names = names.split(":", 1)
        for k, v in zip(names.split(), values.split(":", 1)[1].split()):
            out["%s %s" % (proto, k)] = int(v)
    return out
def snmp6(path):
    return {k: int(v) for k, v in (l.split() for l in open(path) if l.strip())}
def link(path):
    out = {}
    for i in json.load(open(path)):
        st = i.get("stats64", i.get("stats", {}))
        for d in ("rx", "tx"):
            for k in ("dropped", "errors", "missed", "over_errors", "fifo_errors"):
                if k in st.get(d, {}):
                    out["%s %s_%s" % (i["ifname"], d, k)] = st[d][k]
    return out
def flowsec(path):
    try:
        t = json.load(open(path))["total"]
    except (OSError, ValueError, KeyError):
        return {}
    out = {"flowsec drop " + k: v for k, v in t.get("drops", {}).items()}
    for k in ("send_eagain", "no_outbound_sa", "unsupported_outer"):
        if k in t:
            out["flowsec " + k] = t[k]
    return out
DROPPY = ("Discards", "Errors", "Drops", "dropped", "errors", "missed", "fifo", "flowsec")
moved = []
for n in ("hostA", "gwA", "gwB", "hostB"):
    for suffix, parse in ((".snmp", snmp), (".snmp6", snmp6), (".link", link), (".flowsec", flowsec)):
        a, b = os.path.join(before, n + suffix), os.path.join(after, n + suffix)
        if not (os.path.exists(a) and os.path.exists(b)):
            continue
        x, y = parse(a), parse(b)
        for k in sorted(y):
            d = y[k] - x.get(k, 0)
            if d > 0 and any(w in k for w in DROPPY) and "InCsumErrors" not in k:
                moved.append("%s:%s %d" % (n, k, d))
print(json.dumps(", ".join(moved) or "nowhere counted"))
EOF
}

# The two gateways' worker wake-ups (flowsec's `wakeups` counter), summed;
# "-" without control sockets. wakeups [CTL_SOCKET...]
wakeups() {
    [ $# -gt 0 ] || { echo -; return; }
    local sock n total=0
    for sock in "$@"; do
        n="$("$FLOWSEC" ctl --socket "$sock" --json stats 2>/dev/null |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["total"]["wakeups"])')" || { echo -; return; }
        total=$((total + n))
    done
    echo "$total"
}

IPERF_PORT=5201
SP_UDP=11111
SP_TCP=11112
PERF_PORT=12865
servers() {  # the servers in hostB, for the whole run
    start_bg hostB "$W/iperf3-server.log" iperf3 -s -p "$IPERF_PORT"
    start_bg hostB "$W/sockperf-udp.log" sockperf server -i 10.2.0.2 -p "$SP_UDP"
    start_bg hostB "$W/sockperf-tcp.log" sockperf server --tcp -i 10.2.0.2 -p "$SP_TCP"
    start_bg hostB "$W/perf-server.log" "$FLOWSEC" perf server --bind 10.2.0.2 -p "$PERF_PORT"
    sleep 0.5
}

# iperf3 in hostA; its JSON in $W/iperf-NAME.json. iperf NAME ARGS...
iperf() {
    local name="$1"; shift
    ns_exec hostA timeout "$(( ${SECS%.*} + 30 ))" iperf3 -c 10.2.0.2 -p "$IPERF_PORT" -t "$SECS" -J "$@" \
        >"$W/iperf-$name.json" 2>"$W/iperf-$name.err" ||
        { show_log "$W/iperf-$name.json" 5; show_log "$W/iperf-$name.err" 5; die "$name: iperf3 $* failed"; }
}
# sockperf ping-pong in hostA: prints "TRANSACTIONS_PER_S HALF_RTT_US
# TRANSACTIONS" (the last: the whole run's, warm-up included)
sockperf_rr() {  # sockperf_rr NAME udp|tcp
    local name="$1" port="$SP_UDP" tcp=()
    [ "$2" = tcp ] && { port="$SP_TCP"; tcp=(--tcp); }
    ns_exec hostA timeout "$(( ${SECS%.*} + 30 ))" sockperf ping-pong "${tcp[@]}" -i 10.2.0.2 -p "$port" -m 64 -t "$SECS" \
        >"$W/sockperf-$name.log" 2>&1 || { show_log "$W/sockperf-$name.log" 10; die "$name: sockperf ping-pong failed"; }
    python3 - "$W/sockperf-$name.log" <<'EOF' || die "$name: no result in sockperf's output"
import re, sys
t = re.sub(r"\x1b\[[0-9;]*m", "", open(sys.argv[1]).read())
run = re.search(r"\[Valid Duration\] RunTime=([0-9.]+) sec; SentMessages=\d+; ReceivedMessages=(\d+)", t)
lat = re.search(r"avg-latency=([0-9.]+)", t)
total = re.search(r"\[Total Run\] RunTime=[0-9.]+ sec; Warm up time=\d+ msec; SentMessages=\d+; ReceivedMessages=(\d+)", t)
print(int(run.group(2)) / float(run.group(1)), lat.group(1), total.group(1))
EOF
}

# suite PATH [PID...]: the selected tests, REPEATS times, on the path now set
# up; the PIDs are the tunnel endpoints' processes (their CPU time is taken
# around tcp1); SUITE_CTL: the gateways' control sockets for udp64's counters.
suite() {
    local path="$1" r c0 c1 cpu v
    shift
    for ((r = 1; r <= REPEATS; r++)); do
        if in_list perf "$TESTS"; then
            ns_exec hostA "$FLOWSEC" perf client -H 10.2.0.2 -p "$PERF_PORT" -t TCP_STREAM -l "$SECS" --json \
                >"$W/perf-$path-$r.json" 2>"$W/perf-$path-$r.err" || { show_log "$W/perf-$path-$r.err"; die "$path: flowsec perf failed"; }
            v="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["throughput_mbit_s"])' "$W/perf-$path-$r.json")" ||
                die "$path: no throughput in flowsec perf's JSON"
            record "$path" perf "$r" "\"mbit_s\": $v"
            say "$path perf TCP_STREAM: $v Mbit/s"
        fi
        if in_list tcp1 "$TESTS"; then
            cpu=null
            [ $# -gt 0 ] && { c0="$(cpu_ticks "$@")" || die "$path: a tunnel process is gone"; }
            iperf "$path-tcp1-$r"
            if [ $# -gt 0 ]; then
                c1="$(cpu_ticks "$@")" || die "$path: a tunnel process died during the measurement"
                cpu="$(python3 -c "print(($c1 - $c0) / $(getconf CLK_TCK))")"
            fi
            v="$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["end"]["sum_received"]; print(e["bits_per_second"]/1e6, e["bytes"])' "$W/iperf-$path-tcp1-$r.json")"
            record "$path" tcp1 "$r" "\"mbit_s\": ${v% *}, \"bytes\": ${v#* }, \"cpu_s\": $cpu"
            say "$path iperf3 TCP 1 stream: ${v% *} Mbit/s$([ "$cpu" = null ] || echo ", endpoints' CPU $cpu s")"
        fi
        if in_list tcp4 "$TESTS"; then
            iperf "$path-tcp4-$r" -P 4
            v="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]/1e6)' "$W/iperf-$path-tcp4-$r.json")"
            record "$path" tcp4 "$r" "\"mbit_s\": $v"
            say "$path iperf3 TCP 4 streams: $v Mbit/s"
        fi
        if in_list udp64 "$TESTS"; then
            snapshot "$W/snap-$path-$r-0" "${SUITE_CTL[@]}"
            iperf "$path-udp64-$r" -u -l 64 -b 0
            sleep 0.5  # the tail of the flood through the queues
            snapshot "$W/snap-$path-$r-1" "${SUITE_CTL[@]}"
            v="$(python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))["end"]
s, r = e["sum_sent"], e["sum_received"]
got = r["bytes"] // 64
print(got / r["seconds"], s["packets"] / s["seconds"], 100.0 * (s["packets"] - got) / max(s["packets"], 1))' "$W/iperf-$path-udp64-$r.json")"
            read -r rcvd sent lost <<<"$v"
            record "$path" udp64 "$r" "\"rcvd_pps\": $rcvd, \"sent_pps\": $sent, \"lost_pct\": $lost, \"lost_where\": $(lost_where "$W/snap-$path-$r-0" "$W/snap-$path-$r-1")"
            say "$path iperf3 UDP 64 B: sent $(printf '%.0f' "$sent")/s, received $(printf '%.0f' "$rcvd")/s ($(printf '%.1f' "$lost")% lost)"
        fi
        for proto in udp tcp; do
            in_list "${proto}rr" "$TESTS" || continue
            w0="$(wakeups "${SUITE_CTL[@]}")"
            read -r tps half total <<<"$(sockperf_rr "$path-${proto}rr-$r" "$proto")"
            w1="$(wakeups "${SUITE_CTL[@]}")"
            per=null
            [ "$w0" = - ] || [ "$w1" = - ] || per="$(python3 -c "print(round(($w1 - $w0) / max($total, 1), 2))")"
            record "$path" "${proto}rr" "$r" "\"tps\": $tps, \"half_rtt_us\": $half, \"wakeups_per_transaction\": $per"
            say "$path sockperf ${proto^^} ping-pong 64 B: $(printf '%.0f' "$tps") transactions/s, ½RTT $half µs$(
                [ "$per" = null ] || echo ", $per worker wake-ups per transaction (both gateways)")"
        done
    done
}

# ---------------------------------------------------------------- topology
step "topology: namespaces ${E2E_PREFIX}{hostA,gwA,gwB,hostB}"
e2e_topology_gateway
if command -v ethtool >/dev/null 2>&1 || apt_install ethtool; then
    # lib.sh turned the veths' offloads off (belt and braces for its tests);
    # this benchmark wants the kernel's defaults back
    for l in "${E2E_LINKS[@]}"; do
        ns_exec "${l%%:*}" ethtool -K "${l#*:}" tx on rx on tso on gso on gro on >/dev/null 2>&1 || true
    done
else
    log "ethtool missing: the veths keep lib.sh's settings (offloads off)"
fi
SEGS="$(e2e_gso_max_segs)"
SEGS="${SEGS:-65535}"
log "veths: kernel default gso_max_segs $SEGS; ${SECS} s per measurement, $REPEATS runs per test; paths $PATHS; tests $TESTS"
servers
SUITE_CTL=()

# ----------------------------------------------------------- plain forwarding
if in_list plain-gso "$PATHS" || in_list plain-nogso "$PATHS"; then
    e2e_standin_routes
    pings plain
    if in_list plain-gso "$PATHS"; then
        step "plain forwarding, kernel GSO on the veths"
        suite plain-gso
    fi
    if in_list plain-nogso "$PATHS"; then
        step "plain forwarding, gso_max_segs 1 on every veth (one packet per MSS)"
        e2e_gso_max_segs 1
        suite plain-nogso
        e2e_gso_max_segs "$SEGS"
        log "gso_max_segs back to $SEGS for the tunnels"
    fi
    e2e_standin_routes del
fi

# ------------------------------------------------------------------ flowsec
# --policies: N outbound and N forward DISCARD policies in front of the
# tunnel's in each gateway's setkey file.
more_policies() {
    local gw lnet
    for gw in gwA gwB; do
        lnet=10.1.0.0/24; [ "$gw" = gwB ] && lnet=10.2.0.0/24
        python3 - "$W/$gw.setkey" "$lnet" "$POLICIES" <<'EOF'
import sys
path, lnet, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = open(path).read().splitlines(True)
first = next(i for i, l in enumerate(lines) if l.startswith("spdadd"))
extra = []
for i in range(n):
    host = "10.100.%d.%d/32" % (i >> 8, i & 0xff)
    extra.append("spdadd %s %s any -P out discard;\n" % (lnet, host))
    extra.append("spdadd %s %s any -P fwd discard;\n" % (host, lnet))
open(path, "w").write("".join(lines[:first] + extra + lines[first:]))
EOF
    done
    log "setkey files: $POLICIES outbound and $POLICIES forward DISCARD policies in front of the tunnel's"
}

run_flowsec() {  # run_flowsec PATH raw|udp [flowsec up options...]
    local path="$1" encap="$2"; shift 2
    in_list "$path" "$PATHS" || return 0
    e2e_need_nft || die "nftables could not be installed (flowsec up needs nft for its plaintext filter)"
    e2e_write_gcm_setkeys "$W" bench-tunnels "$encap"
    [ "$POLICIES" = 0 ] || more_policies
    step "$path: two flowsec gateways, ESP tunnel mode ($encap), AES-GCM-16, manual keys${*:+, $*}"
    for gw in gwA gwB; do
        daemon_up "$gw" "$W/$path-$gw.log" "$FLOWSEC" up --tun fsec0 --setkey "$W/$gw.setkey" --socket "$W/$path-$gw.sock" "$@" ||
            die "$gw: flowsec up failed"
    done
    pings "$path"
    SUITE_CTL=("$W/$path-gwA.sock" "$W/$path-gwB.sock")
    suite "$path" "${GW_PID[gwA]}" "${GW_PID[gwB]}"
    SUITE_CTL=()
    for gw in gwA gwB; do
        daemon_down "$gw" || true
        say "$gw: $(grep -m1 -E 'flowsec: (\[CFG\] )?down' "$W/$path-$gw.log" || echo "(no counters; exit status $E2E_LAST_RC)")"
    done
}
run_flowsec flowsec-nooffload raw --no-offload
run_flowsec flowsec raw
run_flowsec flowsec-1w raw --workers 1
run_flowsec flowsec-udp udp
run_flowsec flowsec-rawrx raw --esp-receive raw
run_flowsec flowsec-link raw --esp-send link
run_flowsec flowsec-rawio raw --esp-receive raw --esp-send raw
SWEEP_RAWRX=0
in_list flowsec-rawrx "$PATHS" && SWEEP_RAWRX=1
for n in ${WORKERS_SWEEP//,/ }; do
    PATHS="$PATHS,flowsec-w$n,flowsec-udp-w$n"
    run_flowsec "flowsec-w$n" raw --workers "$n"
    if [ "$SWEEP_RAWRX" = 1 ]; then
        PATHS="$PATHS,flowsec-rawrx-w$n"
        run_flowsec "flowsec-rawrx-w$n" raw --workers "$n" --esp-receive raw
    fi
    run_flowsec "flowsec-udp-w$n" udp --workers "$n"
done

# ------------------------------------------------------------- wireguard-go
if [ "$WG_ENABLED" = 1 ] && [ -z "$WG_SKIP" ]; then
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
    suite wireguard-go "${WG_PID[gwA]}" "${WG_PID[gwB]}"
    say "gwA: $(ns_exec gwA wg show "$WGA" transfer | awk '{printf "received %s B, sent %s B", $2, $3}')"
    for gw in gwA gwB; do stop_bg "${WG_PID[$gw]}" 5; done
fi

# ------------------------------------------------------------------ report
step "results"
MACHINE="$(uname -r); $(nproc) CPUs ($(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1))"
python3 - "$RESULTS" "$SECS" "$REPEATS" "$JSON_OUT" "$WG_SKIP" "$MACHINE" \
    "$("$FLOWSEC" --version 2>/dev/null || echo flowsec)" "$([ -n "$WG_GO" ] && "$WG_GO" --version 2>/dev/null | head -n 1 || true)" \
    "$(iperf3 --version | head -n 1); sockperf $(sockperf --version 2>&1 | grep -m1 -o 'version [^ ]*')" >&3 <<'EOF'
import json, statistics, sys, time
results, secs, repeats, json_out, wg_skip, machine, fs_ver, wg_ver, tools = sys.argv[1:10]
PATHS = [("plain-gso", "plain forwarding, kernel GSO"),
         ("plain-nogso", "plain forwarding, GSO off (gso_max_segs 1)"),
         ("flowsec-nooffload", "flowsec raw ESP, --no-offload"),
         ("flowsec", "flowsec raw ESP (TUN offloads)"),
         ("flowsec-1w", "flowsec raw ESP (TUN offloads), --workers 1"),
         ("flowsec-udp", "flowsec ESP in UDP (TUN offloads, UDP GSO/GRO)"),
         ("flowsec-rawrx", "flowsec raw ESP (TUN offloads), --esp-receive raw"),
         ("flowsec-link", "flowsec raw ESP (TUN offloads), --esp-send link"),
         ("flowsec-rawio", "flowsec raw ESP (TUN offloads), --esp-receive raw --esp-send raw"),
         ("wireguard-go", "wireguard-go (TUN offloads, UDP GSO/GRO)")]
runs = {}
for line in open(results):
    m = json.loads(line)
    runs.setdefault((m["path"], m["test"]), []).append(m)
# --workers: the sweep's rows, after the fixed paths, in the order they ran
known = {k for k, _ in PATHS}
for p, _ in runs:
    if p not in known:
        known.add(p)
        n = p.rsplit("-w", 1)[1]
        kind = "ESP in UDP" if p.startswith("flowsec-udp-") else "raw ESP"
        how = ", --esp-receive raw" if p.startswith("flowsec-rawrx-") else ""
        PATHS.append((p, "flowsec %s (TUN offloads), --workers %s%s" % (kind, n, how)))
def med(path, test, field):
    xs = [m[field] for m in runs.get((path, test), []) if m.get(field) is not None]
    return statistics.median(xs) if xs else None
def cpu_per_gb(path):
    xs = [m["cpu_s"] / (m["bytes"] / 1e9) for m in runs.get((path, "tcp1"), []) if m.get("cpu_s") is not None]
    return statistics.median(xs) if xs else None
rows = []
for key, name in PATHS:
    if not any(p == key for p, _ in runs):
        if key == "wireguard-go" and wg_skip:
            rows.append({"key": key, "path": name, "skipped": wg_skip})
        continue
    r = {"key": key, "path": name,
         "perf_mbit_s": med(key, "perf", "mbit_s"),
         "tcp1_mbit_s": med(key, "tcp1", "mbit_s"),
         "tcp4_mbit_s": med(key, "tcp4", "mbit_s"),
         "cpu_s_per_gb": cpu_per_gb(key),
         "udp64_rcvd_pps": med(key, "udp64", "rcvd_pps"),
         "udp64_sent_pps": med(key, "udp64", "sent_pps"),
         "udp64_lost_pct": med(key, "udp64", "lost_pct"),
         "udp64_lost_where": [m["lost_where"] for m in runs.get((key, "udp64"), [])],
         "udprr_tps": med(key, "udprr", "tps"), "udprr_half_rtt_us": med(key, "udprr", "half_rtt_us"),
         "tcprr_tps": med(key, "tcprr", "tps"), "tcprr_half_rtt_us": med(key, "tcprr", "half_rtt_us"),
         "udprr_wakeups": med(key, "udprr", "wakeups_per_transaction"),
         "tcprr_wakeups": med(key, "tcprr", "wakeups_per_transaction"),
         "runs": {t: runs[(p, t)] for p, t in runs if p == key}}
    rows.append(r)
def f(v, fmt="{:,.0f}"):
    return "–" if v is None else fmt.format(v)
print("| path | flowsec perf TCP Mbit/s | iperf3 TCP 1 stream | iperf3 TCP 4 streams | tunnel CPU s/GB | "
      "UDP 64 B rcvd kpps (lost) | UDP RR tps (½RTT µs) | TCP RR tps (½RTT µs) |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    if "skipped" in r:
        print("| %s | skipped: %s |  |  |  |  |  |  |" % (r["path"], r["skipped"]))
        continue
    cpu = "kernel" if r["key"].startswith("plain") else f(r["cpu_s_per_gb"], "{:.2f}")
    udp = "–" if r["udp64_rcvd_pps"] is None else "%.0f (%.0f%%)" % (r["udp64_rcvd_pps"] / 1e3, r["udp64_lost_pct"])
    rr = lambda p: "–" if r[p + "_tps"] is None else "%s (%.1f%s)" % (
        f(r[p + "_tps"]), r[p + "_half_rtt_us"],
        "" if r[p + "_wakeups"] is None else "; %.1f wake-ups" % r[p + "_wakeups"])
    print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (r["path"], f(r["perf_mbit_s"]), f(r["tcp1_mbit_s"]),
          f(r["tcp4_mbit_s"]), cpu, udp, rr("udprr"), rr("tcprr")))
print()
print("hostA → hostB, %s s per test × %s runs (median). Tools: %s, and %s. CPU s/GB: utime+stime of the two "
      "tunnel endpoints' processes during the iperf3 one-stream test, per GB (1e9 B) received. RR: 64-byte "
      "ping-pong, one transaction in flight; flowsec rows also give its workers' wake-ups per transaction, "
      "both gateways together (2 gateways × 2 directions: 4 is one wake-up per packet per gateway)." % (secs, repeats, tools, fs_ver))
by = {r["key"]: r for r in rows if "skipped" not in r}
def ratio(a, b, field, invert=False):
    x, y = by.get(a, {}).get(field), by.get(b, {}).get(field)
    if x is None or y is None or y == 0 or x == 0:
        return None
    return y / x if invert else x / y
goals = [("raw ESP TCP 1 stream / wireguard-go", ratio("flowsec", "wireguard-go", "tcp1_mbit_s"), 1.5),
         ("raw ESP TCP 1 stream / ESP in UDP", ratio("flowsec", "flowsec-udp", "tcp1_mbit_s"), 0.9),
         ("ESP in UDP TCP 1 stream / wireguard-go", ratio("flowsec-udp", "wireguard-go", "tcp1_mbit_s"), 2.5),
         ("raw ESP UDP RR tps / plain", ratio("flowsec", "plain-gso", "udprr_tps"), 0.65),
         ("raw ESP TCP RR tps / plain", ratio("flowsec", "plain-gso", "tcprr_tps"), 0.65),
         ("ESP in UDP UDP RR tps / plain", ratio("flowsec-udp", "plain-gso", "udprr_tps"), 0.65),
         ("ESP in UDP TCP RR tps / plain", ratio("flowsec-udp", "plain-gso", "tcprr_tps"), 0.65),
         ("raw ESP UDP 64 B rcvd / plain", ratio("flowsec", "plain-gso", "udp64_rcvd_pps"), 0.6),
         ("ESP in UDP UDP 64 B rcvd / plain", ratio("flowsec-udp", "plain-gso", "udp64_rcvd_pps"), 0.6),
         ("wireguard-go CPU s/GB / raw ESP's", ratio("flowsec", "wireguard-go", "cpu_s_per_gb", invert=True), 2.0),
         ("wireguard-go CPU s/GB / ESP in UDP's", ratio("flowsec-udp", "wireguard-go", "cpu_s_per_gb", invert=True), 2.0)]
goals = [g for g in goals if g[1] is not None]
if goals:
    print()
    print("| ratio (issue 17's goals) | measured | goal |")
    print("|---|---|---|")
    for name, v, goal in goals:
        print("| %s | %.3f | ≥ %.2f %s |" % (name, v, goal, "met" if v >= goal else "**not met**"))
lost = [(r["path"], w) for r in rows if "skipped" not in r for w in r["udp64_lost_where"]]
if lost:
    print()
    print("Where the 64-byte datagrams were lost (counters that moved, per run):")
    print()
    for p, w in lost:
        print("- %s: %s" % (p, w))
if json_out:
    doc = {"benchmark": "bench-tunnels", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "machine": machine, "seconds": float(secs), "repeats": int(repeats), "tools": tools,
           "flowsec": fs_ver, "wireguard_go": wg_ver or None, "rows": rows,
           "goals": [{"ratio": n, "measured": round(v, 3), "goal": g} for n, v, g in goals]}
    with open(json_out, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
EOF
[ -z "$JSON_OUT" ] || log "JSON written to $JSON_OUT"
bench_cleanup 2>&"$E2E_ERR_FD"
