# shellcheck shell=bash
# Network-namespace harness for flowsec's end-to-end tests (and the
# namespace scripts: scripts/demo.sh, bench-tunnels.sh, soak.sh). Source it
# from a test script (bash, root); it sources scripts/lib.sh (log, say,
# show_log, die, apt_install, ...). Everything it creates carries a per-run prefix
# ($E2E_PREFIX, default "fs<pid>-"), so parallel runs never collide, and an
# EXIT/INT/TERM trap removes exactly that: the processes started in the
# run's namespaces, the namespaces, and the run's work directory.
#
#   e2e_require_root_netns            exit 0 with "SKIP: ..." unless root + ip netns work
#   e2e_have_root_netns               the same probe as a test: status 1 and the
#                                     reason in $E2E_NO_NETNS_REASON instead of exiting
#   e2e_init                          work dir + cleanup trap; sets E2E_WORK
#   e2e_topology_gateway              hostA - gwA ==transit== gwB - hostB (flowsec lab net up)
#   e2e_standin_routes [del]          add (del: remove) plain routes between the sites
#   e2e_outer v4|v6                   GW_A, GW_B: the gateways' transit addresses in that family
#   require_flowsec PATH VAR          exit 1 (FAIL) unless the flowsec binary PATH (from $VAR) runs
#   ns NAME                           full namespace name of NAME (e.g. gwA)
#   ns_exec NAME cmd...               run cmd in namespace NAME
#   start_bg NAME LOG cmd...          cmd in NAME in the background, stdout+stderr
#                                     to LOG; PID in $E2E_LAST_PID, killed on cleanup
#   stop_bg PID [TIMEOUT]             SIGTERM, wait; sets E2E_LAST_RC (exit status)
#   wait_for_log FILE PATTERN TIMEOUT [PID]
#                                     wait for an ERE in FILE; fails early if PID dies
#   check NAME cmd...                 run a check, print "PASS: NAME" or "FAIL: NAME"
#   check_needs TOOL NAME cmd...      check, or "SKIP: NAME (no TOOL)" without TOOL
#   e2e_finish                        summary line; exit status 1 if any check failed
#   daemon_up GW LOG cmd...           cmd in GW (PID in GW_PID[GW]) until it logs "flowsec: [CFG] up ("
#   daemon_down GW [TIMEOUT]          SIGTERM it; status 1 unless it exits 0
#   ping_one FROM DST                 3 echoes FROM -> DST, one summary line
#   ping_both [FAMILY...]             hostA <-> hostB, both ways, inner IPv4 (4) and/or IPv6 (6)
#   tcp_stream NAME FROM TO ADDR PORT --bytes N | --seconds S
#                                     one TCP connection FROM -> ADDR:PORT (in TO)
#   tcp_transfer FROM TO ADDR BYTES   BYTES arrive, the same sha256 at both ends
#   start_capture NS IF PCAP [FILTER] tcpdump on NS's IF; PID in TCPDUMP_PID
#
# Gateway topology (addresses; IPv6 beside each IPv4), the lab's
# (crates/lab/src/topology.rs) too:
#
#   hostA [eth0 10.1.0.2 2001:db8:1::2]
#     |  10.1.0.0/24  2001:db8:1::/64
#   gwA   [eth0 10.1.0.1 2001:db8:1::1] [eth1 192.0.2.1 2001:db8::1]
#     |  transit 192.0.2.0/24  2001:db8::/64
#   gwB   [eth1 192.0.2.2 2001:db8::2] [eth0 10.2.0.1 2001:db8:2::1]
#     |  10.2.0.0/24  2001:db8:2::/64
#   hostB [eth0 10.2.0.2 2001:db8:2::2]
#
# Hosts: default routes (v4, v6) via their gateway. Gateways: forwarding on
# (v4 and v6), rp_filter 0, and *no* route to the far site: whatever
# carries hostA <-> hostB (flowsec's TUN routes, or e2e_standin_routes)
# has to add it.

E2E_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
E2E_ROOT="$(cd "$E2E_DIR/../.." && pwd)"
E2E_TOOLS="$E2E_DIR/tools.py"
# shellcheck source=scripts/lib.sh
. "$E2E_ROOT/scripts/lib.sh"
E2E_PREFIX="${E2E_PREFIX:-fs$$-}"
E2E_NAMESPACES=()
E2E_PIDS=()
E2E_FAILED=0
E2E_PASSED=0
E2E_WORK=""
E2E_CLEANED=0
E2E_CLEANUP_REPORT="${E2E_CLEANUP_REPORT:-0}"  # 1: e2e_cleanup says what it removed
E2E_MOUNTS=()       # what e2e_mount mounted: unmounted by e2e_cleanup, last first
E2E_NO_NETNS_REASON=""
E2E_ERR_FD=2        # e2e_init: a copy of the script's own stderr, for the traps
E2E_ERR_FD_OWN=0    # 1 once e2e_init made that copy (start_bg keeps it from children)

e2e_have_root_netns() {
    E2E_NO_NETNS_REASON=""
    if [ "$(id -u)" -ne 0 ]; then
        E2E_NO_NETNS_REASON="needs root and ip netns (not root)"
        return 1
    fi
    if ! command -v ip >/dev/null 2>&1; then
        E2E_NO_NETNS_REASON="needs root and ip netns (no ip command)"
        return 1
    fi
    local probe="${E2E_PREFIX}probe"
    if ! ip netns add "$probe" 2>/dev/null; then
        E2E_NO_NETNS_REASON="needs root and ip netns (ip netns add failed)"
        return 1
    fi
    if ! ip netns exec "$probe" ip link set lo up 2>/dev/null; then
        ip netns del "$probe" 2>/dev/null || true
        E2E_NO_NETNS_REASON="needs root and ip netns (ip netns exec failed)"
        return 1
    fi
    ip netns del "$probe"
    if ! command -v python3 >/dev/null 2>&1; then
        E2E_NO_NETNS_REASON="needs python3 for the traffic tools"
        return 1
    fi
}

e2e_require_root_netns() {
    if ! e2e_have_root_netns; then
        echo "SKIP: $E2E_NO_NETNS_REASON"
        exit 0
    fi
}

e2e_init() {
    E2E_WORK="$(mktemp -d "${TMPDIR:-/tmp}/${E2E_PREFIX}e2e.XXXXXX")"
    # flowsec up records manual SAs' sequence numbers here, not in
    # /var/lib/flowsec (the tests reuse their keys on every run).
    export FLOWSEC_STATE_DIR="$E2E_WORK/state"
    # A trap runs inside whatever command it interrupted, redirections
    # included (`ns_exec ... 2>"$W/send.log"`: ns_exec is a function), so
    # the traps write to a copy of the script's stderr made here.
    exec {E2E_ERR_FD}>&2
    E2E_ERR_FD_OWN=1
    trap 'e2e_cleanup 2>&"$E2E_ERR_FD"' EXIT
    trap 'log "interrupted" 2>&"$E2E_ERR_FD"; e2e_cleanup 2>&"$E2E_ERR_FD"; trap - EXIT; exit 130' INT
    trap 'log "terminated" 2>&"$E2E_ERR_FD"; e2e_cleanup 2>&"$E2E_ERR_FD"; trap - EXIT; exit 143' TERM
}

ns() { printf '%s%s' "$E2E_PREFIX" "$1"; }

ns_exec() {
    local name="$1"; shift
    ip netns exec "$(ns "$name")" "$@"
}

ns_add() {
    local full; full="$(ns "$1")"
    ip netns add "$full"
    E2E_NAMESPACES+=("$full")
    ip netns exec "$full" ip link set lo up
}

# veth pair between two namespaces, created directly inside them (the names
# never exist in the caller's namespace, so they cannot collide).
veth() {  # veth NS_A IF_A NS_B IF_B
    ip link add "$2" netns "$(ns "$1")" type veth peer name "$4" netns "$(ns "$3")"
    ns_exec "$1" ip link set "$2" up
    ns_exec "$3" ip link set "$4" up
}

addr() {  # addr NS IF CIDR...
    local n="$1" dev="$2"; shift 2
    local a
    for a in "$@"; do
        case "$a" in
            *:*) ns_exec "$n" ip -6 addr add "$a" dev "$dev" nodad ;;
            *)   ns_exec "$n" ip addr add "$a" dev "$dev" ;;
        esac
    done
}

sysctl_ns() {  # sysctl_ns NS key=value...
    local n="$1"; shift
    local kv
    for kv in "$@"; do
        ns_exec "$n" sysctl -qw "$kv" >/dev/null
    done
}

# Checksum/segmentation offloads: veth hands partially-checksummed and
# GSO skbs around. The kernel resolves both before a TUN without offloads,
# so this is belt and braces; done only when ethtool exists.
disable_offloads() {  # disable_offloads NS IF
    if command -v ethtool >/dev/null 2>&1; then
        ns_exec "$1" ethtool -K "$2" tx off rx off tso off gso off gro off >/dev/null 2>&1 || true
    fi
}

e2e_topology_gateway() {
    # One builder for the lab and the scripts: `flowsec lab net up`
    # (crates/lab/src/topology.rs), without the sites' plain routes
    # (e2e_standin_routes adds them), no reverse-path filter on the
    # gateways and the veths' offloads off.
    local bin="${FLOWSEC_BIN:-${FLOWSEC:-$E2E_ROOT/target/debug/flowsec}}" n
    [ -x "$bin" ] || { echo "FAIL: $bin: no flowsec binary to build the namespaces with"; exit 1; }
    for n in hostA gwA gwB hostB; do E2E_NAMESPACES+=("$(ns "$n")"); done
    "$bin" lab net up --prefix "$E2E_PREFIX" --no-site-routes --for-tests ||
        { echo "FAIL: flowsec lab net up --prefix $E2E_PREFIX"; exit 1; }
}

# Plain forwarding between the sites over the transit link: what flowsec's
# TUN routes replace. e2e_standin_routes [add|del]
e2e_standin_routes() {
    local op="${1:-add}"
    ns_exec gwA ip route "$op" 10.2.0.0/24 via 192.0.2.2
    ns_exec gwA ip -6 route "$op" 2001:db8:2::/64 via 2001:db8::2
    ns_exec gwB ip route "$op" 10.1.0.0/24 via 192.0.2.1
    ns_exec gwB ip -6 route "$op" 2001:db8:1::/64 via 2001:db8::1
}

e2e_outer() {  # e2e_outer v4|v6: GW_A and GW_B, the gateways' transit addresses (status 1 for another family)
    case "$1" in
        v4) GW_A=192.0.2.1 GW_B=192.0.2.2 ;;
        v6) GW_A=2001:db8::1 GW_B=2001:db8::2 ;;
        *) return 1 ;;
    esac
}

require_flowsec() {  # require_flowsec PATH VAR: exit 1 (a FAIL line) unless the flowsec binary PATH, from $VAR, runs
    [ -x "$1" ] && return 0
    echo "FAIL: flowsec binary not found at $1 (cargo build -p flowsec, or set $2=)"
    exit 1
}

# The veths of the topology, as NAMESPACE:DEVICE.
E2E_LINKS=(hostA:eth0 gwA:eth0 gwA:eth1 gwB:eth1 gwB:eth0 hostB:eth0)

# e2e_gso_max_segs: print the veths' current gso_max_segs (the kernel's
# default unless changed); e2e_gso_max_segs N: set it on every veth (1: one
# packet per MSS, as a TUN sees them).
e2e_gso_max_segs() {
    if [ $# -eq 0 ]; then
        local segs
        segs="$(ns_exec hostA ip -d link show dev eth0 | grep -o 'gso_max_segs [0-9]*' | head -n 1)"
        echo "${segs#gso_max_segs }"
        return
    fi
    local l
    for l in "${E2E_LINKS[@]}"; do ns_exec "${l%%:*}" ip link set dev "${l#*:}" gso_max_segs "$1"; done
}

# e2e_write_gcm_setkeys DIR TAG [udp]: DIR/gwA.setkey and DIR/gwB.setkey
# for an ESP tunnel, AES-GCM-16, manual keys, between the two sites (demo
# and benchmark; the e2e test writes its own, with more suites); with
# `udp`, ESP in UDP port 4500 (RFC 3948).
e2e_write_gcm_setkeys() {
    local dir="$1" tag="$2" gw lnet rnet lgw rgw a="192.0.2.1" b="192.0.2.2" esp=esp
    if [ "${3:-}" = udp ]; then a="192.0.2.1[4500]" b="192.0.2.2[4500]" esp=esp-udp; fi
    for gw in gwA gwB; do
        if [ "$gw" = gwA ]; then lnet=10.1.0.0/24 rnet=10.2.0.0/24 lgw=192.0.2.1 rgw=192.0.2.2
        else lnet=10.2.0.0/24 rnet=10.1.0.0/24 lgw=192.0.2.2 rgw=192.0.2.1; fi
        cat >"$dir/$gw.setkey" <<EOF
# flowsec $tag ($gw.setkey)
add $a $b $esp 0x1001 -m tunnel -r 64 -E aes-gcm-16 0x000102030405060708090a0b0c0d0e0f10111213;
add $b $a $esp 0x1002 -m tunnel -r 64 -E aes-gcm-16 0x202122232425262728292a2b2c2d2e2f30313233;
spdadd $lnet $rnet any -P out ipsec esp/tunnel/$lgw-$rgw/require;
spdadd $rnet $lnet any -P in  ipsec esp/tunnel/$rgw-$lgw/require;
spdadd $rnet $lnet any -P fwd ipsec esp/tunnel/$rgw-$lgw/require;
EOF
    done
}

# e2e_need_nft: flowsec up refuses to start without nftables (its inbound
# plaintext filter fails closed); install it (root, Debian) when missing.
e2e_need_nft() {
    command -v nft >/dev/null 2>&1 && return 0
    apt_install nftables
}

# Echo requests from NS to DST: iputils ping where it is installed, else
# tools.py's (a fresh Debian 12 has no ping); exit 0 when all were answered.
e2e_ping() {  # e2e_ping NS DST [COUNT] [INTERVAL_S] [TIMEOUT_S]
    local count="${3:-3}" interval="${4:-0.2}" timeout="${5:-2}"
    if command -v ping >/dev/null 2>&1; then
        ns_exec "$1" ping -c "$count" -i "$interval" -W "$timeout" "$2"
    else
        ns_exec "$1" python3 "$E2E_TOOLS" ping "$2" --count "$count" --interval "$interval" --timeout "$timeout"
    fi
}

start_bg() {  # start_bg NS LOG cmd...
    local n="$1" log="$2"; shift 2
    # Emptied here, not only by the child's redirection: a caller that
    # waits for a line in LOG (wait_for_log) must never read what an
    # earlier process left in it before the child has opened it.
    : >"$log"
    # `ip netns exec` execs cmd, so $! is cmd's own PID.
    if [ "$E2E_ERR_FD_OWN" = 1 ]; then
        ip netns exec "$(ns "$n")" "$@" >"$log" 2>&1 </dev/null {E2E_ERR_FD}>&- &
    else
        ip netns exec "$(ns "$n")" "$@" >"$log" 2>&1 </dev/null &
    fi
    E2E_LAST_PID=$!
    E2E_PIDS+=("$E2E_LAST_PID")
}

pid_alive() { kill -0 "$1" 2>/dev/null; }

stop_bg() {  # stop_bg PID [TIMEOUT_S]; E2E_LAST_RC = exit status (137: had to SIGKILL)
    local pid="$1" timeout="${2:-5}" i
    E2E_LAST_RC=0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < timeout * 10; i++)); do
        pid_alive "$pid" || break
        sleep 0.1
    done
    if pid_alive "$pid"; then
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null && E2E_LAST_RC=0 || E2E_LAST_RC=$?
}

wait_for_log() {  # wait_for_log FILE ERE TIMEOUT_S [PID]
    local file="$1" pat="$2" timeout="$3" pid="${4:-}" i
    for ((i = 0; i < timeout * 10; i++)); do
        if [ -f "$file" ] && grep -Eq -- "$pat" "$file"; then
            return 0
        fi
        if [ -n "$pid" ] && ! pid_alive "$pid"; then
            # one last look: it may have printed and exited in between
            [ -f "$file" ] && grep -Eq -- "$pat" "$file" && return 0
            log "process $pid exited before '$pat' appeared in $file"
            return 1
        fi
        sleep 0.1
    done
    log "timed out after ${timeout}s waiting for '$pat' in $file"
    return 1
}

check() {  # check NAME cmd...
    local name="$1"; shift
    if "$@"; then
        echo "PASS: $name"
        E2E_PASSED=$((E2E_PASSED + 1))
    else
        echo "FAIL: $name"
        E2E_FAILED=$((E2E_FAILED + 1))
    fi
}

skip() { echo "SKIP: $*"; }

check_needs() {  # check_needs TOOL NAME cmd...: check NAME cmd..., or a SKIP line without TOOL
    local tool="$1"
    shift
    if command -v "$tool" >/dev/null 2>&1; then
        check "$@"
    else
        skip "$1 (no $tool)"
    fi
}

# ----------------------------------------------------------------- daemons
# The daemon (flowsec up, a charon, a stand-in) of each gateway, by name.
declare -A GW_PID=()

# daemon_up GW LOG cmd...: cmd in GW's namespace (start_bg), its PID in
# GW_PID[GW]; waits up to ${UP_TIMEOUT:-10} s for "flowsec: [CFG] up (" in LOG.
# Status 1, the log's tail shown, when it does not come or cmd exits.
daemon_up() {
    local gw="$1" log="$2"
    shift 2
    start_bg "$gw" "$log" "$@"
    GW_PID[$gw]=$E2E_LAST_PID
    wait_for_log "$log" 'flowsec: (\[CFG\] )?up( |$)' "${UP_TIMEOUT:-10}" "${GW_PID[$gw]}" || { show_log "$log"; return 1; }
}

# daemon_down GW [TIMEOUT_S]: SIGTERM to GW's daemon (stop_bg; nothing
# when it has none); status 1 unless it exits 0 (E2E_LAST_RC) within
# TIMEOUT_S (5).
daemon_down() {
    local pid="${GW_PID[$1]:-}"
    E2E_LAST_RC=0
    [ -n "$pid" ] || return 0
    GW_PID[$1]=""
    stop_bg "$pid" "${2:-5}"
    [ "$E2E_LAST_RC" -eq 0 ] || { echo "    $1: exit status $E2E_LAST_RC after SIGTERM (137: it needed SIGKILL)"; return 1; }
}

# ----------------------------------------------------------------- traffic
# ping_one FROM DST: 3 echoes (e2e_ping), answered; one line says how
# many and their round trips (the ping's output when they were not).
ping_one() {
    local log="$E2E_WORK/ping-$1-$2.log"
    e2e_ping "$1" "$2" >"$log" 2>&1 || { show_log "$log" 5; return 1; }
    awk -v what="$1 -> $2" '
        /time=/ { t = $0; sub(/.*time=/, "", t); sub(/ ms.*/, "", t); t += 0
                  n++; s += t; if (n == 1 || t < mn) mn = t; if (t > mx) mx = t }
        END { printf "    %s: %d replies, rtt min/avg/max %.3f/%.3f/%.3f ms\n", what, n, mn, n ? s / n : 0, mx }' "$log"
}

# ping_both [FAMILY...]: hostA -> hostB and hostB -> hostA, over each inner
# address family FAMILY: 4 (the default) and 6.
ping_both() {
    local f
    for f in "${@:-4}"; do
        case "$f" in
            4) ping_one hostA 10.2.0.2 && ping_one hostB 10.1.0.2 ;;
            6) ping_one hostA 2001:db8:2::2 && ping_one hostB 2001:db8:1::2 ;;
            *) echo "    ping_both: family $f?"; false ;;
        esac || return 1
    done
}

# tcp_stream NAME FROM TO ADDR PORT --bytes N | --seconds S: one TCP
# connection FROM -> ADDR:PORT, tools.py send in FROM and recv in TO. The
# sender's and the receiver's JSON in $E2E_WORK/send-NAME.json and
# recv-NAME.json. --bytes: N pseudo-random bytes, hashed at both ends, all
# within ${TCP_TIMEOUT:-30} s; --seconds: S seconds of data, counted only.
# Status 1, the logs shown, when a side fails.
tcp_stream() {
    local name="$1" from="$2" to="$3" addr="$4" port="$5" how="$6" n="$7"
    local w="$E2E_WORK" limit="${TCP_TIMEOUT:-30}" rpid hash=()
    if [ "$how" = --seconds ]; then
        limit=$((${n%.*} + limit))
        hash=(--no-hash)
    fi
    rm -f "$w/recv-$name.json"
    start_bg "$to" "$w/recv-$name.log" python3 "$E2E_TOOLS" recv --bind "$addr" --port "$port" \
        --result "$w/recv-$name.json" --timeout "$((limit + 5))" "${hash[@]}"
    rpid=$E2E_LAST_PID
    wait_for_log "$w/recv-$name.log" 'recv: listening' 5 "$rpid" || { show_log "$w/recv-$name.log"; return 1; }
    if ! ns_exec "$from" timeout --foreground "$limit" python3 "$E2E_TOOLS" send --to "$addr" --port "$port" \
            "$how" "$n" --timeout "$limit" >"$w/send-$name.json" 2>"$w/send-$name.log"; then
        echo "    sender failed or timed out after ${limit}s"
        show_log "$w/send-$name.log"; show_log "$w/recv-$name.log"
        stop_bg "$rpid" 1
        return 1
    fi
    stop_bg "$rpid" 2
    [ -s "$w/recv-$name.json" ] || { echo "    receiver wrote no result"; show_log "$w/recv-$name.log"; return 1; }
}

# tcp_transfer FROM TO ADDR BYTES: BYTES over TCP FROM -> ADDR:5001 (in
# TO) arrive, with the same sha256 at both ends.
tcp_transfer() {
    tcp_stream transfer "$1" "$2" "$3" 5001 --bytes "$4" || return 1
    python3 - "$E2E_WORK/send-transfer.json" "$E2E_WORK/recv-transfer.json" "$4" <<'EOF'
import json, sys
s, r, n = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
print("    sent %d B in %.2f s (%.0f Mbit/s), sha256 %s…; received %d B, %s" % (
    s["bytes"], s["seconds"], s["mbit_s"], s["sha256"][:16], r["bytes"],
    "the same sha256" if r["sha256"] == s["sha256"] else "sha256 %s…" % str(r["sha256"])[:16]))
sys.exit(0 if s["bytes"] == r["bytes"] == n and s["sha256"] == r["sha256"] else 1)
EOF
}

# cbr_loss JSON: "LOST RECEIVED" of a `flowsec perf -t CBR --json` result,
# LOST not counting the datagrams the receiving socket dropped itself (its
# buffer full: the receiving host was slow, not the path); those are named
# after, "(+N dropped by the receiving socket)", when there are any.
cbr_loss() {
    python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
mine = r.get("socket_drops", 0)
print(r["lost"] - mine, r["packets_received"], "(+%d dropped by the receiving socket)" % mine if mine else "")' "$1"
}

# drops_snapshot OUT NS[=STATS_JSON]...: each namespace's drop counters
# (tools.py drops: UDP/IP errors, every link's rx/tx_dropped; with
# =STATS_JSON, the flowsec drops saved there), "NS.key value" lines in OUT.
drops_snapshot() {
    local out="$1" arg n stats
    shift
    : >"$out"
    for arg in "$@"; do
        n=${arg%%=*} stats=""
        [ "$arg" = "$n" ] || stats=${arg#*=}
        ns_exec "$n" python3 "$E2E_TOOLS" drops ${stats:+--stats "$stats"} | sed "s/^/$n./" >>"$out"
    done
}
# drops_between BEFORE AFTER: the counters that grew between two snapshots,
# "    key +N" lines: where a check's lost packets went.
drops_between() {
    awk 'NR == FNR { b[$1] = $2; next } $2 > b[$1] + 0 { printf "    %s +%d\n", $1, $2 - b[$1] }' "$1" "$2"
}

# start_capture NS IF PCAP [FILTER...]: tcpdump on NS's IF into PCAP (its
# log PCAP.log), PID in TCPDUMP_PID, once it is listening; status 1, the
# log shown, when it does not start.
start_capture() {
    local n="$1" dev="$2" pcap="$3"
    shift 3
    start_bg "$n" "$pcap.log" tcpdump -i "$dev" -n -U --immediate-mode -s 0 -w "$pcap" "$@"
    TCPDUMP_PID=$E2E_LAST_PID
    wait_for_log "$pcap.log" 'listening on' 5 "$TCPDUMP_PID" || { show_log "$pcap.log"; return 1; }
}

e2e_mount() {  # e2e_mount mount-args... TARGET: mount, unmounted again by e2e_cleanup
    mount "$@" || return 1
    E2E_MOUNTS+=("${!#}")
}

e2e_cleanup() {
    [ "$E2E_CLEANED" = 1 ] && return 0
    E2E_CLEANED=1
    trap '' INT TERM
    local pid n i pids=""
    for pid in "${E2E_PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for ((i = 0; i < 30; i++)); do
        pids=""
        for pid in "${E2E_PIDS[@]}"; do pid_alive "$pid" && pids="$pids $pid"; done
        [ -z "$pids" ] && break
        sleep 0.1
    done
    for pid in $pids; do kill -KILL "$pid" 2>/dev/null || true; done
    # Anything else still running inside this run's namespaces (children of
    # what we started) was started by this run too.
    for n in "${E2E_NAMESPACES[@]}"; do
        for pid in $(ip netns pids "$n" 2>/dev/null); do
            kill -KILL "$pid" 2>/dev/null || true
        done
    done
    for pid in "${E2E_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    for n in "${E2E_NAMESPACES[@]}"; do
        ip netns del "$n" 2>/dev/null || log "could not delete namespace $n"
    done
    # Before the work directory goes: it may be mounted into a chroot.
    for ((i = ${#E2E_MOUNTS[@]} - 1; i >= 0; i--)); do
        umount -l "${E2E_MOUNTS[$i]}" 2>/dev/null || log "could not unmount ${E2E_MOUNTS[$i]}"
    done
    if [ -n "$E2E_WORK" ] && [ -d "$E2E_WORK" ]; then
        if [ "${FLOWSEC_E2E_KEEP:-0}" = 1 ]; then
            log "kept logs in $E2E_WORK"
        else
            rm -rf -- "$E2E_WORK"
        fi
    fi
    local left kept=0
    [ "${FLOWSEC_E2E_KEEP:-0}" = 1 ] && kept=1
    left="$(ip netns list 2>/dev/null | grep -F -- "$E2E_PREFIX" || true)"
    if [ -n "$left" ]; then
        log "left behind: $left"
    elif [ "$E2E_CLEANUP_REPORT" = 1 ]; then
        log "cleanup: ended its ${#E2E_PIDS[@]} processes, removed ${#E2E_NAMESPACES[@]} namespaces (${E2E_PREFIX}*)$([ "$kept" = 1 ] || echo ' and the work directory'); nothing left"
    fi
    return 0
}

e2e_finish() {
    if [ "$E2E_FAILED" -eq 0 ]; then
        echo "e2e: all $E2E_PASSED checks passed"
        exit 0
    fi
    echo "e2e: $E2E_FAILED of $((E2E_PASSED + E2E_FAILED)) checks FAILED"
    exit 1
}
