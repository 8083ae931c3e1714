#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions called through check and poll
# End-to-end: IKE fragmentation (RFC 7383) between flowsec and strongSwan
# 5.9.8, with a fragment size small enough that IKE_AUTH is cut up both
# ways (PSK; certificate chains are what makes it needed in practice).
#
#   hostA 10.1.0.2 -- gwA | 192.0.2.1 ==== 192.0.2.2 | gwB -- hostB 10.2.0.2
#
# gwA initiates. Both ends: `fragmentation = yes` and a fragment size of
# FRAG bytes (flowsec up --fragment-size, strongswan.conf
# charon.fragment_size). Checks:
#   a. the SAs come up and agree at both ends
#   b. the capture of the transit link: IKE_AUTH in Encrypted Fragment
#      payloads (tshark: ISAKMP next payload 53) from each gateway, no
#      IKE datagram above FRAG bytes; flowsec counted what it fragmented
#      and reassembled
#   c. ping both ways through the tunnel; a CHILD_SA rekey from gwA
#
#   FLOWSEC_IKE_LEFT=flowsec|strongswan    gwA (default flowsec); gwB is the other
#   tests/e2e/ike_frag.sh                  root; needs target/debug/flowsec
#
# Without root or ip netns it prints "SKIP: ..." and exits 0.
set -eu -o pipefail

E2E_PREFIX="${E2E_PREFIX:-ikf$$-}"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/e2e/ike_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ike_lib.sh"
IKE_TAG="e2e ike fragmentation"
T0=$SECONDS

e2e_require_root_netns

LEFT="${FLOWSEC_IKE_LEFT:-flowsec}"
case "$LEFT" in
    flowsec) RIGHT=strongswan ;;
    strongswan) RIGHT=flowsec ;;
    *) echo "FAIL: FLOWSEC_IKE_LEFT=$LEFT (flowsec or strongswan)"; exit 1 ;;
esac
FLOWSEC_BIN="${FLOWSEC_BIN:-$E2E_ROOT/target/debug/flowsec}"
require_flowsec "$FLOWSEC_BIN" FLOWSEC_BIN
install_strongswan || { echo "FAIL: strongSwan is not installed (apt-get install ${STRONGSWAN_PKGS[*]})"; exit 1; }
install_capture_tools

FRAG=300
e2e_outer v4
IKE_PROPOSAL=aes128gcm16-prfsha256-ecp256 ESP_PROPOSAL=aes128gcm16-ecp256
DPD_DELAY=30s UP_TIMEOUT=15 SA_TIMEOUT=20
CONN=gw CHILD=net TUN=fsikf0 PSK="flowsec-e2e-ike-frag psk, not a secret"
RETRANSMIT_TIMEOUT=1 RETRANSMIT_BASE=1.4 RETRANSMIT_TRIES=3
INNER_FAMILIES="4 6"
CONN_ARGS="--fragmentation yes"
CHARON_EXTRA=$'\n    fragment_size = '"$FRAG"
declare -A IMPL=([gwA]="$LEFT" [gwB]="$RIGHT")
declare -A LOCAL_ADDR=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ADDR=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_ID=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ID=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_TS=([gwA]="10.1.0.0/24,2001:db8:1::/64" [gwB]="10.2.0.0/24,2001:db8:2::/64")
declare -A REMOTE_TS=([gwA]="10.2.0.0/24,2001:db8:2::/64" [gwB]="10.1.0.0/24,2001:db8:1::/64")
declare -A UP_ARGS=([gwA]="--fragment-size $FRAG" [gwB]="--fragment-size $FRAG")

echo "$IKE_TAG: gwA $LEFT (initiator), gwB $RIGHT; fragment size $FRAG bytes"
e2e_init
W="$E2E_WORK"
for gw in gwA gwB; do
    gen_swanctl_conf "$gw" >"$W/$gw-swanctl.conf"
    [ "${IMPL[$gw]}" = strongswan ] && gen_strongswan_conf "$gw" >"$W/$gw-strongswan.conf"
done
grep -q 'fragmentation = yes' "$W/gwA-swanctl.conf" || { echo "FAIL: no fragmentation key in the swanctl.conf"; exit 1; }
e2e_topology_gateway
start_daemons
start_capture gwA eth1 "$W/transit.pcap"

up() { sa_up && CUR_CHILD=$(child_agreed); }
check "a. SAs up and agreed at both ends" up

fragments_both_ways() {
    local from n big flowsec
    sleep 0.5
    for from in "$GW_A" "$GW_B"; do
        n=$(tshark -n -r "$W/transit.pcap" -Y "ip.src == $from and isakmp.nextpayload == 53" 2>/dev/null | wc -l)
        echo "    Encrypted Fragment payloads from $from: $n"
        [ "$n" -ge 2 ] || return 1
    done
    big=$(tshark -n -r "$W/transit.pcap" -Y "isakmp and ip.len > $FRAG" 2>/dev/null | wc -l)
    echo "    IKE datagrams above $FRAG bytes: $big"
    [ "$big" -eq 0 ] || return 1
    flowsec=gwA; [ "$LEFT" = strongswan ] && flowsec=gwB
    fctl "$flowsec" stats --json | python3 -c '
import json, sys
ike = json.load(sys.stdin)["ike"]
print("    %s (flowsec): fragmented %d, fragments_received %d, reassembled %d, fragments_dropped %d" % (
    sys.argv[1], ike["fragmented"], ike["fragments_received"], ike["reassembled"], ike["fragments_dropped"]))
# fragments_dropped is shown, not checked: when an exchange is retransmitted,
# the fragments that come after the message is whole are dropped and counted.
sys.exit(0 if ike["fragmented"] >= 1 and ike["reassembled"] >= 1 else 1)' "$flowsec"
}
check "b. the capture: fragments from both gateways, none above $FRAG bytes; flowsec fragmented and reassembled" fragments_both_ways
stop_bg "$TCPDUMP_PID" 2

check "c. ping both ways through the tunnel (IPv4 and IPv6 inside)" ping_both 4 6
check "c. CHILD_SA rekey from gwA (${IMPL[gwA]}), traffic on the new SA" child_rekey gwA

ike_finish
