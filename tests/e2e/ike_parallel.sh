#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions called through check and poll
# End-to-end: per-resource Child SAs negotiated by IKEv2 (RFC 9611,
# swanctl.conf `per_cpu_sas = yes`, strongSwan 6.0.2's option).
#
#   hostA 10.1.0.2 -- gwA | 192.0.2.1 == IKE + ESP == 192.0.2.2 | gwB -- hostB 10.2.0.2
#
# gwA (flowsec, 2 workers, per_cpu_sas = yes) initiates. With
# FLOWSEC_IKE_RIGHT=flowsec (the default) gwB is flowsec with 2 workers
# and per_cpu_sas = yes too, and the checks are:
#   a. the fallback Child SA and one per worker (cpu 0, cpu 1) INSTALLED at
#      both ends, each with its worker, the SPIs agreed
#   b. sixteen TCP connections hostA -> hostB (flowsec perf, 2 threads x 8
#      connections; see parallel.sh for why sixteen): a capture of the
#      transit link shows both per-resource SAs busy in each direction,
#      the fallback idle; no packet handed between workers
#   c. `ctl rekey --child net` from gwA, then from gwB, under a paced UDP
#      stream: every SA of the group rekeyed on its own, each keeps its
#      worker, not one datagram lost
# With FLOWSEC_IKE_RIGHT=strongswan gwB is strongSwan 5.9.8 (no RFC 9611,
# kernel-libipsec): the tunnel comes up with one ordinary Child SA (the
# notify is ignored, gwA asks for no more), traffic flows, and gwA says
# why in its log.
#
#   tests/e2e/ike_parallel.sh                     root; needs target/debug/flowsec
#   FLOWSEC_IKE_RIGHT=strongswan ...              gwB runs strongSwan
#   FLOWSEC_E2E_KEEP=1                            keep the work directory
#
# Without root or ip netns it prints "SKIP: ..." and exits 0.
set -eu -o pipefail

E2E_PREFIX="${E2E_PREFIX:-ikp$$-}"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/e2e/ike_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ike_lib.sh"
IKE_TAG="e2e ike parallel"

e2e_require_root_netns

RIGHT="${FLOWSEC_IKE_RIGHT:-flowsec}"
case "$RIGHT" in strongswan|flowsec) ;; *) echo "FAIL: FLOWSEC_IKE_RIGHT=$RIGHT (strongswan or flowsec)"; exit 1 ;; esac
FLOWSEC_BIN="${FLOWSEC_BIN:-$E2E_ROOT/target/debug/flowsec}"
require_flowsec "$FLOWSEC_BIN" FLOWSEC_BIN
[ "$RIGHT" = strongswan ] && { install_strongswan || { echo "FAIL: strongSwan is not installed"; exit 1; }; }
command -v tcpdump >/dev/null || { echo "FAIL: tcpdump not installed (scripts/test.sh installs it)"; exit 1; }

e2e_outer v4
IKE_PROPOSAL=aes128gcm16-prfsha256-ecp256 ESP_PROPOSAL=aes128gcm16-ecp256
DPD_DELAY=30s UP_TIMEOUT=15 SA_TIMEOUT=20
CONN=gw CHILD=net TUN=fsikp0 PSK="flowsec-e2e-ike-parallel psk, not a secret"
RETRANSMIT_TIMEOUT=1 RETRANSMIT_BASE=1.4 RETRANSMIT_TRIES=2
FLOWSEC_IKE_WORKERS=2
declare -A IMPL=([gwA]=flowsec [gwB]="$RIGHT")
declare -A LOCAL_ADDR=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ADDR=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_ID=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ID=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_TS=([gwA]=10.1.0.0/24 [gwB]=10.2.0.0/24)
declare -A REMOTE_TS=([gwA]=10.2.0.0/24 [gwB]=10.1.0.0/24)

echo "$IKE_TAG: gwA flowsec (per_cpu_sas = yes, 2 workers), gwB $RIGHT"
e2e_init
W="$E2E_WORK"
for gw in gwA gwB; do
    if [ "${IMPL[$gw]}" = strongswan ]; then
        # strongSwan 5.9 does not know the key (it came with 6.0.2).
        gen_swanctl_conf "$gw" >"$W/$gw-swanctl.conf"
        gen_strongswan_conf "$gw" >"$W/$gw-strongswan.conf"
    else
        CHILD_ARGS="--per-cpu-sas yes" gen_swanctl_conf "$gw" >"$W/$gw-swanctl.conf"
    fi
done
e2e_topology_gateway
start_daemons
start_bg hostB "$W/perf-server.log" "$FLOWSEC_BIN" perf server --bind 10.2.0.2
wait_for_log "$W/perf-server.log" 'listening' 5 "$E2E_LAST_PID" || { show_log "$W/perf-server.log"; exit 1; }

# The INSTALLED Child SAs of GW as lines "CPU SPI_IN SPI_OUT" (CPU: - for
# the fallback or an ordinary Child SA; SPIs as 8 hex digits: swanctl
# drops leading zeros), sorted.
children() {  # children GW
    local raw
    if [ "${IMPL[$1]}" = strongswan ]; then
        raw=$(sw "$1" --list-sas --raw 2>&1) || return 1
        python3 "$E2E_TOOLS" sas strongswan --conn "$CONN" --child "$CHILD" --gw "$1" <<<"$raw" |
            python3 -c '
import json, sys
for ike in json.load(sys.stdin)["ike_sas"]:
    for c in ike["child_sas"]:
        if c["state"] == "INSTALLED":
            print("-", "%08x" % int(c["spi_in"], 16), "%08x" % int(c["spi_out"], 16))' | LC_ALL=C sort
    else
        fctl "$1" sas --json | python3 -c '
import json, sys
for ike in json.load(sys.stdin)["ike_sas"]:
    for c in ike["child_sas"]:
        if c["state"] == "INSTALLED":
            cpu = c.get("cpu")
            print("-" if cpu is None else cpu, "%08x" % int(c["spi_in"], 16), "%08x" % int(c["spi_out"], 16))' | LC_ALL=C sort
    fi
}

# The group at both ends, agreed (gwA's in = gwB's out), N Child SAs, the
# cpus given ("- 0 1") at both ends, and each per-resource SA's inbound
# SPI steered to its worker (SPI mod 2 = cpu) at both ends; prints gwA's
# lines. EXCLUDE: SPIs that must be gone.
group_agreed() {  # group_agreed N CPUS [EXCLUDE...]
    local n="$1" cpus="$2" a b
    shift 2
    a=$(children gwA) || return 1
    b=$(children gwB) || return 1
    [ "$(wc -l <<<"$a")" -eq "$n" ] && [ "$(wc -l <<<"$b")" -eq "$n" ] || return 1
    [ "$(cut -d' ' -f1 <<<"$a" | paste -sd' ')" = "$cpus" ] || return 1
    [ "$(cut -d' ' -f1 <<<"$b" | paste -sd' ')" = "$cpus" ] || return 1
    local cpu in out
    while read -r cpu in out; do
        [ "$cpu" = - ] || [ $((0x$in % 2)) = "$cpu" ] || return 1
    done <<<"$b"
    while read -r cpu in out; do
        grep -q " $out $in\$" <<<"$b" || return 1
        [ "$cpu" = - ] || [ $((0x$in % 2)) = "$cpu" ] || return 1
        for x in "$@"; do [ "$x" != "$in" ] && [ "$x" != "$out" ] || return 1; done
    done <<<"$a"
    echo "$a"
}

if [ "$RIGHT" = flowsec ]; then
    N=3 CPUS="- 0 1"
else
    N=1 CPUS="-"
fi

sas_up() {
    local t=$SECONDS
    fctl gwA initiate --child "$CHILD" >"$W/initiate.log" 2>&1 || { show_log "$W/initiate.log"; return 1; }
    GROUP=$(poll "$SA_TIMEOUT" group_agreed "$N" "$CPUS") || {
        echo "    not $N agreed Child SAs (cpus $CPUS) within ${SA_TIMEOUT}s"
        for gw in gwA gwB; do children "$gw" | sed "s/^/    $gw: /"; done
        return 1
    }
    echo "$GROUP" | sed 's/^/    gwA (cpu in out): /'
    echo "    in $((SECONDS - t)) s"
    show_ctl_sas gwA 12
}
check "a. $N Child SA(s) INSTALLED at both ends, agreed (cpus at gwA: $CPUS)" sas_up
[ "$E2E_FAILED" -eq 0 ] || { show_log "$(log_of gwA)" 30; show_log "$(log_of gwB)" 30; e2e_finish; }

# ESP frames with this SPI in the capture, either way: raw or in UDP 4500.
spi_frames() {  # spi_frames PCAP SPI_HEX
    tcpdump -n -r "$1" "(ip proto 50 and ip[20:4] = 0x$2) or (udp port 4500 and udp[8:4] = 0x$2)" 2>/dev/null | wc -l
}

traffic_spreads() {
    local pcap="$W/flow.pcap" cpu in out n_in n_out ok=0
    start_capture gwA eth1 "$pcap" -c 300000 'ip proto 50 or udp port 4500' || return 1
    ns_exec hostA "$FLOWSEC_BIN" perf client -H 10.2.0.2 -t TCP_STREAM -l 3 --threads 2 --conns 8 --json \
        >"$W/perf.json" 2>"$W/perf.log" || { show_log "$W/perf.log"; return 1; }
    sleep 0.5
    stop_bg "$TCPDUMP_PID" 2
    local total_ab=0 total_ba=0
    declare -A AB BA
    while read -r cpu in out; do
        AB[$cpu]=$(spi_frames "$pcap" "$out") BA[$cpu]=$(spi_frames "$pcap" "$in")
        total_ab=$((total_ab + AB[$cpu])) total_ba=$((total_ba + BA[$cpu]))
    done <<<"$GROUP"
    for cpu in "${!AB[@]}"; do
        echo "    cpu $cpu's Child SA: ${AB[$cpu]} frames A->B, ${BA[$cpu]} B->A"
    done | sort
    [ "$total_ab" -gt 1000 ] && [ "$total_ba" -gt 100 ] || ok=1
    if [ "$RIGHT" = flowsec ]; then
        for cpu in 0 1; do
            [ $((AB[$cpu] * 20)) -ge "$total_ab" ] && [ $((BA[$cpu] * 20)) -ge "$total_ba" ] || ok=1
        done
        [ $((AB[-] * 100)) -le "$total_ab" ] && [ $((BA[-] * 100)) -le "$total_ba" ] || ok=1
        local gw h
        for gw in gwA gwB; do
            h=$(fctl "$gw" stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"].get("handed_off", 0))')
            echo "    $gw: handed_off=$h"
            [ "$h" -eq 0 ] || ok=1
        done
    fi
    return $ok
}
if [ "$RIGHT" = flowsec ]; then
    check "b. 16 TCP connections: both per-resource SAs busy each way, the fallback idle, no handoffs (transit capture, tcpdump)" traffic_spreads
else
    check "b. 16 TCP connections over the one Child SA (transit capture, tcpdump)" traffic_spreads
    no_rfc9611_logged() { grep -F 'no per-resource CHILD_SAs' "$(log_of gwA)" | tail -n 1 | sed 's/^/    /'; }
    check "gwA logged that strongSwan 5.9 took no part (no SA_RESOURCE_INFO)" no_rfc9611_logged
fi

drops_now() {  # drops_now OUT: every namespace's drop counters, flowsec's too
    local g specs=(hostA hostB)
    for g in gwA gwB; do
        if [ "${IMPL[$g]}" = flowsec ] && fctl "$g" stats --json >"$W/stats-$g.json" 2>/dev/null; then
            specs+=("$g=$W/stats-$g.json")
        else
            specs+=("$g")
        fi
    done
    drops_snapshot "$1" "${specs[@]}"
}

# A paced UDP stream hostA -> hostB across a rekey of every SA of the
# group from GW: none lost; afterwards the same group, new SPIs.
group_rekey_lossless() {  # group_rekey_lossless GW
    local gw="$1" stream="$W/rekey-$1.json" streamer old new loss
    old=$(cut -d' ' -f2,3 <<<"$GROUP" | paste -sd' ')
    drops_now "$W/drops-$gw.before"
    ns_exec hostA "$FLOWSEC_BIN" perf client -H 10.2.0.2 -t CBR --rate 40M -m 1000 -l 3 --json >"$stream" 2>&1 &
    streamer=$!
    sleep 1
    rekey_child "$gw" || { wait "$streamer"; return 1; }
    # shellcheck disable=SC2086
    new=$(poll "$SA_TIMEOUT" group_agreed "$N" "$CPUS" $old) || {
        echo "    no new agreed group (old SPIs gone) within ${SA_TIMEOUT}s"
        for g in gwA gwB; do children "$g" | sed "s/^/    $g: /"; done
        wait "$streamer"; return 1
    }
    wait "$streamer" || { show_log "$stream" 5; return 1; }
    GROUP=$new
    echo "$GROUP" | sed 's/^/    gwA (cpu in out): /'
    loss=$(cbr_loss "$stream")
    echo "    CBR 40 Mbit/s of 1000 B across the rekeys: lost/received $loss"
    # As tests/e2e/ike.sh: flowsec at both ends loses nothing; with
    # strongSwan's kernel-libipsec at one, at most 5 of 15000.
    local allowed=0
    [ "$RIGHT" = flowsec ] || allowed=5
    [ "${loss%% *}" -le "$allowed" ] && return 0
    drops_now "$W/drops-$gw.after"
    echo "    counters that grew (drops_between):"
    drops_between "$W/drops-$gw.before" "$W/drops-$gw.after"
    return 1
}
check "c. every Child SA of the group rekeyed by gwA: each keeps its worker, nothing lost" group_rekey_lossless gwA
check "c. every Child SA of the group rekeyed by gwB ($RIGHT): each keeps its worker, nothing lost" group_rekey_lossless gwB

for gw in gwA gwB; do
    [ "${IMPL[$gw]}" = flowsec ] && check "$gw: SIGTERM -> exit 0" daemon_down "$gw"
done
[ "$E2E_FAILED" -eq 0 ] || { show_log "$(log_of gwA)" 40; show_log "$(log_of gwB)" 40; }
e2e_finish
