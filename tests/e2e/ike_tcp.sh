#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions called through check and poll
# End-to-end: IKE and ESP over TCP and TLS (RFC 9329) between two flowsec
# gateways, with UDP and ESP dropped on the transit link.
#
#   hostA 10.1.0.2 -- gwA | 192.0.2.1 == TCP 4500 / TLS 443 == 192.0.2.2 | gwB -- hostB 10.2.0.2
#
# gwA initiates; an nftables table in gwA's namespace drops every UDP
# datagram and every ESP packet to or from the transit link, so only TCP
# gets through. gwB runs `flowsec up --tcp-listen --tcp-listen 443` with
# no TCP keys of its own (the initiator chooses, RFC 9329 §5). Checks:
#   a. tcp_encap = yes: the SAs come up over TCP, `ctl sas` says so at
#      both ends
#   b. ping both ways (IPv4 and IPv6 inside), a 50 MB TCP transfer with
#      its sha256; a capture of the transit link holds TCP only (no UDP,
#      no ESP), IKE and ESP framed in it (tshark's tcpencap dissector)
#   c. a CHILD_SA rekey and an IKE SA rekey over TCP under a paced UDP
#      stream: nothing lost
#   d. the TCP connection killed (ss -K) in the middle of a 50 MB transfer:
#      gwA reconnects, the IKE SA is the same, the transfer completes
#   e. hostile input on gwB's TCP port: garbage, a wrong prefix, a length
#      of 0, a length of 65535 then a close, 1000 idle connections: each
#      closed and counted, the tunnel still carries traffic
#   f. tcp_tls = yes (port 443): up over TLS; the capture holds TLS
#      records only (no "IKETCP", no IKE header, no ESP in the clear)
#   g. tcp_encap = fallback: UDP first, then over TCP after
#      tcp_fallback_time
#   h. gwB's --metrics: the Prometheus text parses (prometheus_client),
#      and its SA byte counters rise with traffic
#
#   tests/e2e/ike_tcp.sh                root; needs target/debug/flowsec
#   FLOWSEC_E2E_KEEP=1                  keep the work directory
#
# Without root or ip netns it prints "SKIP: ..." and exits 0.
set -eu -o pipefail

E2E_PREFIX="${E2E_PREFIX:-ikt$$-}"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/e2e/ike_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ike_lib.sh"
IKE_TAG="e2e ike tcp"
# tshark without TCP reassembly: each segment on its own, in a second for
# a capture of a 50 MB transfer (with reassembly one capture took minutes).
frames() {  # frames PCAP [FILTER]
    tshark -o tcp.desegment_tcp_streams:FALSE -n -r "$1" ${2:+-Y "$2"} 2>/dev/null | wc -l
}
T0=$SECONDS

e2e_require_root_netns

FLOWSEC_BIN="${FLOWSEC_BIN:-$E2E_ROOT/target/debug/flowsec}"
require_flowsec "$FLOWSEC_BIN" FLOWSEC_BIN
for tool in tcpdump tshark nft ss; do
    command -v "$tool" >/dev/null || { echo "FAIL: $tool not installed (scripts/test.sh installs it)"; exit 1; }
done

e2e_outer v4
IKE_PROPOSAL=aes128gcm16-prfsha256-ecp256 ESP_PROPOSAL=aes128gcm16-ecp256
DPD_DELAY=30s UP_TIMEOUT=15 SA_TIMEOUT=20
CONN=gw CHILD=net TUN=fsikt0 PSK="flowsec-e2e-ike-tcp psk, not a secret"
RETRANSMIT_TIMEOUT=1 RETRANSMIT_BASE=1.4 RETRANSMIT_TRIES=3
INNER_FAMILIES="4 6"
declare -A IMPL=([gwA]=flowsec [gwB]=flowsec)
declare -A LOCAL_ADDR=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ADDR=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_ID=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ID=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_TS=([gwA]="10.1.0.0/24,2001:db8:1::/64" [gwB]="10.2.0.0/24,2001:db8:2::/64")
declare -A REMOTE_TS=([gwA]="10.2.0.0/24,2001:db8:2::/64" [gwB]="10.1.0.0/24,2001:db8:1::/64")
declare -A UP_ARGS=([gwA]="" [gwB]="--tcp-listen --tcp-listen 443 --metrics 127.0.0.1:9469")

echo "$IKE_TAG: gwA flowsec (initiator over TCP), gwB flowsec (--tcp-listen 4500, 443); UDP and ESP dropped"
e2e_init
W="$E2E_WORK"

# gwA's swanctl.conf with these connection keys (lab conf words).
gwa_conf() {  # gwa_conf "--KEY VALUE..."
    CONN_ARGS="$1" gen_swanctl_conf gwA
}
gwa_conf "--tcp-encap yes" >"$W/gwA-swanctl.conf"
gen_swanctl_conf gwB >"$W/gwB-swanctl.conf"
grep -q 'tcp_encap = yes' "$W/gwA-swanctl.conf" || { echo "FAIL: tcp_encap not in gwA's swanctl.conf"; exit 1; }
e2e_topology_gateway

# Only TCP passes the transit link (both directions, both families).
ns_exec gwA nft -f - <<'EOF'
table inet e2e_block {
    chain out { type filter hook output priority 0; oifname "eth1" meta l4proto { udp, esp } counter drop; }
    chain in { type filter hook input priority 0; iifname "eth1" meta l4proto { udp, esp } counter drop; }
}
EOF
blocked() { ns_exec gwA nft list table inet e2e_block | grep -o 'packets [0-9]*' | awk '{s += $2} END {print s + 0}'; }

start_daemons
transport_is() {  # transport_is GW TCP|TLS: GW's IKE SA runs over it
    fctl "$1" sas --json | python3 -c '
import json, sys
sas = [s for s in json.load(sys.stdin)["ike_sas"] if s["state"] == "ESTABLISHED"]
sys.exit(0 if len(sas) == 1 and sas[0]["transport"] == sys.argv[1] else 1)' "$2"
}
up_over() {  # up_over TCP|TLS: gwA initiates; agreed SAs, over that transport at both ends
    up_agreed || return 1
    poll 5 transport_is gwA "$1" >/dev/null && poll 5 transport_is gwB "$1" >/dev/null ||
        { echo "    not over $1 at both ends"; show_ctl_sas gwA 8; show_ctl_sas gwB 8; return 1; }
    show_ctl_sas gwB 6
    CUR_CHILD=$(child_agreed)
}
check "a. tcp_encap = yes: SAs up over TCP at both ends (UDP and ESP dropped)" up_over TCP
stop_without_sas

BYTES=50000000
tcp_only_capture() {
    local pcap="$W/tcp.pcap" total udp esp framed
    start_capture gwA eth1 "$pcap" || return 1
    ping_both 4 6 || { stop_bg "$TCPDUMP_PID" 2; return 1; }
    tcp_transfer hostA hostB 10.2.0.2 "$BYTES" || { stop_bg "$TCPDUMP_PID" 2; return 1; }
    sleep 0.3
    stop_bg "$TCPDUMP_PID" 2
    total=$(frames "$pcap" "not ($NOISE_FILTER)")
    udp=$(frames "$pcap" udp)
    esp=$(frames "$pcap" "esp and not tcp")
    framed=$(frames "$pcap" "tcp.port == 4500 and tcp.len > 0")
    echo "    capture: $total frames, $framed TCP 4500 segments with data, $udp UDP, $esp bare ESP; $(blocked) dropped by the block"
    [ "$udp" -eq 0 ] && [ "$esp" -eq 0 ] && [ "$framed" -gt 1000 ] &&
        [ "$(frames "$pcap" "not ($NOISE_FILTER) and not tcp.port == 4500")" -eq 0 ]
}
check "b. ping v4/v6 and $BYTES bytes hostA -> hostB (sha256) over TCP; the capture: TCP 4500 only" tcp_only_capture

# A paced UDP stream across a rekey of gwA's: nothing lost.
rekey_lossless() {  # rekey_lossless child|ike
    local stream="$W/rekey-$1.json" streamer loss
    ns_exec hostA "$FLOWSEC_BIN" perf client -H 10.2.0.2 -t CBR --rate 20M -m 1000 -l 4 --json >"$stream" 2>&1 &
    streamer=$!
    sleep 1
    case "$1" in
        child) child_rekeyed gwA || { wait "$streamer"; return 1; } ;;
        ike) ike_rekeyed gwA || { wait "$streamer"; return 1; } ;;
    esac
    wait "$streamer" || { show_log "$stream" 5; return 1; }
    loss=$(cbr_loss "$stream")
    echo "    CBR 20 Mbit/s of 1000 B across the rekey: lost/received $loss"
    [ "${loss%% *}" -eq 0 ] && transport_is gwB TCP
}
start_bg hostB "$W/perf-server.log" "$FLOWSEC_BIN" perf server --bind 10.2.0.2
wait_for_log "$W/perf-server.log" 'listening' 5 "$E2E_LAST_PID" || show_log "$W/perf-server.log"
check "c. CHILD_SA rekey over TCP under a CBR stream: nothing lost" rekey_lossless child
check "c. IKE SA rekey over TCP under a CBR stream: nothing lost, still over TCP" rekey_lossless ike

# h. gwB's --metrics: the Prometheus text parses (prometheus_client, an
# independent parser), the families are there, and the SA byte counters
# rise with traffic.
prom_python() {  # a python3 that has prometheus_client (Debian's python3-prometheus-client)
    local p
    for p in python3 /usr/bin/python3; do
        "$p" -c 'import prometheus_client' 2>/dev/null && { echo "$p"; return 0; }
    done
    return 1
}
scrape() {  # scrape PY: "SA_BYTES SAMPLES", after parsing every family
    ns_exec gwB "$1" - <<'EOF'
import sys, urllib.request
from prometheus_client.parser import text_string_to_metric_families
text = urllib.request.urlopen("http://127.0.0.1:9469/metrics", timeout=5).read().decode()
fams = {f.name: f for f in text_string_to_metric_families(text)}
need = ["flowsec_sa_bytes", "flowsec_sa_packets", "flowsec_drops", "flowsec_worker_events",
        "flowsec_ike_events", "flowsec_child_rekeys", "flowsec_ike_sas", "flowsec_child_sas",
        "flowsec_tcp_events"]
missing = [n for n in need if n not in fams]
if missing:
    sys.exit("missing families: %s (have %s)" % (missing, sorted(fams)))
ike = {s.labels["state"]: s.value for s in fams["flowsec_ike_sas"].samples}
assert ike.get("ESTABLISHED", 0) >= 1, ike
print(int(sum(s.value for s in fams["flowsec_sa_bytes"].samples if s.name.endswith("_total"))),
      sum(len(f.samples) for f in fams.values()))
EOF
}
metrics_parse_and_rise() {
    local py before after
    py=$(prom_python) || { echo "    SKIP: no python3 with prometheus_client (apt install python3-prometheus-client)"; return 0; }
    before=$(scrape "$py") || return 1
    tcp_transfer hostA hostB 10.2.0.2 5000000 >/dev/null || return 1
    # A page rendered less than 1 s ago is served again (metrics REUSE_FOR).
    sleep 1.1
    after=$(scrape "$py") || return 1
    echo "    gwB's metrics parse (prometheus_client): SA bytes ${before%% *} -> ${after%% *}; ${after##* } samples"
    [ "${after%% *}" -gt "$((${before%% *} + 5000000))" ]
}
check "h. --metrics: Prometheus text parses, SA byte counters rise with a 5 MB transfer" metrics_parse_and_rise

tcp_counter() {  # tcp_counter GW NAME: the stream thread's counter
    fctl "$1" stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("tcp", {}).get(sys.argv[1], 0))' "$2"
}
ike_counter() {  # ike_counter GW NAME
    fctl "$1" stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["ike"][sys.argv[1]])' "$2"
}
reconnect_mid_transfer() {
    local before after pid ok=0
    before=$(ike_spis gwA) || return 1
    # Long enough to be cut: 400 MB (about 3 s here in a debug build).
    tcp_transfer hostA hostB 10.2.0.2 400000000 >"$W/killed-transfer.log" 2>&1 &
    pid=$!
    sleep 0.7
    kill -0 "$pid" 2>/dev/null || { echo "    the transfer ended before the kill"; cat "$W/killed-transfer.log"; return 1; }
    ns_exec gwA ss -K -t dst "$GW_B" dport = 4500 >/dev/null 2>&1
    kill -0 "$pid" 2>/dev/null || { echo "    the transfer ended before the kill"; cat "$W/killed-transfer.log"; return 1; }
    echo "    gwA: killed its TCP connection to $GW_B:4500 (ss -K) during the transfer"
    wait "$pid" || ok=1
    cat "$W/killed-transfer.log"
    after=$(poll 10 ike_agreed) || { echo "    no IKE SA after the reconnect"; return 1; }
    echo "    IKE SPIs $before -> $after; gwA reconnects=$(ike_counter gwA reconnects), gwB accepted=$(tcp_counter gwB accepted)"
    [ "$before" = "$after" ] && [ "$(ike_counter gwA reconnects)" -ge 1 ] && [ "$ok" -eq 0 ] && ping_both 4
}
check "d. the TCP connection killed mid-transfer: gwA reconnects, the same IKE SA, the transfer completes" reconnect_mid_transfer

hostile_input() {
    local before_ok
    # 1000 sockets and more: above the default limit of 1024 descriptors.
    ns_exec gwA bash -c 'ulimit -n 4096; exec python3 - "$1"' _ "$GW_B" <<'EOF' || return 1
import socket, struct, sys, time
peer = (sys.argv[1], 4500)
def conn(first):
    s = socket.create_connection(peer, timeout=5)
    if first:
        s.sendall(first)
    return s
def closed_by_peer(s):
    s.settimeout(5)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False
cases = {
    "garbage": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    "wrong prefix": b"IKEUDP" + struct.pack("!H", 10) + b"\0" * 8,
    "length 0": b"IKETCP\x00\x00",
}
for name, data in cases.items():
    s = conn(data)
    print("    %-13s -> %s" % (name, "closed by gwB" if closed_by_peer(s) else "STILL OPEN"))
    if not closed_by_peer(s):
        sys.exit(1)
# A length of 65535, a few bytes of it, then our close: nothing to see.
s = conn(b"IKETCP" + struct.pack("!H", 65535) + b"\x01" * 100)
s.close()
# 1000 idle connections: gwB keeps at most 32 from one address (256 quiet
# ones in all), closing the rest at once and the kept ones after 10 s.
idle = []
for _ in range(1000):
    try:
        idle.append(socket.create_connection(peer, timeout=2))
    except OSError:
        break
print("    opened %d idle connections; waiting for gwB to close the quiet ones" % len(idle))
time.sleep(12)
for s in idle:
    s.close()
EOF
    local c
    for c in bad_prefix bad_length refused quiet_closed; do
        printf '    gwB tcp %s=%s\n' "$c" "$(tcp_counter gwB "$c")"
    done
    [ "$(tcp_counter gwB bad_prefix)" -ge 2 ] && [ "$(tcp_counter gwB bad_length)" -ge 1 ] &&
        [ "$(tcp_counter gwB refused)" -ge 900 ] && [ "$(tcp_counter gwB quiet_closed)" -ge 25 ] &&
        ping_both 4 && transport_is gwB TCP
}
check "e. hostile input on gwB's TCP port: closed and counted, the tunnel still up" hostile_input

# gwA again with other keys: the SAs down first, then a fresh daemon.
restart_gwa() {  # restart_gwa "KEYS"
    terminate_ike gwA >/dev/null 2>&1 || true
    poll 10 no_ike >/dev/null || true
    daemon_down gwA || return 1
    gwa_conf "$1" >"$W/gwA-swanctl.conf"
    start_daemon gwA
}
tls_only_capture() {
    local pcap="$W/tls.pcap" tls total iketcp isakmp esp
    restart_gwa "--tcp-encap yes --tcp-tls yes" || return 1
    start_capture gwA eth1 "$pcap" || return 1
    up_over TLS || { stop_bg "$TCPDUMP_PID" 2; return 1; }
    ping_both 4 6 && tcp_transfer hostA hostB 10.2.0.2 10000000 || { stop_bg "$TCPDUMP_PID" 2; return 1; }
    sleep 0.3
    stop_bg "$TCPDUMP_PID" 2
    total=$(frames "$pcap" "tcp.port == 443 and tcp.len > 0")
    tls=$(frames "$pcap" "tls.record")
    isakmp=$(frames "$pcap" "isakmp or tcpencap")
    esp=$(frames "$pcap" esp)
    iketcp=$(tcpdump -n -r "$pcap" -A 2>/dev/null | grep -c IKETCP || true)
    # Segments are read one by one (no reassembly): a record that spans
    # segments shows at the first; "IKETCP" is looked for in every byte.
    echo "    capture: $total TCP 443 segments with data, $tls starting TLS records; IKE/tcpencap $isakmp, ESP $esp, 'IKETCP' $iketcp; TLS $(tshark -o tcp.desegment_tcp_streams:FALSE -n -r "$pcap" -Y tls.handshake.type==2 -T fields -e tls.handshake.extensions.supported_version 2>/dev/null | head -1)"
    [ "$total" -gt 500 ] && [ "$tls" -gt 50 ] && [ "$isakmp" -eq 0 ] && [ "$esp" -eq 0 ] && [ "$iketcp" -eq 0 ]
}
check "f. tcp_tls = yes: up over TLS on 443; the capture holds TLS records only" tls_only_capture

fallback() {
    local t=$SECONDS
    restart_gwa "--tcp-encap fallback --tcp-fallback-time 3s" || return 1
    up_over TCP || return 1
    grep -F 'trying again over TCP' "$(log_of gwA)" | tail -n 1 | sed 's/^/    gwA: /'
    echo "    up over TCP $((SECONDS - t)) s after the restart; gwA tcp_fallbacks=$(ike_counter gwA tcp_fallbacks)"
    [ "$(ike_counter gwA tcp_fallbacks)" -ge 1 ] && ping_both 4
}
check "g. tcp_encap = fallback: no answer over UDP, then up over TCP" fallback

for gw in gwA gwB; do
    check "$gw: SIGTERM -> exit 0" daemon_down "$gw"
done
ike_finish
