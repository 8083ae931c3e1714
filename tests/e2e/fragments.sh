#!/usr/bin/env bash
# End-to-end: fragments under a policy that names ports (RFC 4301 §7).
#
#   hostA 10.1.0.2 -- gwA | 192.0.2.1 == ESP == 192.0.2.2 | gwB -- hostB 10.2.0.2
#
# The only PROTECT policy covers UDP to port 5004. 4000-byte datagrams to
# that port leave the sender as IP fragments, and a later fragment carries
# no ports: looked up by (0, 0) it matches no policy and used to go out in
# the clear. Checks, over IPv4 and IPv6 inner (tunnel) or outer (transport)
# headers: every datagram arrives whole; a capture of the transit link holds
# no plaintext fragment and no plaintext datagram to port 5004; gwA counted
# the fragments it held for a whole lookup. A plain UDP datagram to another
# port still goes in the clear (no policy covers it: setkey's default).
#
#   tests/e2e/fragments.sh                    root; needs target/debug/flowsec
#   FLOWSEC_E2E_MODE=transport ...            gwA -> gwB themselves, transport mode
#   FLOWSEC_E2E_ESP_RECEIVE=raw ...           --esp-receive raw (default: fanout)
#   FLOWSEC_E2E_KEEP=1                        keep the work directory
#
# Without root or ip netns it prints "SKIP: ..." and exits 0.
set -eu -o pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

e2e_require_root_netns

FLOWSEC="${FLOWSEC:-$E2E_ROOT/target/debug/flowsec}"
MODE="${FLOWSEC_E2E_MODE:-tunnel}"
COUNT=60
require_flowsec "$FLOWSEC" FLOWSEC
command -v tcpdump >/dev/null || { echo "FAIL: tcpdump not installed (scripts/test.sh installs it)"; exit 1; }

e2e_init
W="$E2E_WORK"
e2e_topology_gateway
# Routes between the sites in the main table, for what no policy covers
# (flowsec's own table, consulted first, takes the protected traffic).
e2e_standin_routes
echo "e2e fragments: $MODE mode, $FLOWSEC"

KEY=0x000102030405060708090a0b0c0d0e0f10111213
KEY6=0x202122232425262728292a2b2c2d2e2f30313233
case "$MODE" in
    tunnel)
        FROM=hostA TO=hostB DSTS="10.2.0.2 2001:db8:2::2"
        for gw in gwA gwB; do
            if [ $gw = gwA ]; then dir=out; else dir=fwd; fi
            cat >"$W/$gw.setkey" <<EOF
add 192.0.2.1 192.0.2.2 esp 0x1001 -m tunnel -r 64 -E aes-gcm-16 $KEY;
add 2001:db8::1 2001:db8::2 esp 0x1002 -m tunnel -r 64 -E aes-gcm-16 $KEY6;
spdadd 10.1.0.0/24[any] 10.2.0.0/24[5004] udp -P $dir ipsec esp/tunnel/192.0.2.1-192.0.2.2/require;
spdadd 2001:db8:1::/64[any] 2001:db8:2::/64[5004] udp -P $dir ipsec esp/tunnel/2001:db8::1-2001:db8::2/require;
EOF
        done ;;
    transport)
        FROM=gwA TO=gwB DSTS="192.0.2.2 2001:db8::2"
        for gw in gwA gwB; do
            if [ $gw = gwA ]; then dir=out; else dir=in; fi
            cat >"$W/$gw.setkey" <<EOF
add 192.0.2.1 192.0.2.2 esp 0x1001 -r 64 -E aes-gcm-16 $KEY;
add 2001:db8::1 2001:db8::2 esp 0x1002 -r 64 -E aes-gcm-16 $KEY6;
spdadd 192.0.2.1[any] 192.0.2.2[5004] udp -P $dir ipsec esp/transport//require;
spdadd 2001:db8::1[any] 2001:db8::2[5004] udp -P $dir ipsec esp/transport//require;
EOF
        done ;;
    *) echo "FAIL: FLOWSEC_E2E_MODE=$MODE (tunnel or transport)"; exit 1 ;;
esac

for gw in gwA gwB; do
    # The fanout group takes unfragmented ESP; the kernel reassembles the
    # ESP fragments for the raw sockets (issue 34).
    check "$gw: flowsec up" daemon_up "$gw" "$W/$gw.log" "$FLOWSEC" up --tun fsec0 --setkey "$W/$gw.setkey" --socket "$W/$gw.sock" \
        --esp-receive "${FLOWSEC_E2E_ESP_RECEIVE:-fanout}"
done
[ "$E2E_FAILED" -eq 0 ] || e2e_finish

# Neighbours resolved and, for IPv6, the path MTU into the TUN learnt
# first (an IPv6 router answers a too-big fragment with Packet Too Big,
# RFC 8201, and the sender's first datagram is lost): large datagrams to
# a port no policy covers, in the clear, before the capture starts. The
# capture waits until they arrived (or 3 s passed): a datagram held while
# the transit neighbour is resolved would otherwise cross it in the clear
# once the capture runs.
for dst in $DSTS; do
    start_bg "$TO" "$W/warm-up-$dst.json" python3 "$E2E_TOOLS" dgram-recv --bind "$dst" --port 9 --size 3000 --count 2 --seconds 3
    warm_pid=$E2E_LAST_PID
    wait_for_log "$W/warm-up-$dst.json" 'dgram-recv: listening' 5 "$warm_pid" || true
    ns_exec "$FROM" python3 "$E2E_TOOLS" dgram-send --to "$dst" --port 9 --size 3000 --count 2 --rate 3
    for ((i = 0; i < 50; i++)); do pid_alive "$warm_pid" || break; sleep 0.1; done
    stop_bg "$warm_pid" 1
done

# The transit link, as an independent tool sees it.
start_capture gwA eth1 "$W/transit.pcap"

datagrams_arrive_whole() {  # datagrams_arrive_whole DST
    local out="$W/recv-$1.json"
    start_bg "$TO" "$out" python3 "$E2E_TOOLS" dgram-recv --bind "$1" --port 5004 --count "$COUNT" --seconds 15
    local pid=$E2E_LAST_PID
    wait_for_log "$out" 'dgram-recv: listening' 5 "$pid" || return 1
    ns_exec "$FROM" python3 "$E2E_TOOLS" dgram-send --to "$1" --port 5004 --count "$COUNT" --rate 50
    local i
    for ((i = 0; i < 150; i++)); do pid_alive "$pid" || break; sleep 0.1; done
    stop_bg "$pid" 1
    python3 - "$out" "$COUNT" <<'PY'
import json, sys
r = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])
print("    %d of %s arrived whole, %d wrong; missing: %s" % (r["whole"], sys.argv[2], r["bad"], r["missing"] or "none"))
sys.exit(0 if r["whole"] == int(sys.argv[2]) and r["bad"] == 0 else 1)
PY
}
for dst in $DSTS; do
    check "$COUNT datagrams of 4000 bytes $FROM -> $dst:5004 (fragments) arrive whole" datagrams_arrive_whole "$dst"
done
# One datagram no policy covers: the capture must see it in the clear, so
# a capture that sees nothing cannot pass the checks below.
ns_exec "$FROM" python3 "$E2E_TOOLS" dgram-send --to "${DSTS%% *}" --port 5005 --size 200 --count 3 --rate 20
sleep 1
stop_bg "$TCPDUMP_PID" 2

count() { tcpdump -n -r "$W/transit.pcap" "$1" 2>/dev/null | wc -l; }
capture_has_no_plaintext_fragment() {
    local esp frag4 frag6 rtp clear
    esp=$(count 'ip proto 50 or ip6 proto 50 or (ip6[6] == 44 and ip6[40] == 50)')
    # Fragments that are not ESP: IPv4 (MF or an offset), IPv6 (a Fragment
    # header whose next header is not ESP).
    frag4=$(count 'ip and (ip[6:2] & 0x3fff != 0) and not ip proto 50')
    frag6=$(count 'ip6 and ip6[6] == 44 and ip6[40] != 50')
    rtp=$(count 'udp port 5004')
    clear=$(count 'udp port 5005')
    echo "    transit: $esp ESP frames, $frag4 IPv4 and $frag6 IPv6 plaintext fragments, $rtp to port 5004, $clear to port 5005 (in the clear by design)"
    [ "$frag4$frag6" = 00 ] || tcpdump -n -r "$W/transit.pcap" 'not ip proto 50 and not ip6 proto 50' 2>/dev/null | head -n 5 | sed 's/^/    /'
    [ "$esp" -gt 0 ] && [ "$frag4" -eq 0 ] && [ "$frag6" -eq 0 ] && [ "$rtp" -eq 0 ] && [ "$clear" -ge 3 ]
}
check "transit capture (tcpdump): ESP only for port 5004, no plaintext fragment" capture_has_no_plaintext_fragment

fragments_counted() {
    local held
    held=$("$FLOWSEC" ctl stats --json --socket "$W/gwA.sock" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["total"].get("fragments_held", 0))')
    echo "    gwA: fragments_held=$held"
    [ "$held" -gt 0 ]
}
if [ "$MODE" = tunnel ]; then
    check "gwA counted the fragments it held for a whole lookup (fragments_held)" fragments_counted
fi

for gw in gwA gwB; do check "$gw: SIGTERM -> exit 0" daemon_down "$gw"; done
e2e_finish
