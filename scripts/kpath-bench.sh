#!/usr/bin/env bash
# The kernel's cost per packet of each way to send and receive raw ESP
# (issue 34), on this machine's CPU: raw ESP's cost is per-packet kernel
# work (a route and an skb per packet each way, where ESP in UDP moves 64
# packets per skb with UDP GSO/GRO across the veths), and that work costs
# more on some CPUs (their kernel mitigations) than on others. Run it on
# each CPU kind and compare the rows, not the machines.
#
#   scripts/kpath-bench.sh [PACKETS]      root; gcc; prints a Markdown table
#
# Two namespaces joined by a veth (MTU 1500). Send: PACKETS 1400-byte ESP
# packets from one process pinned to CPU 1, the receiver dropping them at
# its netdev ingress: the sender's ns/packet. Receive: the same packets
# sent by a packet socket (the cheapest sender) to 1 or 8 receiving
# sockets, raw (each raw socket gets a copy; flowsec --esp-receive raw)
# or a PACKET_FANOUT group (each packet once, the kernel's copy dropped at
# prerouting as flowsec's table does): all CPUs' busy time per packet
# received, the sender's included. Ping-pong: one 100-byte ESP packet each
# way, 20,000 times, sent by the raw socket or a packet socket, received
# by a raw socket: the mean round trip.
set -euo pipefail
[ "$(id -u)" = 0 ] && command -v ip >/dev/null || { echo "SKIP: needs root and ip netns"; exit 0; }
command -v gcc >/dev/null || { echo "SKIP: needs gcc"; exit 0; }
N="${1:-2000000}"
P="fs$$-kp"
BIN="$(mktemp -d)/kpath"
cleanup() { ip netns del "$P-a" 2>/dev/null || true; ip netns del "$P-b" 2>/dev/null || true; rm -rf "$(dirname "$BIN")"; }
trap cleanup EXIT INT TERM
gcc -O2 -Wall -o "$BIN" "$(dirname "${BASH_SOURCE[0]}")/kpath/kpath.c"
ip netns add "$P-a"; ip netns add "$P-b"
ip link add va netns "$P-a" type veth peer name vb netns "$P-b"
ip -n "$P-a" addr add 10.9.0.1/24 dev va; ip -n "$P-b" addr add 10.9.0.2/24 dev vb
for ns in a b; do ip -n "$P-$ns" link set lo up; done
ip -n "$P-a" link set va up; ip -n "$P-b" link set vb up
MAC=$(ip -n "$P-b" -br link show vb | awk '{print $3}')
ip -n "$P-a" neigh replace 10.9.0.2 lladdr "$MAC" dev va nud permanent
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }
hz=$(getconf CLK_TCK)

echo "| $(uname -r), $(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p' | head -n 1)) | ns per packet |"
echo "|---|---|"
for m in spec_rstack_overflow retbleed spectre_v2; do
    f=/sys/devices/system/cpu/vulnerabilities/$m
    [ -r "$f" ] && echo "| mitigation $m | $(cat "$f") |"
done
ip netns exec "$P-b" nft -f - <<'NFT'
table netdev kp {
    chain in {
        type filter hook ingress device vb priority 0; policy accept;
        ip protocol esp drop
    }
}
NFT
for mode in hdrincl proto50 packet; do
    ns=$(ip netns exec "$P-a" taskset -c 1 "$BIN" send "$mode" "$N" 10.9.0.1 10.9.0.2 va "$MAC")
    echo "| send, $mode (sender's wall time) | $ns |"
done
ip netns exec "$P-b" nft delete table netdev kp
MACA=$(ip -n "$P-a" -br link show va | awk '{print $3}')
ip -n "$P-b" neigh replace 10.9.0.1 lladdr "$MACA" dev vb nud permanent
for mode in hdrincl packet hdrincl packet; do
    ip netns exec "$P-b" "$BIN" pong "$mode" 20000 10.9.0.2 10.9.0.1 vb "$MACA" &
    sleep 0.2
    rtt=$(ip netns exec "$P-a" "$BIN" ping "$mode" 20000 10.9.0.1 10.9.0.2 va "$MAC")
    wait
    echo "| ping-pong, both ends sending by $mode: mean round trip | $rtt |"
done
for rx in "raw 1" "raw 8" "fanout 1" "fanout 8"; do
    set -- $rx
    if [ "$1" = fanout ]; then
        ip netns exec "$P-b" nft -f - <<'NFT'
table ip kp {
    chain pre {
        type filter hook prerouting priority -450; policy accept;
        ip protocol esp fib daddr type local drop
    }
}
NFT
    fi
    secs=$(( N / 400000 + 2 ))
    ip netns exec "$P-b" "$BIN" recv "$1" "$secs" "$2" > "$(dirname "$BIN")/got" &
    sleep 0.3
    b0=$(busy)
    ip netns exec "$P-a" taskset -c 1 "$BIN" send packet "$N" 10.9.0.1 10.9.0.2 va "$MAC" >/dev/null
    b1=$(busy)
    wait
    got=$(cat "$(dirname "$BIN")/got")
    [ "$1" = fanout ] && ip netns exec "$P-b" nft delete table ip kp
    echo "| send (packet) + receive, $1 x$2: all CPUs' time per packet received ($got of $N) | $(( (b1 - b0) * 1000000000 / hz / (got > 0 ? got : 1) )) |"
done
