#!/usr/bin/env bash
# The demo (README): build flowsec (release), then, in network namespaces,
#
#   hostA 10.1.0.2 -- gwA 10.1.0.1 | 192.0.2.1 == transit == 192.0.2.2 | 10.2.0.1 gwB -- hostB 10.2.0.2
#
# 1. plain forwarding between the gateways (no IPsec): ping both ways and
#    TCP throughput hostA -> hostB for a few seconds;
# 2. the same topology with two `flowsec up` gateways (manual keys, ESP
#    tunnel mode, AES-GCM-16): the same ping and measurement;
# 3. the gateways' counters (what `flowsec up` prints on SIGTERM) and a
#    summary table.
#
# Everything it creates carries a per-run prefix (fs<pid>-) and is removed
# on exit, on error and on Ctrl-C (tests/e2e/lib.sh's traps; its ping and
# TCP measurements are scripts/lib.sh's, as bench-tunnels.sh's). Without root
# or `ip netns` it shows the IPsec core's speed instead (`flowsec speed`;
# extra arguments go to it).
#
#   FLOWSEC_DEMO_SECONDS=S    length of each TCP measurement (default 3)
#   FLOWSEC_E2E_KEEP=1        keep the work directory (logs, setkey files)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
E2E_CLEANUP_REPORT=1
# shellcheck source=tests/e2e/lib.sh
. "$ROOT/tests/e2e/lib.sh"

release_flowsec

if ! e2e_have_root_netns; then
    echo "demo: the namespace demo (two flowsec gateways, traffic through the tunnel)"
    echo "demo: $E2E_NO_NETNS_REASON; showing the IPsec core's speed instead (flowsec speed):"
    exec "$FLOWSEC" speed aes128gcm16 chacha20poly1305 aes128-sha1 3des-md5 ah-sha1 \
        --sizes 64,512,1420,8192 --seconds 0.2 "$@"
fi

SECS="${FLOWSEC_DEMO_SECONDS:-3}"
TUN=fsec0
T0=$SECONDS

e2e_init
W="$E2E_WORK"

e2e_need_nft || die "nftables could not be installed (flowsec up needs nft for its plaintext filter)"

# ------------------------------------------------------------------ topology
step "topology: namespaces ${E2E_PREFIX}{hostA,gwA,gwB,hostB}"
e2e_topology_gateway
say "hostA 10.1.0.2 -- 10.1.0.1 gwA 192.0.2.1 ==transit== 192.0.2.2 gwB 10.2.0.1 -- 10.2.0.2 hostB"
say "(veth pairs; the gateways forward; neither has a route to the far site yet)"

# ------------------------------------------------------------ plain baseline
step "plain forwarding, no IPsec: gwA routes 10.2.0.0/24 via 192.0.2.2, gwB 10.1.0.0/24 via 192.0.2.1"
e2e_standin_routes
pings
tcp_run plain
PLAIN=$MBIT
ROWS=()
if command -v ethtool >/dev/null 2>&1; then
    # lib.sh turned TSO/GSO/GRO off on every veth: already one packet per MSS
    ROWS+=("plain forwarding (offloads off)|$PLAIN")
else
    # Offloads are on: TCP hands the veths 64 KB segments and nothing splits
    # them on the way, while flowsec's TUN sees one MTU-sized packet at a
    # time. Measure plain forwarding that way too (GSO capped at one
    # segment), then put the kernel's default back for the tunnel.
    ROWS+=("plain forwarding (kernel GSO)|$PLAIN")
    step "plain forwarding again, one packet per MSS (gso_max_segs 1 on every veth)"
    segs="$(e2e_gso_max_segs)"
    e2e_gso_max_segs 1
    tcp_run plain-nogso
    ROWS+=("plain forwarding (GSO off)|$MBIT")
    e2e_gso_max_segs "${segs:-65535}"
    say "(gso_max_segs back to ${segs:-65535} for the tunnel)"
fi

# ------------------------------------------------------------------- flowsec
# run_gateways LABEL raw|udp: both gateways up, pings, one TCP run, then
# SIGTERM and their counters.
run_gateways() {
    local label="$1" encap="$2" gw line
    step "flowsec: two gateways, $label, AES-GCM-16, manual keys"
    e2e_write_gcm_setkeys "$W" demo "$encap"
    say "gwA's setkey file (gwB's swaps the local and remote networks):"
    grep -v '^#' "$W/gwA.setkey" | sed 's/^/      /'
    for gw in gwA gwB; do
        daemon_up "$gw" "$W/$gw.log" "$FLOWSEC" up --tun "$TUN" --setkey "$W/$gw.setkey" --socket "$W/$gw.sock" ||
            die "$gw: flowsec up failed"
        say "$gw: $(grep -m1 -E 'flowsec: (\[CFG\] )?up \(' "$W/$gw.log")  [route: $( (ns_exec "$gw" ip route show table 62956 dev "$TUN" 2>/dev/null || true) | head -n 1 | sed 's/ *$//')]"
    done
    pings
    tcp_run "flowsec-$encap"
    ROWS+=("flowsec $label|$MBIT")
    say "stopping the gateways (SIGTERM): their counters"
    for gw in gwA gwB; do
        daemon_down "$gw" || true
        line="$(grep -m1 -E 'flowsec: (\[CFG\] )?down' "$W/$gw.log" || true)"
        [ -n "$line" ] || line="(no counters; exit status $E2E_LAST_RC)"
        say "$gw: $line"
    done
}
e2e_standin_routes del
run_gateways "ESP tunnel" raw
run_gateways "ESP-in-UDP tunnel" udp
say "(sent: packets sealed; delivered: packets opened and handed to the TUN;"
say " tso_in/gro_out: TCP super-packets read from / written to the TUN)"

# ------------------------------------------------------------------- summary
step "summary: TCP hostA -> hostB, ${SECS} s each, one connection"
python3 - "${ROWS[@]}" <<'EOF'
import sys
rows = [(r.rsplit("|", 1)[0], float(r.rsplit("|", 1)[1])) for r in sys.argv[1:]]
plain = rows[0][1]
print("    %-32s %10s %16s" % ("path", "Mbit/s", "ratio to plain"))
for name, v in rows:
    print("    %-32s %10.1f %16s" % (name, v, "%.3f" % (v / plain) if plain else "-"))
if any("GSO" in name for name, _ in rows):
    print("    (kernel GSO: TCP's 64 KB segments cross the veths whole. flowsec reads"
          "\n     them whole from its TUN too, but raw ESP crosses the transit one"
          "\n     packet at a time; ESP in UDP goes as UDP GSO super-packets)")
EOF

step "cleanup"
e2e_cleanup
echo "demo: done in $((SECONDS - T0)) s"
