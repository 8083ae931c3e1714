#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions called through check and poll
# End-to-end: the RFC 9329 responder under a flood that never reads (issue
# 29 item 2).
#
#   hostA 10.1.0.2 -- gwA | 192.0.2.1 == TCP 4500 == 192.0.2.2 | gwB -- hostB 10.2.0.2
#                                                                 | eth2 172.16.0.1/16
#                                                   atk 172.16.1.1 .. 172.16.4.250
#
# gwA runs its IKE SA over TCP (tcp_encap = yes) to gwB (`--tcp-listen`).
# gwB also takes IKE_SA_INIT from 172.16.0.0/16 (a road-warrior
# connection: any of those addresses gets a half-open SA), which is where
# the attacker (namespace atk) comes from: 1000 connections, 4 from each
# of 250 addresses, each with a half-open SA at gwB (COOKIEs returned),
# then, for FLOOD_SECONDS, the same IKE_SA_INIT written again and again on
# every one, and nothing read. Checks:
#   a. the SAs come up over TCP
#   b. during the flood gwB's RSS stays below 256 MiB (sampled twice a
#      second; before the fix it queued every answer, up to 5 MiB a
#      connection), the tunnel still carries traffic, and gwB counted what
#      it held back (read_paused, resend_limited)
#   c. after the flood: still up, traffic both ways, SIGTERM -> exit 0
#
#   tests/e2e/ike_tcp_flood.sh          root; needs target/debug/flowsec
#   FLOWSEC_E2E_FLOOD_SECONDS=20        how long the flood writes
#   FLOWSEC_E2E_RSS_BOUND_MIB=256       the bound checked in b
#   FLOWSEC_E2E_KEEP=1                  keep the work directory
#
# Without root or ip netns it prints "SKIP: ..." and exits 0.
set -eu -o pipefail

E2E_PREFIX="${E2E_PREFIX:-iktf$$-}"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/e2e/ike_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ike_lib.sh"
IKE_TAG="e2e ike tcp flood"
T0=$SECONDS

e2e_require_root_netns

FLOWSEC_BIN="${FLOWSEC_BIN:-$E2E_ROOT/target/debug/flowsec}"
require_flowsec "$FLOWSEC_BIN" FLOWSEC_BIN
FLOOD_SECONDS="${FLOWSEC_E2E_FLOOD_SECONDS:-20}"
RSS_BOUND_MIB="${FLOWSEC_E2E_RSS_BOUND_MIB:-256}"

e2e_outer v4
IKE_PROPOSAL=aes128gcm16-prfsha256-ecp256 ESP_PROPOSAL=aes128gcm16-ecp256
DPD_DELAY=30s UP_TIMEOUT=15 SA_TIMEOUT=20
CONN=gw CHILD=net TUN=fsiktf0 PSK="flowsec-e2e-ike-tcp-flood psk, not a secret"
RETRANSMIT_TIMEOUT=1 RETRANSMIT_BASE=1.4 RETRANSMIT_TRIES=3
INNER_FAMILIES="4"
declare -A IMPL=([gwA]=flowsec [gwB]=flowsec)
declare -A LOCAL_ADDR=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ADDR=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_ID=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ID=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_TS=([gwA]="10.1.0.0/24" [gwB]="10.2.0.0/24")
declare -A REMOTE_TS=([gwA]="10.2.0.0/24" [gwB]="10.1.0.0/24")
declare -A UP_ARGS=([gwA]="" [gwB]="--tcp-listen")
# The attacker's addresses get half-open SAs at gwB, as any address does
# at a road-warrior gateway (remote_addrs = %any); no key takes them
# further.
ATK_NET=172.16.0.0/16
declare -A EXTRA_CONN=([gwB]="conn roadwarriors --version 2 --local-addrs $GW_B \
    --remote-addrs $ATK_NET --proposals $IKE_PROPOSAL --auth psk --local-id $GW_B --remote-id rw@flowsec.test")

echo "$IKE_TAG: gwA flowsec (initiator over TCP), gwB flowsec (--tcp-listen); 1000 connections from atk flood gwB for ${FLOOD_SECONDS}s"
e2e_init
W="$E2E_WORK"

CONN_ARGS="--tcp-encap yes" gen_swanctl_conf gwA >"$W/gwA-swanctl.conf"
gen_swanctl_conf gwB >"$W/gwB-swanctl.conf"
e2e_topology_gateway
ns_add atk
veth atk eth0 gwB eth2
addr gwB eth2 172.16.0.1/16
sysctl_ns gwB net.ipv4.conf.eth2.rp_filter=0
for ((i = 0; i < 250; i++)); do
    echo "addr add 172.16.$((1 + i / 250)).$((1 + i % 250))/16 dev eth0"
done | ns_exec atk ip -batch -
ns_exec atk ip route add default via 172.16.0.1

start_daemons
check "a. tcp_encap = yes: SAs up over TCP" up_agreed
stop_without_sas

tcp_counter() {  # tcp_counter GW NAME: the stream thread's counter
    fctl "$1" stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("tcp", {}).get(sys.argv[1], 0))' "$2"
}
ike_counter() {  # ike_counter GW NAME
    fctl "$1" stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["ike"].get(sys.argv[1], 0))' "$2"
}
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

flood_bounded() {
    local log="$W/flood.log" pid gwb before max=0 r pinged=no
    gwb=${GW_PID[gwB]}
    before=$(rss_kib "$gwb")
    start_bg atk "$log" bash -c 'ulimit -n 4096; exec python3 "$@"' _ \
        "$E2E_DIR/ike_flood.py" --tcp "$GW_B" 4500 172.16 250 4 "$FLOOD_SECONDS"
    pid=$E2E_LAST_PID
    wait_for_log "$log" '^flooding' 180 "$pid" || { show_log "$log"; return 1; }
    sed 's/^/    atk: /' "$log"
    while pid_alive "$pid"; do
        r=$(rss_kib "$gwb") || { echo "    gwB is gone"; return 1; }
        [ "$r" -gt "$max" ] && max=$r
        # Halfway through: the tunnel still carries traffic.
        if [ "$pinged" = no ] && grep -q '^flooding' "$log" &&
            [ $((SECONDS - FLOOD_T0)) -ge $((FLOOD_SECONDS / 2)) ]; then
            pinged=yes
            ping_one hostA 10.2.0.2 || pinged=failed
        fi
        sleep 0.5
    done
    sed -n 's/^flood done: /    atk: /p' "$log"
    echo "    gwB RSS: $((before / 1024)) MiB before, at most $((max / 1024)) MiB during the flood (bound ${RSS_BOUND_MIB} MiB)"
    printf '    gwB: tcp read_paused=%s ike_backpressure=%s over_budget=%s closed=%s; ike resend_limited=%s replayed=%s; ike_queue stream_full=%s\n' \
        "$(tcp_counter gwB read_paused)" "$(tcp_counter gwB ike_backpressure)" "$(tcp_counter gwB over_budget)" \
        "$(tcp_counter gwB closed)" "$(ike_counter gwB resend_limited)" "$(ike_counter gwB replayed)" \
        "$(fctl gwB stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("ike_queue", {}).get("stream_full", 0))')"
    [ "$max" -lt $((RSS_BOUND_MIB * 1024)) ] && [ "$pinged" = yes ] &&
        grep -Eq '^flooding: ([5-9][0-9]{2}|1000) connections' "$log"
}
FLOOD_T0=$SECONDS
check "b. 1000 connections write IKE_SA_INIT and never read: gwB's RSS below ${RSS_BOUND_MIB} MiB, the tunnel still up" flood_bounded

after_flood() {
    ping_both 4 && child_agreed >/dev/null
}
check "c. after the flood: the SAs still agreed, traffic both ways" after_flood

for gw in gwA gwB; do
    check "$gw: SIGTERM -> exit 0" daemon_down "$gw"
done
ike_finish
