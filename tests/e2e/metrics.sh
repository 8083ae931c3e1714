#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions called through check and poll
# End-to-end: `flowsec up --metrics` cannot hold the control thread, and
# refuses a page named by a host name (DNS rebinding). Issue 29, item 4:
# a client that sent its request one byte every 150 ms froze IKE, DPD,
# rekeys and `ctl` for minutes (the 200 ms timeout was per read).
#
#   hostA 10.1.0.2 -- gwA | 192.0.2.1 ==== 192.0.2.2 | gwB -- hostB 10.2.0.2
#
# Two flowsec gateways keyed by IKE; gwB serves --metrics on 127.0.0.1:9470.
# Checks:
#   a. the SAs up and agreed at both ends
#   b. a scrape with Host 127.0.0.1:9470 gets the page (with the page's own
#      counters); Host localhost gets it too, Host rebind.example:9470 421
#   c. while a client on gwB trickles a request one byte every 150 ms
#      (connecting again whenever it is hung up on): `flowsec ctl status`
#      on gwB answers within 2 s each time, gwB rekeys the Child SA (new
#      SPIs agreed at both ends), another scrape is answered within 5 s,
#      and the slow client is hung up on within 4 s, counted (`too_slow`
#      in `ctl stats`)
#
#   tests/e2e/metrics.sh                root; needs target/debug/flowsec
#   FLOWSEC_E2E_KEEP=1                  keep the work directory
#
# Without root or ip netns it prints "SKIP: ..." and exits 0.
set -eu -o pipefail

E2E_PREFIX="${E2E_PREFIX:-mtr$$-}"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/e2e/ike_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ike_lib.sh"
IKE_TAG="e2e metrics"
T0=$SECONDS

e2e_require_root_netns

FLOWSEC_BIN="${FLOWSEC_BIN:-$E2E_ROOT/target/debug/flowsec}"
require_flowsec "$FLOWSEC_BIN" FLOWSEC_BIN

e2e_outer v4
IKE_PROPOSAL=aes128gcm16-prfsha256-ecp256 ESP_PROPOSAL=aes128gcm16-ecp256
DPD_DELAY=30s UP_TIMEOUT=15 SA_TIMEOUT=20
CONN=gw CHILD=net TUN=fsmtr0 PSK="flowsec-e2e-metrics psk, not a secret"
RETRANSMIT_TIMEOUT=1 RETRANSMIT_BASE=1.4 RETRANSMIT_TRIES=3
INNER_FAMILIES="4"
PORT=9470
declare -A IMPL=([gwA]=flowsec [gwB]=flowsec)
declare -A LOCAL_ADDR=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ADDR=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_ID=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ID=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_TS=([gwA]="10.1.0.0/24" [gwB]="10.2.0.0/24")
declare -A REMOTE_TS=([gwA]="10.2.0.0/24" [gwB]="10.1.0.0/24")
declare -A UP_ARGS=([gwA]="" [gwB]="--metrics 127.0.0.1:$PORT")

echo "$IKE_TAG: gwA flowsec (initiator), gwB flowsec (--metrics 127.0.0.1:$PORT)"
e2e_init
W="$E2E_WORK"
e2e_need_nft
for gw in gwA gwB; do gen_swanctl_conf "$gw" >"$W/$gw-swanctl.conf"; done
e2e_topology_gateway
start_daemons

sa_agreed() { up_agreed && CUR_CHILD=$(child_agreed); }
check "a. SAs up and agreed at both ends" sa_agreed
stop_without_sas

# get HOST [SECONDS]: GET /metrics on gwB with that Host header; prints
# "STATUS BYTES SECONDS" and the body to $W/page.txt.
get() {
    ns_exec gwB python3 - "$PORT" "$1" "${2:-5}" "$W/page.txt" <<'EOF'
import http.client, sys, time
port, host, timeout, out = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
t = time.monotonic()
c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
c.putrequest("GET", "/metrics", skip_host=True)
c.putheader("Host", host)
c.endheaders()
r = c.getresponse()
body = r.read()
open(out, "wb").write(body)
print(r.status, len(body), "%.2f" % (time.monotonic() - t))
EOF
}
host_check() {
    local ok evil local_name
    ok=$(get "127.0.0.1:$PORT") || return 1
    evil=$(get "rebind.example:$PORT") || return 1
    local_name=$(get localhost) || return 1
    echo "    Host 127.0.0.1:$PORT: ${ok%% *}; Host rebind.example:$PORT: ${evil%% *}; Host localhost: ${local_name%% *}"
    [ "${ok%% *}" = 200 ] && [ "${evil%% *}" = 421 ] && [ "${local_name%% *}" = 200 ] || return 1
    # A page rendered less than 1 s ago is served again (REUSE_FOR).
    sleep 1.1
    get "127.0.0.1:$PORT" >/dev/null || return 1
    grep -q '^flowsec_metrics_events_total{event="refused_host"} 1$' "$W/page.txt" ||
        { echo "    the page does not count the refusal"; grep flowsec_metrics "$W/page.txt"; return 1; }
}
check "b. the page by address or as localhost (200); by another name (DNS rebinding): 421" host_check

# ms: milliseconds since the epoch.
ms() { date +%s%3N; }
ctl_prompt() {  # ctl_prompt N: `ctl status` on gwB N times, 0.5 s apart, each within 2 s
    local i t0 dt worst=0
    for ((i = 0; i < $1; i++)); do
        t0=$(ms)
        FLOWSEC_SOCKET="$W/gwB.sock" timeout 2 "$FLOWSEC_BIN" ctl --socket "$W/gwB.sock" status >/dev/null ||
            { echo "    ctl status: no answer within 2 s (try $((i + 1)))"; return 1; }
        dt=$(($(ms) - t0))
        [ "$dt" -gt "$worst" ] && worst=$dt
        sleep 0.5
    done
    echo "    ctl status answered $1 times, the slowest in $worst ms"
}
slow_client() {
    local pid out n first conns
    # For the whole check: hung up on, it connects again at once.
    start_bg gwB "$W/trickle.log" python3 "$E2E_TOOLS" trickle --to 127.0.0.1 --port "$PORT" \
        --every 0.15 --seconds 30 --reconnect
    pid=$E2E_LAST_PID
    wait_for_log "$W/trickle.log" 'trickle: connected' 5 "$pid" || return 1
    sleep 0.3
    ctl_prompt 4 || { stop_bg "$pid" 1; return 1; }
    child_rekeyed gwB || { stop_bg "$pid" 1; return 1; }
    out=$(get "127.0.0.1:$PORT" 5) || { echo "    a second scrape failed"; stop_bg "$pid" 1; return 1; }
    echo "    a second scrape: status ${out%% *} in ${out##* } s"
    ctl_prompt 2 || { stop_bg "$pid" 1; return 1; }
    stop_bg "$pid" 1
    first=$(grep -m1 '^{' "$W/trickle.log" | python3 -c 'import json,sys; print(json.load(sys.stdin)["hung_up_after"])') || first=None
    conns=$(grep -c 'trickle: connected' "$W/trickle.log")
    n=$(fctl gwB stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("metrics", {}).get("too_slow", 0))')
    echo "    the slow client: $conns connections, the first hung up on after $first s; too_slow=$n"
    [ "${out%% *}" = 200 ] && [ "$first" != None ] && [ "$n" -ge 1 ] &&
        python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= 4 else 1)' "$first"
}
check "c. a client trickling its request: ctl answers, gwB rekeys, another scrape is served, the client is cut off" slow_client

ike_finish
