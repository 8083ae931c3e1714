#!/usr/bin/env bash
# shellcheck disable=SC2317,SC2119,SC2120,SC2015  # functions called through check and poll
# End-to-end MOBIKE (RFC 4555): gwA, the initiator, has two uplinks and
# loses the address of the first while hostA streams to hostB; the IKE SA
# and its Child SA follow it to the second without a new handshake.
#
#   hostA 10.1.0.2 -- 10.1.0.1 gwA  eth1 198.51.100.2 -- 198.51.100.1 r
#                                   eth2 203.0.113.2  -- 203.0.113.1  r 192.0.2.1 -- 192.0.2.2 gwB 10.2.0.1 -- hostB 10.2.0.2
#
# gwA's default route prefers eth1 (metric 100) to eth2 (200); gwA has no
# fixed local address (local_addrs = %any): the kernel's route says. gwA
# and gwB are flowsec or strongSwan 5.9.8 (charon-systemd with
# kernel-libipsec), `mobike` at its default (yes) at both ends.
# FLOWSEC_MOBIKE_NAT=1: r masquerades what comes from the first path, so
# the move goes from behind a NAT to a direct path (ESP in UDP, then raw).
#
# Checks, one PASS/FAIL line each:
#   a. SAs up and agreed at both ends, gwA on its first path (and behind
#      the NAT, ESP in UDP, with FLOWSEC_MOBIKE_NAT=1)
#   b. ping hostA <-> hostB both ways
#   c. the move, under a paced UDP stream hostA -> hostB (100 datagrams a
#      second for 12 s): 3 s in, gwA's first address goes (ip addr del).
#      The IKE SA keeps its SPIs at both ends and gwB has gwA at its new
#      address; the Child SA keeps its SPIs when flowsec is at both ends,
#      a strongSwan end rekeys it (kernel-libipsec cannot update an SA,
#      charon rekeys it instead: ike_sa.c update_hosts); the stream
#      resumes (its last datagram arrives). The loss and the longest gap
#      between arrivals are reported.
#   d. ping both ways after the move; raw ESP on the direct path at both
#      ends (MOBIKE's NAT detection on the new path turned ESP in UDP off),
#      ESP in UDP with a strongSwan end (kernel-libipsec fakes its NAT
#      detection to have it on every path)
#   e. the transit link to gwB: after the move, gwA's INFORMATIONAL
#      requests (probes, UPDATE_SA_ADDRESSES) come from its new address to
#      gwB's port 4500; no plaintext (10.x) crosses it at any time
#
#   tests/e2e/ike_mobike.sh                   root; flowsec at both ends
#   FLOWSEC_MOBIKE_LEFT=flowsec|strongswan    gwA, the initiator that moves
#   FLOWSEC_MOBIKE_RIGHT=flowsec|strongswan   gwB, the responder that follows
#   FLOWSEC_MOBIKE_NAT=1                      the first path is behind a NAT
#   FLOWSEC_BIN=PATH             the flowsec binary (default target/debug/flowsec)
#   FLOWSEC_IKE_NO_INSTALL=1     never apt-get install strongSwan/tshark
#   FLOWSEC_IKE_CHARON_DEBUG=... as in tests/e2e/ike.sh
#   FLOWSEC_E2E_KEEP=1           keep the work directory (configs, logs, captures)
#
# Without root or ip netns it prints "SKIP: ..." and exits 0; exit status 1
# when any check fails (the daemons' logs are printed then).
set -eu -o pipefail

E2E_PREFIX="${E2E_PREFIX:-mobike$$-}"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/e2e/ike_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ike_lib.sh"
IKE_TAG="e2e ike-mobike" INNER_FAMILIES=4

e2e_require_root_netns

LEFT="${FLOWSEC_MOBIKE_LEFT:-flowsec}"
RIGHT="${FLOWSEC_MOBIKE_RIGHT:-flowsec}"
NATTED="${FLOWSEC_MOBIKE_NAT:-0}"
for impl in "$LEFT" "$RIGHT"; do
    case "$impl" in
        strongswan|flowsec) ;;
        *) echo "FAIL: FLOWSEC_MOBIKE_LEFT/RIGHT=$impl (strongswan or flowsec)"; exit 1 ;;
    esac
done
if [ "$NATTED" = 1 ] && ! command -v nft >/dev/null 2>&1; then
    echo "SKIP: needs nft (nftables) for the NAT"
    exit 0
fi
FLOWSEC_BIN="${FLOWSEC_BIN:-$E2E_ROOT/target/debug/flowsec}"
IKE_PROPOSAL=aes128gcm16-prfsha256-ecp256
ESP_PROPOSAL=aes128gcm16-ecp256
UP_TIMEOUT=15 SA_TIMEOUT=20 DPD_DELAY=10s GWA_ROLE="initiator with two uplinks (MOBIKE)"
CONN=gw CHILD=net TUN=fsmob0
PSK="flowsec-e2e-ike-mobike psk, not a secret"
RETRANSMIT_TIMEOUT=1 RETRANSMIT_BASE=1.4 RETRANSMIT_TRIES=3
GWA1=198.51.100.2 R1=198.51.100.1 GWA2=203.0.113.2 R2=203.0.113.1 R_PUB=192.0.2.1 GWB_PUB=192.0.2.2
STREAM_COUNT=1200 STREAM_RATE=100 STREAM_SIZE=200 MOVE_AFTER=3

if [ "$LEFT" = strongswan ] || [ "$RIGHT" = strongswan ]; then
    install_strongswan || { echo "FAIL: strongSwan is not installed (apt-get install ${STRONGSWAN_PKGS[*]})"; exit 1; }
fi
install_capture_tools
require_flowsec "$FLOWSEC_BIN" FLOWSEC_BIN

first_path="direct"
[ "$NATTED" = 1 ] && first_path="behind r's NAT"
echo "e2e ike-mobike: gwA (initiator, moves) $LEFT, gwB (responder) $RIGHT; first path $first_path; IKE $IKE_PROPOSAL, ESP $ESP_PROPOSAL"
e2e_init
W="$E2E_WORK"
T0=$SECONDS

declare -A IMPL=([gwA]="$LEFT" [gwB]="$RIGHT")
declare -A LOCAL_ADDR=([gwA]="%any" [gwB]="$GWB_PUB")
declare -A REMOTE_ADDR=([gwA]="$GWB_PUB" [gwB]="%any")
declare -A LOCAL_ID=([gwA]=gwa.mobike.test [gwB]=gwb.mobike.test)
declare -A REMOTE_ID=([gwA]=gwb.mobike.test [gwB]=gwa.mobike.test)
declare -A LOCAL_TS=([gwA]=10.1.0.0/24 [gwB]=10.2.0.0/24)
declare -A REMOTE_TS=([gwA]=10.2.0.0/24 [gwB]=10.1.0.0/24)

for gw in gwA gwB; do
    gen_swanctl_conf "$gw" >"$W/$gw-swanctl.conf"
    [ "${IMPL[$gw]}" = strongswan ] && gen_strongswan_conf "$gw" >"$W/$gw-strongswan.conf"
done

# -------------------------------------------------------------------- topology
for n in hostA gwA r gwB hostB; do ns_add "$n"; done
veth hostA eth0 gwA eth0
veth gwA eth1 r eth0
veth gwA eth2 r eth1
veth r eth2 gwB eth1
veth gwB eth0 hostB eth0
addr hostA eth0 10.1.0.2/24
addr gwA eth0 10.1.0.1/24
addr gwA eth1 "$GWA1/24"
addr gwA eth2 "$GWA2/24"
addr r eth0 "$R1/24"
addr r eth1 "$R2/24"
addr r eth2 "$R_PUB/24"
addr gwB eth1 "$GWB_PUB/24"
addr gwB eth0 10.2.0.1/24
addr hostB eth0 10.2.0.2/24
ns_exec hostA ip route add default via 10.1.0.1
ns_exec hostB ip route add default via 10.2.0.1
ns_exec gwA ip route add default via "$R1" dev eth1 metric 100
ns_exec gwA ip route add default via "$R2" dev eth2 metric 200
ns_exec gwB ip route add default via "$R_PUB"
for n in gwA r gwB; do
    sysctl_ns "$n" net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
done
for l in hostA:eth0 gwA:eth0 gwA:eth1 gwA:eth2 r:eth0 r:eth1 r:eth2 gwB:eth1 gwB:eth0 hostB:eth0; do
    disable_offloads "${l%%:*}" "${l#*:}"
done
if [ "$NATTED" = 1 ]; then
    ns_exec r nft -f - <<EOF || { echo "FAIL: nft: cannot set up the NAT"; exit 1; }
table ip nat {
    chain post {
        type nat hook postrouting priority 100; policy accept;
        iifname "eth0" oifname "eth2" meta l4proto { tcp, udp } masquerade to :20000-30000 random
        iifname "eth0" oifname "eth2" masquerade
    }
}
EOF
fi
# strongSwan's kernel-libipsec fakes its NAT detection so that ESP goes in
# UDP whatever the path (its ESP has no raw socket): with a strongSwan end
# the Child SA is ESP in UDP on both paths.
ENCAP_DIRECT=False
[ "$LEFT" = strongswan ] || [ "$RIGHT" = strongswan ] && ENCAP_DIRECT=True
# Where gwB sees gwA before and after the move.
BEFORE_HOST="$GWA1"
[ "$NATTED" = 1 ] && BEFORE_HOST="$R_PUB"
AFTER_HOST="$GWA2"

start_daemons
start_capture r eth2 "$W/transit.pcap"

# The endpoints each side uses, one line each.
endpoints() {
    local gw
    for gw in gwA gwB; do
        sas "$gw" '"%s: %s:%s -> %s:%s nat %s, child encap %s" % (gw, ike["local_host"], ike["local_port"],
            ike["remote_host"], ike["remote_port"], ike["nat"], child["encap"] if child else "-")' |
            sed 's/^/    /' || echo "    $gw: no IKE SA"
    done
}

# ----------------------------------------------------------- (a) SAs come up
first_path_up() {
    local ok=0 encap="$ENCAP_DIRECT"
    sa_up || return 1
    endpoints
    [ "$NATTED" = 1 ] && encap=True
    sas gwB 'ike["remote_host"] == "'"$BEFORE_HOST"'"' || { echo "    gwB: expected gwA at $BEFORE_HOST"; ok=1; }
    sas gwA 'ike["local_host"] == "'"$GWA1"'"' || { echo "    gwA: expected its first address $GWA1"; ok=1; }
    for gw in gwA gwB; do
        sas "$gw" 'child["encap"] == '"$encap" || { echo "    $gw: Child SA encap is not $encap"; ok=1; }
    done
    return "$ok"
}
check "a. IKE SA and Child SA up and agreed, gwA on its first path ($first_path)" first_path_up
stop_without_sas
check "b. ping hostA <-> hostB, both ways" ping_both

# --------------------------------------------------------------- (c) the move
IKE_BEFORE=$(ike_agreed || true)
CHILD_BEFORE=$(child_agreed || true)
STREAM=""
moved() {
    sas gwB 'ike["remote_host"] == "'"$AFTER_HOST"'"' && sas gwA 'ike["local_host"] == "'"$AFTER_HOST"'"'
}
wait_exit() {  # wait_exit PID TIMEOUT_S: until PID ends by itself (then stopped)
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        pid_alive "$1" || break
        sleep 0.1
    done
    stop_bg "$1" 2 || true
}
move_under_stream() {
    local recv_log="$W/stream-recv.log" send_log="$W/stream-send.log" t ike child ok=0 rpid spid
    start_bg hostB "$recv_log" python3 "$E2E_TOOLS" dgram-recv --bind 10.2.0.2 --port 5010 \
        --size "$STREAM_SIZE" --count "$STREAM_COUNT" --seconds $((STREAM_COUNT / STREAM_RATE + 6))
    rpid=$E2E_LAST_PID
    wait_for_log "$recv_log" 'listening' 5 "$rpid" || { show_log "$recv_log"; return 1; }
    start_bg hostA "$send_log" python3 "$E2E_TOOLS" dgram-send --to 10.2.0.2 --port 5010 \
        --size "$STREAM_SIZE" --count "$STREAM_COUNT" --rate "$STREAM_RATE"
    spid=$E2E_LAST_PID
    sleep "$MOVE_AFTER"
    t=$SECONDS
    echo "    $(date +%T) gwA: ip addr del $GWA1/24 dev eth1 (its first path goes; the route via eth2 remains)"
    ns_exec gwA ip addr del "$GWA1/24" dev eth1
    if poll "$SA_TIMEOUT" moved >/dev/null; then
        echo "    both ends on the new path within $((SECONDS - t)) s"
    else
        echo "    not moved within ${SA_TIMEOUT}s"; endpoints; ok=1
    fi
    # The stream ends by itself (the sender after its count, the receiver
    # once all arrived or its time is up).
    wait_exit "$spid" $((STREAM_COUNT / STREAM_RATE + 10))
    wait_exit "$rpid" 20
    STREAM=$(grep -o '{.*}' "$recv_log" | tail -n 1) || STREAM=""
    endpoints
    ike=$(poll 5 ike_agreed) || { echo "    IKE SA not agreed after the move"; show_sas; return 1; }
    if [ "$ike" = "$IKE_BEFORE" ]; then
        echo "    IKE SA kept: SPIs $ike"
    else
        echo "    IKE SA replaced: $IKE_BEFORE -> $ike"; ok=1
    fi
    child=$(poll "$SA_TIMEOUT" child_agreed) || { echo "    no agreed Child SA after the move"; show_sas; return 1; }
    if [ "$child" = "$CHILD_BEFORE" ]; then
        echo "    Child SA kept: SPIs (gwA in/out) $child"
    elif [ "$LEFT" = strongswan ] || [ "$RIGHT" = strongswan ]; then
        echo "    Child SA rekeyed by the strongSwan end (kernel-libipsec cannot update an SA): $CHILD_BEFORE -> $child"
    else
        echo "    Child SA replaced: $CHILD_BEFORE -> $child (flowsec at both ends keeps it)"; ok=1
    fi
    [ -n "$STREAM" ] || { echo "    no result from the stream's receiver"; show_log "$recv_log"; return 1; }
    python3 - "$STREAM" "$STREAM_COUNT" "$STREAM_RATE" <<'EOF' || ok=1
import json, sys
r, count, rate = json.loads(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
print("    stream: %d of %d datagrams arrived, %d lost (%.0f ms at %g/s), longest gap %.0f ms, last #%d"
      % (r["whole"], count, r["lost"], r["lost"] * 1000 / rate, rate, r["max_gap_ms"], r["last"]))
sys.exit(0 if r["last"] == count - 1 and r["bad"] == 0 else 1)
EOF
    return "$ok"
}
check "c. gwA's first address goes under a paced stream: the IKE SA follows with its SPIs, the Child SA too, the stream resumes" \
    move_under_stream
STREAM_LINE="$STREAM"

# --------------------------------------------------------- (d) after the move
encap_after() {
    local ok=0 gw
    for gw in gwA gwB; do
        sas "$gw" 'child["encap"] == '"$ENCAP_DIRECT" || { echo "    $gw: the Child SA's encap is not $ENCAP_DIRECT on the direct path"; ok=1; }
    done
    return "$ok"
}
check "d. ping hostA <-> hostB after the move, both ways" ping_both
if [ "$ENCAP_DIRECT" = True ]; then
    check "d. ESP in UDP on the direct path at both ends (strongSwan's kernel-libipsec asks for it)" encap_after
else
    check "d. raw ESP on the direct path at both ends" encap_after
fi

# ------------------------------------------------------------- (e) capture
stop_bg "$TCPDUMP_PID" 3
transit_check() {
    local pcap="$W/transit.pcap" updates plain esp_old
    [ -s "$pcap" ] || { echo "    no capture"; return 1; }
    updates=$(frames "$pcap" "ip.src == $AFTER_HOST and udp.dstport == 4500 and isakmp.exchangetype == 37")
    plain=$(frames "$pcap" "ip.addr == 10.0.0.0/8")
    esp_old=$(frames "$pcap" "esp and ip.src == $GWB_PUB and ip.dst == $BEFORE_HOST")
    echo "    $(frames "$pcap") frames: $updates INFORMATIONAL from gwA's new address $AFTER_HOST to gwB:4500, $plain plaintext, $esp_old ESP from gwB still to the old $BEFORE_HOST"
    [ "$plain" -eq 0 ] || { tshark -n -r "$pcap" -Y "ip.addr == 10.0.0.0/8" 2>/dev/null | head -5 | sed 's/^/    /'; return 1; }
    [ "$updates" -gt 0 ]
}
check_needs tshark "e. transit link: gwA's INFORMATIONAL from its new address to gwB:4500, no plaintext" transit_check
for gw in gwA gwB; do
    if [ "${IMPL[$gw]}" = flowsec ]; then
        grep -E 'moved from|MOBIKE|COOKIE2' "$(log_of "$gw")" | tail -n 3 | sed "s/^/    $gw log: /" || true
    else
        grep -E 'MOBIKE|path|remote endpoint changed|rekeying' "$(log_of "$gw")" | tail -n 4 | sed "s/^/    $gw log: /" || true
    fi
done
echo "    stream: $STREAM_LINE"

ike_finish
