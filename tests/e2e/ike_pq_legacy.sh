#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions called through check and poll
# End-to-end: a hybrid (post-quantum) proposal against a peer without RFC
# 9370, Debian 12's strongSwan 5.9.8 (kernel-libipsec): what a gateway that
# turned on `x25519-ke1_mlkem768` meets at peers not yet upgraded.
#
#   hostA 10.1.0.2 -- gwA | 192.0.2.1 ==== 192.0.2.2 | gwB -- hostB 10.2.0.2
#
# charon proposes (or takes) aes256gcm16-prfsha384-x25519; flowsec the
# same with ML-KEM-768 as an additional key exchange. FLOWSEC_PQ_LEFT=
# flowsec|peer: who initiates (gwA). Checks:
#   a. the additional exchange optional on flowsec's side (as responder
#      `…-ke1_mlkem768-ke1_none`; as initiator the hybrid proposal, then
#      the classical one): a classical SA, up and agreed at both ends, no
#      KE1 listed, no IKE_INTERMEDIATE on the wire; ping both ways
#   b. required (`…-ke1_mlkem768`, after `flowsec ctl reload`): no SA at
#      either end, and NO_PROPOSAL_CHOSEN in the initiator's log (flowsec's
#      or charon's), as strongSwan 6 would answer
#
#   tests/e2e/ike_pq_legacy.sh     root; needs target/debug/flowsec
#
# Without root or ip netns it prints "SKIP: ..." and exits 0.
set -eu -o pipefail

E2E_PREFIX="${E2E_PREFIX:-ikpl$$-}"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/e2e/ike_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ike_lib.sh"
IKE_TAG="e2e ike post-quantum vs strongSwan 5.9"
T0=$SECONDS

e2e_require_root_netns

LEFT="${FLOWSEC_PQ_LEFT:-flowsec}"
FLOWSEC_BIN="${FLOWSEC_BIN:-$E2E_ROOT/target/debug/flowsec}"
require_flowsec "$FLOWSEC_BIN" FLOWSEC_BIN
install_capture_tools
install_strongswan || { echo "FAIL: strongSwan 5.9.8 could not be installed"; exit 1; }
case "$LEFT" in
    flowsec) declare -A IMPL=([gwA]=flowsec [gwB]=strongswan) ;;
    peer) declare -A IMPL=([gwA]=strongswan [gwB]=flowsec) ;;
    *) echo "FAIL: FLOWSEC_PQ_LEFT=$LEFT (flowsec or peer)"; exit 1 ;;
esac
CLASSICAL=aes256gcm16-prfsha384-x25519
REQUIRED=$CLASSICAL-ke1_mlkem768
# Optional: as responder, `ke1_none` (RFC 9370 §2.2.1, strongSwan 6's
# way). As initiator a classical proposal after the hybrid one: a peer
# without RFC 9370 refuses any proposal with ADDKE transforms, NONE or not
# (charon 5.9.8 answers NO_PROPOSAL_CHOSEN), as RFC 7296 §3.3.6 says of
# unknown transform types.
OPTIONAL=$CLASSICAL-ke1_mlkem768-ke1_none
[ "$LEFT" = flowsec ] && OPTIONAL="$REQUIRED, $CLASSICAL"

e2e_outer v4
ESP_PROPOSAL=aes256gcm16
DPD_DELAY=30s UP_TIMEOUT=15 SA_TIMEOUT=10
CONN=gw CHILD=net TUN=fsikpl0 PSK="flowsec-e2e-ike-pq-legacy psk, not a secret"
RETRANSMIT_TIMEOUT=1 RETRANSMIT_BASE=1.4 RETRANSMIT_TRIES=2
INNER_FAMILIES="4"
declare -A LOCAL_ADDR=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ADDR=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_ID=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ID=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_TS=([gwA]="10.1.0.0/24" [gwB]="10.2.0.0/24")
declare -A REMOTE_TS=([gwA]="10.2.0.0/24" [gwB]="10.1.0.0/24")
declare -A PROPOSAL_OF=([flowsec]="$OPTIONAL" [strongswan]="$CLASSICAL")

echo "$IKE_TAG: gwA ${IMPL[gwA]} (initiator), gwB ${IMPL[gwB]}"
e2e_init
W="$E2E_WORK"
write_confs() {  # write_confs: each gateway's swanctl.conf with its implementation's proposal
    local gw
    for gw in gwA gwB; do
        IKE_PROPOSAL="${PROPOSAL_OF[${IMPL[$gw]}]}" gen_swanctl_conf "$gw" >"$W/$gw-swanctl.conf"
    done
}
write_confs
for gw in gwA gwB; do
    [ "${IMPL[$gw]}" = strongswan ] && gen_strongswan_conf "$gw" >"$W/$gw-strongswan.conf"
done
e2e_topology_gateway
start_daemons
start_capture gwA eth1 "$W/transit.pcap"
FLOWSEC_GW=gwA
[ "${IMPL[gwB]}" = flowsec ] && FLOWSEC_GW=gwB

classical() {
    local out
    sa_up || return 1
    out=$(fctl "$FLOWSEC_GW" sas 2>&1 | grep -m1 -E '^  [A-Z_0-9-]+/')
    echo "    $FLOWSEC_GW (flowsec):$out"
    [ -n "$out" ] && ! grep -q KE1 <<<"$out"
}
check "a. optional ML-KEM ($OPTIONAL) against $CLASSICAL: a classical SA at both ends" classical
no_intermediate() {
    local n
    sleep 0.5
    n=$(tshark -n -r "$W/transit.pcap" -Y "isakmp.exchangetype == 43" 2>/dev/null | grep -c . || true)
    echo "    IKE_INTERMEDIATE frames: $n"
    [ "$n" -eq 0 ]
}
check "a. no IKE_INTERMEDIATE on the wire" no_intermediate
check "a. ping both ways through the tunnel" ping_both 4
stop_bg "$TCPDUMP_PID" 2

refused() {
    local log
    terminate_ike gwA || return 1
    sleep 1
    PROPOSAL_OF[flowsec]=$REQUIRED
    write_confs
    fctl "$FLOWSEC_GW" reload >"$W/reload.log" 2>&1 || { show_log "$W/reload.log"; return 1; }
    if initiate gwA; then
        echo "    the initiate succeeded"; show_sas; return 1
    fi
    sleep 1
    if child_spis gwA >/dev/null 2>&1 || child_spis gwB >/dev/null 2>&1; then
        echo "    a Child SA is up"; show_sas; return 1
    fi
    log=$(log_of gwA)
    grep -m1 -E 'NO_PROPOSAL_CHOSEN|no proposal' "$log" | sed 's/^/    gwA log: /'
    grep -q 'NO_PROPOSAL_CHOSEN' "$log"
}
check "b. required ML-KEM ($REQUIRED) against $CLASSICAL: no SA, NO_PROPOSAL_CHOSEN" refused

ike_finish
