#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions called through check and poll
# End-to-end: hybrid (post-quantum) IKEv2, RFC 9370 additional key
# exchanges over RFC 9242 IKE_INTERMEDIATE, as strongSwan 6 writes them
# (`proposals = …-x25519-ke1_…`).
#
#   hostA 10.1.0.2 -- gwA | 192.0.2.1 ==== 192.0.2.2 | gwB -- hostB 10.2.0.2
#
# FLOWSEC_PQ_PEER=strongswan6 (default): the other gateway is Debian 13's
# charon 6.0.1 (kernel-libipsec) in a trixie root (scripts/lib.sh
# install_strongswan6), proposals x25519-ke1_ecp384-ke2_modp3072 (Debian's
# strongSwan 6 has no ML-KEM: the mechanism is checked with classical
# groups); FLOWSEC_PQ_PEER=flowsec: both flowsec, x25519-ke1_mlkem768 or
# FLOWSEC_PQ_PROPOSAL (mlkem1024 alone: ML-KEM as the first exchange).
# FLOWSEC_PQ_LEFT=flowsec|peer: who initiates (gwA). Checks:
#   a. SAs up and agreed at both ends, with a post-quantum preshared key
#      (RFC 8784: ppk_id, ppk_required = yes, secrets { ppk-e2e }); both
#      list the additional key exchanges and the PPK (flowsec ctl sas:
#      …/KE1_…/PPK, swanctl --list-sas the same). FLOWSEC_PQ_PPK=fallback:
#      the PPK optional, gwB holding another one only (it answers USE_PPK,
#      then takes gwA's NO_PPK_AUTH): SAs without it, listed without PPK
#   b. the capture: one IKE_INTERMEDIATE (exchange type 43) exchange per
#      additional key exchange each way, and IKE_AUTH after them
#   c. ping both ways; CHILD_SA rekeys from gwA and from gwB with ESP PFS
#      and additional key exchanges (esp_proposals …-x25519-ke1_…),
#      traffic on the new SA, which lists them
#   d. IKE SA rekeys from gwA and from gwB, traffic after them
#   e. the capture: RFC 9370 §2.2.4's IKE_FOLLOWUP_KE (exchange type 44),
#      one request and one answer per additional key exchange of every
#      rekey, and no IKE datagram above the fragment size (1280)
#
#   tests/e2e/ike_pq.sh     root; needs target/debug/flowsec
#
# Without root or ip netns it prints "SKIP: ..." and exits 0.
set -eu -o pipefail

E2E_PREFIX="${E2E_PREFIX:-ikpq$$-}"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/e2e/ike_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ike_lib.sh"
IKE_TAG="e2e ike post-quantum"
T0=$SECONDS

e2e_require_root_netns

PEER="${FLOWSEC_PQ_PEER:-strongswan6}"
LEFT="${FLOWSEC_PQ_LEFT:-flowsec}"
FLOWSEC_BIN="${FLOWSEC_BIN:-$E2E_ROOT/target/debug/flowsec}"
require_flowsec "$FLOWSEC_BIN" FLOWSEC_BIN
install_capture_tools
case "$PEER" in
    strongswan6)
        install_strongswan6 || { echo "FAIL: no strongSwan 6 root at $STRONGSWAN6_ROOT (debootstrap trixie)"; exit 1; }
        STRONGSWAN_ROOT="$STRONGSWAN6_ROOT"
        PEER_IMPL=strongswan
        IKE_PROPOSAL=aes256gcm16-prfsha384-x25519-ke1_ecp384-ke2_modp3072
        ESP_PROPOSAL=aes256gcm16-x25519-ke1_ecp384-ke2_modp3072
        LISTED='/CURVE_?25519/KE1_ECP.384/KE2_MODP.3072/PPK'
        CHILD_LISTED='CURVE_?25519/KE1_ECP.384/KE2_MODP.3072'
        ;;
    flowsec)
        PEER_IMPL=flowsec
        IKE_PROPOSAL="${FLOWSEC_PQ_PROPOSAL:-aes256gcm16-prfsha384-x25519-ke1_mlkem768}"
        # What `ctl sas` shows after the PRF: the methods, KEn_ before
        # the additional ones (x25519-ke1_mlkem768: CURVE25519/KE1_ML-KEM-768).
        LISTED=$(tr '-' '\n' <<<"$IKE_PROPOSAL" | sed -nE \
            -e 's/^x25519$/CURVE25519/p' -e 's/^mlkem([0-9]+)$/ML.KEM.\1/p' \
            -e 's/^ke([1-7])_mlkem([0-9]+)$/KE\1_ML.KEM.\2/p' -e 's/^ke([1-7])_x25519$/KE\1_CURVE25519/p' |
            paste -sd/)
        LISTED="/$LISTED/PPK\$"
        ESP_PROPOSAL=aes256gcm16-x25519-ke1_mlkem768
        CHILD_LISTED='CURVE25519/KE1_ML.KEM.768'
        ;;
    *) echo "FAIL: FLOWSEC_PQ_PEER=$PEER (strongswan6 or flowsec)"; exit 1 ;;
esac
# One IKE_INTERMEDIATE per additional key exchange (ke1_…ke7_), and
# one IKE_FOLLOWUP_KE per additional key exchange of a rekey.
additional() { { grep -o 'ke[1-7]_' <<<"$1" || true; } | sort -u | wc -l; }
ADDITIONAL=$(additional "$IKE_PROPOSAL")
ESP_ADDITIONAL=$(additional "$ESP_PROPOSAL")
case "$LEFT" in
    flowsec) declare -A IMPL=([gwA]=flowsec [gwB]="$PEER_IMPL") ;;
    peer) declare -A IMPL=([gwA]="$PEER_IMPL" [gwB]=flowsec) ;;
    *) echo "FAIL: FLOWSEC_PQ_LEFT=$LEFT (flowsec or peer)"; exit 1 ;;
esac

e2e_outer v4
DPD_DELAY=30s UP_TIMEOUT=15 SA_TIMEOUT=20
CONN=gw CHILD=net TUN=fsikpq0 PSK="flowsec-e2e-ike-pq psk, not a secret"
RETRANSMIT_TIMEOUT=1 RETRANSMIT_BASE=1.4 RETRANSMIT_TRIES=3
INNER_FAMILIES="4"
# RFC 8784 at both ends, required: no SA comes up without it; or
# optional, gwB without gwA's PPK.
PPK_MODE="${FLOWSEC_PQ_PPK:-required}"
PPK_SECRET="flowsec-e2e-ppk-not-a-secret-but-32-bytes-long"
case "$PPK_MODE" in
    required)
        CONN_ARGS="--ppk-id ppk-e2e --ppk-required yes"
        declare -A EXTRA_CONN=([gwA]="secret ppk-e2e --id ppk-e2e --secret $PPK_SECRET"
            [gwB]="secret ppk-e2e --id ppk-e2e --secret $PPK_SECRET")
        ;;
    fallback)
        CONN_ARGS="--ppk-id ppk-e2e"
        declare -A EXTRA_CONN=([gwA]="secret ppk-e2e --id ppk-e2e --secret $PPK_SECRET"
            [gwB]="secret ppk-other --id ppk-other --secret other-$PPK_SECRET")
        LISTED="${LISTED%/PPK*}"
        ;;
    *) echo "FAIL: FLOWSEC_PQ_PPK=$PPK_MODE (required or fallback)"; exit 1 ;;
esac
declare -A LOCAL_ADDR=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ADDR=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_ID=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ID=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_TS=([gwA]="10.1.0.0/24" [gwB]="10.2.0.0/24")
declare -A REMOTE_TS=([gwA]="10.2.0.0/24" [gwB]="10.1.0.0/24")

echo "$IKE_TAG: gwA ${IMPL[gwA]} (initiator), gwB ${IMPL[gwB]}; $IKE_PROPOSAL; PPK $PPK_MODE"
e2e_init
W="$E2E_WORK"
for gw in gwA gwB; do
    gen_swanctl_conf "$gw" >"$W/$gw-swanctl.conf"
    [ "${IMPL[$gw]}" = strongswan ] && gen_strongswan_conf "$gw" >"$W/$gw-strongswan.conf"
done
mount_root || { echo "FAIL: mounting $W, /dev and /proc into $STRONGSWAN_ROOT"; exit 1; }
e2e_topology_gateway
start_daemons
start_capture gwA eth1 "$W/transit.pcap"

# Each gateway's IKE SA names every additional key exchange it did.
listed() {
    local gw="$1" out
    if [ "${IMPL[$gw]}" = flowsec ]; then
        out=$(fctl "$gw" sas 2>&1 | grep -m1 -E '^  [A-Z_0-9-]+/')
    else
        out=$(sw "$gw" --list-sas 2>&1 | grep -m1 -E '^  [A-Z_0-9-]+/')
    fi
    echo "    $gw (${IMPL[$gw]}):$out"
    grep -qE "$LISTED" <<<"$out" || return 1
    case "$PPK_MODE" in
        required) grep -q '/PPK' <<<"$out" ;;
        fallback) ! grep -q 'PPK' <<<"$out" ;;
    esac
}
up() {
    sa_up && CUR_CHILD=$(child_agreed) || return 1
    listed gwA && listed gwB
}
check "a. SAs up and agreed at both ends, the additional key exchanges listed by both, the PPK ($PPK_MODE)" up

intermediate_on_the_wire() {
    local from n auth
    sleep 0.5
    for from in "$GW_A" "$GW_B"; do
        # Requests from the initiator, answers from the responder: each
        # way one message per exchange (its fragments share its ID).
        n=$(tshark -n -r "$W/transit.pcap" -Y "ip.src == $from and isakmp.exchangetype == 43" \
            -T fields -e isakmp.messageid 2>/dev/null | sort -u | grep -c . || true)
        echo "    IKE_INTERMEDIATE messages from $from: $n (additional key exchanges: $ADDITIONAL)"
        [ "$n" -eq "$ADDITIONAL" ] || return 1
    done
    auth=$(tshark -n -r "$W/transit.pcap" -Y "isakmp.exchangetype == 35" -T fields -e isakmp.messageid 2>/dev/null | head -1)
    echo "    first IKE_AUTH message ID: $auth"
    [ "$((auth))" -eq "$((ADDITIONAL + 1))" ]
}
check "b. the capture: $ADDITIONAL IKE_INTERMEDIATE exchange(s) each way, IKE_AUTH after them" intermediate_on_the_wire

# The Child SA a gateway lists names the additional key exchanges of its
# last rekey (flowsec ctl sas: …/CURVE25519/KE1_…; swanctl: the same
# words, CURVE_25519/KE1_…, in its child's line).
child_listed() {
    local gw="$1" out
    if [ "${IMPL[$gw]}" = flowsec ]; then
        out=$(fctl "$gw" sas 2>&1 | grep -E '^    [A-Z_0-9-]+/' | tail -1)
    else
        # "  net: #2, reqid 1, INSTALLED, TUNNEL, ESP:AES_GCM_16-256/CURVE_25519/…"
        out=$(sw "$gw" --list-sas 2>&1 | grep -E '^  [a-z]+: #[0-9]+, .*INSTALLED' | tail -1)
    fi
    echo "    $gw (${IMPL[$gw]}) Child SA:$out"
    grep -qE "$CHILD_LISTED" <<<"$out"
}
rekey_with_followups() {  # rekey_with_followups GW: child_rekey, the new Child SA lists its exchanges
    child_rekey "$1" && child_listed gwA && child_listed gwB
}
check "c. ping both ways through the tunnel" ping_both 4
REKEYS=0
for gw in gwA gwB; do
    check "c. CHILD_SA rekey from $gw (${IMPL[$gw]}) with $ESP_PROPOSAL, traffic on the new SA" rekey_with_followups "$gw"
    REKEYS=$((REKEYS + ESP_ADDITIONAL))
done
for gw in gwA gwB; do
    check "d. IKE SA rekey from $gw (${IMPL[$gw]}), traffic after it" ike_rekey "$gw"
    REKEYS=$((REKEYS + ADDITIONAL))
done
sleep 0.5
stop_bg "$TCPDUMP_PID" 2

followups_on_the_wire() {
    local n big
    # One message per (sender, IKE SA, message ID): fragments and
    # retransmissions share theirs.
    n=$(tshark -n -r "$W/transit.pcap" -Y "isakmp.exchangetype == 44" \
        -T fields -e ip.src -e isakmp.ispi -e isakmp.rspi -e isakmp.messageid 2>/dev/null | sort -u | grep -c . || true)
    echo "    IKE_FOLLOWUP_KE messages: $n (requests and answers of $REKEYS additional key exchanges)"
    big=$(tshark -n -r "$W/transit.pcap" -Y "isakmp and ip.len > 1280" 2>/dev/null | grep -c . || true)
    echo "    IKE datagrams above 1280 bytes: $big"
    [ "$n" -eq $((2 * REKEYS)) ] && [ "$big" -eq 0 ]
}
check "e. the capture: IKE_FOLLOWUP_KE for every additional key exchange of the rekeys, nothing above the fragment size" followups_on_the_wire

ike_finish
