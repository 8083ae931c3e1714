#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions called through check and poll
# End-to-end: a retransmitted IKE request replayed from a forged address
# (issue 29 item 1). Two flowsec gateways key a tunnel with IKEv2 (PSK);
# the transit link is a bridge with a third host on it, the victim:
#
#   hostA 10.1.0.2 -- gwA | 192.0.2.1 ==[bridge]== 192.0.2.2 | gwB -- hostB 10.2.0.2
#                                           |
#                                  victim 192.0.2.66
#
# gwA initiates, gwB responds. A capture of gwA's transit link (eth1),
# started before the SAs come up, gives gwA's IKE_AUTH request (the first
# IKE datagram from 192.0.2.1 of exchange type 35 with the response flag
# clear: tests/e2e/ike_replay.py reads the pcap). From gwA's namespace, a
# raw socket sends 50 copies of it to gwB within half a second, from the
# forged source 192.0.2.66; a capture on the victim's link counts what
# gwB sends it. The responder answers a retransmitted request where the
# copy came from, at most once a second and 8 times per request; the
# others are counted as resend_limited (`flowsec ctl stats`, beside
# replayed). Checks:
#   a. the burst: gwB answered the copies 1 or 2 times, to 192.0.2.66
#      (the victim's capture), and not once to its peer 192.0.2.1 (the
#      transit capture)
#   b. `flowsec ctl stats` on gwB: resend_limited rose by at least 45
#   c. gwB's IKE SA still has 192.0.2.1 as its peer (ctl sas --json,
#      remote_host), the same SPIs; ping hostA -> hostB through the tunnel
#   d. a second burst of 50, two seconds or more after the first ended
#      (once c is done): at most one more answer to 192.0.2.66, none to
#      192.0.2.1
#
# Before issue 29 item 1 every UDP copy was answered, to the SA's own peer
# address (192.0.2.1) and without limit: on a332096, 50 answers to
# 192.0.2.1 each burst, none to the victim, replayed 50 and no
# resend_limited (a, b and d fail; c passes: the copies never moved an
# established SA).
#
#   FLOWSEC_BIN=target/debug/flowsec tests/e2e/ike_replay.sh    root
#   FLOWSEC_E2E_KEEP=1                  keep the work directory (configs, logs, captures)
#
# Without root or ip netns it prints "SKIP: ..." and exits 0; exit status 1
# when any check fails (the daemons' logs are printed then).
set -eu -o pipefail

E2E_PREFIX="${E2E_PREFIX:-rpl$$-}"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/e2e/ike_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ike_lib.sh"
IKE_TAG="e2e ike_replay"
T0=$SECONDS

e2e_require_root_netns

FLOWSEC_BIN="${FLOWSEC_BIN:-$E2E_ROOT/target/debug/flowsec}"
require_flowsec "$FLOWSEC_BIN" FLOWSEC_BIN
install_capture_tools
command -v tcpdump >/dev/null 2>&1 || { echo "FAIL: tcpdump is not installed"; exit 1; }

e2e_outer v4
VICTIM=192.0.2.66
COPIES=50 BURST_S=0.5
REPLAY="$E2E_DIR/ike_replay.py"
UP_TIMEOUT=15 SA_TIMEOUT=20 TUN=fsrpl0
RETRANSMIT_TIMEOUT=1 RETRANSMIT_BASE=1.4 RETRANSMIT_TRIES=3
declare -A IMPL=([gwA]=flowsec [gwB]=flowsec)
IKE_PROPOSAL=aes128gcm16-prfsha256-ecp256 ESP_PROPOSAL=aes128gcm16
# No DPD while the test runs: a request of gwA's after IKE_AUTH would
# replace gwB's cached answer, and the copies would not be retransmissions.
DPD_DELAY=300s
CONN=gw CHILD=net
PSK="flowsec-e2e-ike-replay psk, not a secret"
declare -A LOCAL_ADDR=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ADDR=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_ID=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ID=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_TS=([gwA]=10.1.0.0/24 [gwB]=10.2.0.0/24)
declare -A REMOTE_TS=([gwA]=10.2.0.0/24 [gwB]=10.1.0.0/24)

echo "$IKE_TAG: gwA flowsec (initiator), gwB flowsec (responder); $COPIES copies of gwA's IKE_AUTH from $VICTIM, twice"
e2e_init
W="$E2E_WORK"
for gw in gwA gwB; do gen_swanctl_conf "$gw" >"$W/$gw-swanctl.conf"; done

# ------------------------------------------------------------ topology
# The gateway topology, its transit veth replaced by a bridge (namespace
# lan) with the victim on a third port: gwB reaches 192.0.2.66 on eth1,
# as it would any host of the transit network.
e2e_topology_gateway
ns_exec gwA ip link del eth1
ns_add lan
ns_add victim
ns_exec lan ip link add br0 type bridge forward_delay 0
ns_exec lan ip link set br0 up
veth gwA eth1 lan pA
veth gwB eth1 lan pB
veth victim eth0 lan pV
for port in pA pB pV; do ns_exec lan ip link set "$port" master br0; done
addr gwA eth1 192.0.2.1/24 2001:db8::1/64
addr gwB eth1 192.0.2.2/24 2001:db8::2/64
addr victim eth0 "$VICTIM/24"
for gw in gwA gwB; do
    sysctl_ns "$gw" net.ipv4.conf.eth1.rp_filter=0
    disable_offloads "$gw" eth1
done
disable_offloads victim eth0

start_daemons

# The transit link from before the first IKE_SA_INIT, and what reaches
# the victim.
start_capture gwA eth1 "$W/transit.pcap" udp
TRANSIT_PID=$TCPDUMP_PID
start_capture victim eth0 "$W/victim.pcap" udp
VICTIM_PID=$TCPDUMP_PID

check "gwA initiates: IKE SA ESTABLISHED and Child SA INSTALLED at both ends, SPIs agreed" sa_up
stop_without_sas
IKE_BEFORE=$(ike_agreed || true)

# ------------------------------------------------------ the request
# tcpdump -U writes each packet as it comes: the request is in the file.
if ! python3 "$REPLAY" extract "$W/transit.pcap" "$GW_A" "$W/request.json" >"$W/extract.log" 2>&1; then
    show_log "$W/extract.log"
    echo "$IKE_TAG: no IKE_AUTH request in the transit capture; not running the other checks"
    check "gwA's IKE_AUTH request in the transit capture" false
    ike_finish
fi
sed 's/^/    /' "$W/extract.log"

# ike_stat NAME: gwB's IKE counter NAME, from `flowsec ctl stats`'s "ike:"
# line (name=value pairs; a counter at 0 is left out: 0).
ike_stat() {
    local out
    out=$(fctl gwB stats 2>&1) || { echo "    ctl stats: $out" >&2; return 1; }
    sed -n 's/^ike: //p' <<<"$out" | tr ' ' '\n' | awk -F= -v k="$1" '$1 == k {n = $2} END {print n + 0}'
}
# burst N: COPIES copies of the request from VICTIM within BURST_S
# seconds (gwA's namespace); BURST_START[N] and BURST_END[N], epoch seconds.
BURST_START=() BURST_END=()
burst() {
    local out
    out=$(ns_exec gwA python3 "$REPLAY" inject "$W/request.json" "$VICTIM" "$COPIES" "$BURST_S") || return 1
    read -r _ "BURST_START[$1]" "BURST_END[$1]" _ <<<"$out" || return 1
    sleep 0.5   # gwB's answers on their way, and in the captures
}
answers() {  # answers PCAP TO START END: gwB's answers to the request sent to TO
    python3 "$REPLAY" answers "$1" "$W/request.json" "$GW_B" "$2" "$3" "$4"
}

LIMITED0=$(ike_stat resend_limited) REPLAYED0=$(ike_stat replayed)
echo "    gwB before: replayed $REPLAYED0, resend_limited $LIMITED0"

# ------------------------------------------------------------ (a) the burst
burst_answered() {  # burst_answered N MAX: burst N (burst), answered 1..MAX times to VICTIM, never to GW_A
    local n="$1" max="$2" to_victim to_peer end
    burst "$n" || { echo "    the burst could not be sent"; return 1; }
    end=$(date +%s.%N)
    to_victim=$(answers "$W/victim.pcap" "$VICTIM" "${BURST_START[$n]}" "$end") || return 1
    to_peer=$(answers "$W/transit.pcap" "$GW_A" "${BURST_START[$n]}" "$end") || return 1
    printf '    burst %s: %d copies from %s in %.2f s; gwB answered %d to %s (the victim), %d to %s (its peer)\n' \
        "$n" "$COPIES" "$VICTIM" "$(awk -v a="${BURST_START[$n]}" -v b="${BURST_END[$n]}" 'BEGIN {print b - a}')" \
        "$to_victim" "$VICTIM" "$to_peer" "$GW_A"
    [ "$to_peer" -eq 0 ] && [ "$to_victim" -ge "${3:-1}" ] && [ "$to_victim" -le "$max" ]
}
check "a. $COPIES copies of gwA's IKE_AUTH from $VICTIM in ${BURST_S}s: gwB answered 1 or 2 times, to $VICTIM, never to $GW_A" \
    burst_answered 1 2

# ------------------------------------------------------------ (b) the counter
LIMITED1=0 REPLAYED1=0
limited() {
    LIMITED1=$(ike_stat resend_limited) && REPLAYED1=$(ike_stat replayed) || return 1
    echo "    gwB: replayed $REPLAYED0 -> $REPLAYED1, resend_limited $LIMITED0 -> $LIMITED1"
    [ $((LIMITED1 - LIMITED0)) -ge 45 ]
}
check "b. gwB's ctl stats: resend_limited rose by at least 45" limited

# ------------------------------------------------------------ (c) the SA stays
sa_stays() {
    local peer ike
    peer=$(sas gwB '"%s:%s" % (ike["remote_host"], ike["remote_port"])') || { echo "    gwB: no IKE SA"; show_sas; return 1; }
    ike=$(ike_agreed) || { echo "    the IKE SA is not agreed at both ends"; show_sas; return 1; }
    echo "    gwB's IKE SA: peer $peer, SPIs $ike (before the bursts: $IKE_BEFORE)"
    [ "${peer%:*}" = "$GW_A" ] && [ "$ike" = "$IKE_BEFORE" ] || return 1
    ping_one hostA 10.2.0.2
}
check "c. gwB's IKE SA still has $GW_A as its peer, the same SPIs; ping hostA -> hostB" sa_stays

# ------------------------------------------------------------ (d) 2 s later
second_burst() {
    local wait_s
    # Two seconds after the first burst ended (at once if (c) took longer).
    wait_s=$(awk -v t="${BURST_END[1]}" -v now="$(date +%s.%N)" 'BEGIN {w = t + 2 - now; printf "%.3f", (w > 0 ? w : 0)}')
    sleep "$wait_s"
    burst_answered 2 1 0 || return 1
    awk -v a="${BURST_END[1]}" -v b="${BURST_START[2]}" 'BEGIN {printf "    %.2f s between the bursts\n", b - a}'
    echo "    gwB: replayed $(ike_stat replayed), resend_limited $(ike_stat resend_limited)"
}
check "d. a second burst 2 s later: at most one more answer, to $VICTIM, none to $GW_A" second_burst

stop_bg "$TRANSIT_PID" 2
stop_bg "$VICTIM_PID" 2
ike_finish
