#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions called through check and poll
# End-to-end: `flowsec ctl reload` and SIGHUP between two flowsec gateways
# with several IKE connections (what `swanctl --load-all` does for
# strongSwan's users).
#
#   hostA 10.1.0.2 -- gwA | 192.0.2.1 ==== 192.0.2.2 | gwB -- hostB 10.2.0.2 10.12.0.2 10.22.0.2 10.23.0.2
#         2001:db8:1::2                                                  2001:db8:2::2
#
# Connections (gwA initiates each, start_action = start; gwB accepts both
# ESP proposals of two, and three from the start):
#   one    10.1.0.0/24 === 10.2.0.0/24          IKE AES-GCM/ECP-256
#   two    2001:db8:1::/64 === 2001:db8:2::/64  IKE AES-GCM-256/ECP-384, ESP AES-GCM-128
#   three  10.1.0.0/24 === 10.12.0.0/24         IKE AES-GCM/X25519 (added by the reload)
# Checks:
#   a. one and two up at both ends
#   b. gwA's file: two's ESP proposal changed, three added; `ctl reload`
#      under a paced UDP stream over one and another over two: nothing of
#      one's stream lost, one's IKE and Child SA SPIs as before, two back
#      with AES-GCM-256 (made before the old one is broken), three up at
#      both ends; traffic through each. The gateways have default routes
#      to each other (as to the Internet): a transit capture during the
#      reload holds no packet of two's inner addresses in the clear
#   c. a file with a syntax error: `ctl reload` fails naming FILE:LINE,
#      every SPI as before
#   d. three removed, SIGHUP: deleted at both ends; one and two as before
#   e. manual keys (--setkey, 10.1.0.0/24 === 10.22.0.0/24 at the start): a
#      second pair of SAs and policies (=== 10.23.0.0/24) added to both
#      files, `ctl reload`: the first pair kept (its sequence numbers go on),
#      the second carries traffic; a file with an error changes nothing
#   f. contrib/flowsec.service passes `systemd-analyze verify` (SKIP
#      without systemd-analyze)
#
#   tests/e2e/reload.sh                 root; needs target/debug/flowsec
#   FLOWSEC_E2E_KEEP=1                  keep the work directory
#
# Without root or ip netns it prints "SKIP: ..." and exits 0.
set -eu -o pipefail

E2E_PREFIX="${E2E_PREFIX:-rld$$-}"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/e2e/ike_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ike_lib.sh"
IKE_TAG="e2e reload"
T0=$SECONDS

e2e_require_root_netns

FLOWSEC_BIN="${FLOWSEC_BIN:-$E2E_ROOT/target/debug/flowsec}"
require_flowsec "$FLOWSEC_BIN" FLOWSEC_BIN

e2e_outer v4
UP_TIMEOUT=15 SA_TIMEOUT=20 TUN=fsrld0
RETRANSMIT_TIMEOUT=1 RETRANSMIT_BASE=1.4 RETRANSMIT_TRIES=3
declare -A IMPL=([gwA]=flowsec [gwB]=flowsec)
declare -A UP_ARGS
PSK="flowsec-e2e-reload psk, not a secret"

echo "$IKE_TAG: gwA flowsec (initiator), gwB flowsec; connections one, two (+ three)"
e2e_init
W="$E2E_WORK"

# One connection as GW sees it, lab conf words (lab_conf: ike_lib.sh):
# conn NAME GW IKE ESP LOCAL_TS REMOTE_TS
conn() {
    local me=$GW_B peer=$GW_A start=""
    [ "$2" = gwA ] && me=$GW_A peer=$GW_B start="--start-action start"
    echo "conn $1 --local-addrs $me --remote-addrs $peer --proposals $3" \
        "--auth psk --local-id $me --remote-id $peer" \
        "child $1-net --local-ts $5 --remote-ts $6 --esp-proposals $4 --rekey-time 1h $start"
}
IKE1=aes128gcm16-prfsha256-ecp256 IKE2=aes256gcm16-prfsha384-ecp384 IKE3=aes128gcm16-prfsha256-x25519
# shellcheck disable=SC2046  # word lists
gwa_conf() {  # gwa_conf TWO_ESP [three]
    lab_conf $(conn one gwA $IKE1 aes128gcm16 10.1.0.0/24 10.2.0.0/24) \
        $(conn two gwA $IKE2 "$1" 2001:db8:1::/64 2001:db8:2::/64) \
        $([ "${2:-}" = three ] && conn three gwA $IKE3 aes128gcm16 10.1.0.0/24 10.12.0.0/24) \
        secret ike-all --id "$GW_B" --secret "$PSK"
}
# shellcheck disable=SC2046
lab_conf $(conn one gwB $IKE1 aes128gcm16 10.2.0.0/24 10.1.0.0/24) \
    $(conn two gwB $IKE2 aes128gcm16,aes256gcm16 2001:db8:2::/64 2001:db8:1::/64) \
    $(conn three gwB $IKE3 aes128gcm16 10.12.0.0/24 10.1.0.0/24) \
    secret ike-all --id "$GW_A" --secret "$PSK" >"$W/gwB-swanctl.conf"
gwa_conf aes128gcm16 >"$W/gwA-swanctl.conf"

# Manual keys beside IKE: SPIs 0x3N01 (gwA -> gwB) and 0x3N02 for each
# network 10.2N.0.0/24 behind gwB, in GW's view; reqid 7N and `unique`
# policies (with `require` the IKE SAs between the same gateways would do).
setkey_file() {  # setkey_file GW N...
    local gw="$1" n me peer here there; shift
    if [ "$gw" = gwA ]; then me=$GW_A peer=$GW_B; else me=$GW_B peer=$GW_A; fi
    echo "flush;"
    echo "spdflush;"
    for n in "$@"; do
        printf 'add %s %s esp 0x3%s01 -m tunnel -u 7%s -r 64 -E aes-cbc 0x%s0102030405060708090a0b0c0d0e0f -A hmac-sha1 0x%s0102030405060708090a0b0c0d0e0f10111213;\n' "$GW_A" "$GW_B" "$n" "$n" "$n$n" "$n$n"
        printf 'add %s %s esp 0x3%s02 -m tunnel -u 7%s -r 64 -E aes-cbc 0x%s0102030405060708090a0b0c0d0e0f -A hmac-sha1 0x%s0102030405060708090a0b0c0d0e0f10111213;\n' "$GW_B" "$GW_A" "$n" "$n" "$n$n" "$n$n"
        if [ "$gw" = gwA ]; then here=10.1.0.0/24 there=10.2$n.0.0/24; else here=10.2$n.0.0/24 there=10.1.0.0/24; fi
        echo "spdadd $here $there any -P out ipsec esp/tunnel/$me-$peer/unique:7$n;"
        echo "spdadd $there $here any -P in ipsec esp/tunnel/$peer-$me/unique:7$n;"
        echo "spdadd $there $here any -P fwd ipsec esp/tunnel/$peer-$me/unique:7$n;"
    done
}
for gw in gwA gwB; do
    setkey_file "$gw" 2 >"$W/$gw.setkey"
    UP_ARGS[$gw]="--setkey $W/$gw.setkey"
done

e2e_topology_gateway
addr gwB eth0 10.12.0.1/24 10.22.0.1/24 10.23.0.1/24
addr hostB eth0 10.12.0.2/24 10.22.0.2/24 10.23.0.2/24
start_daemons

# SAs by connection: "NAME UNIQUEID SPI_I SPI_R CHILD_SPI_IN CHILD_SPI_OUT CHILD_PROPOSAL", one line each.
conns() {  # conns GW
    fctl "$1" sas --json | python3 -c '
import json, sys
for s in json.load(sys.stdin)["ike_sas"]:
    if s["state"] != "ESTABLISHED":
        continue
    for c in s["child_sas"] or [{"spi_in": "-", "spi_out": "-", "proposal": "-"}]:
        print(s["name"], s["uniqueid"], s["initiator_spi"], s["responder_spi"], c["spi_in"], c["spi_out"], c["proposal"])'
}
names() { conns "$1" | awk '{print $1}' | sort | tr '\n' ' ' | sed 's/ $//'; }
up_as() {  # up_as "NAMES": both gateways have exactly these connections established
    [ "$(names gwA)" = "$1" ] && [ "$(names gwB)" = "$1" ]
}
agreed() {  # agreed NAME: gwA's Child SA of NAME is gwB's, SPIs crossed
    local a b
    a=$(conns gwA | awk -v n="$1" '$1 == n {print $5, $6}')
    b=$(conns gwB | awk -v n="$1" '$1 == n {print $6, $5}')
    [ -n "$a" ] && [ "$a" = "$b" ]
}
line_of() { conns gwA | awk -v n="$1" '$1 == n'; }

both_up() {
    poll "$SA_TIMEOUT" up_as "one two" >/dev/null || { echo "    gwA: $(names gwA); gwB: $(names gwB)"; return 1; }
    agreed one && agreed two || return 1
    ping_one hostA 10.2.0.2 && ping_one hostA 2001:db8:2::2
}
check "a. one and two up at both ends, traffic through each" both_up

start_bg hostB "$W/perf-server.log" "$FLOWSEC_BIN" perf server --bind 10.2.0.2
wait_for_log "$W/perf-server.log" 'listening' 5 "$E2E_LAST_PID" || show_log "$W/perf-server.log"
start_bg hostB "$W/perf-server6.log" "$FLOWSEC_BIN" perf server --bind 2001:db8:2::2
wait_for_log "$W/perf-server6.log" 'listening' 5 "$E2E_LAST_PID" || show_log "$W/perf-server6.log"
# A way out in the clear, as a gateway's default route to the Internet: a
# moment without two's policies would show on the transit link.
ns_exec gwA ip -6 route add default via 2001:db8::2
ns_exec gwB ip -6 route add default via 2001:db8::1

reload_under_stream() {
    local before_one before_two stream="$W/reload-stream.json" stream6="$W/reload-stream6.json"
    local streamer streamer6 loss loss6 out pcap="$W/reload-transit.pcap" clear esp
    before_one=$(line_of one) before_two=$(line_of two)
    gwa_conf aes256gcm16 three >"$W/gwA-swanctl.conf"
    start_capture gwA eth1 "$pcap" || return 1
    ns_exec hostA "$FLOWSEC_BIN" perf client -H 10.2.0.2 -t CBR --rate 20M -m 1000 -l 4 --json >"$stream" 2>&1 &
    streamer=$!
    ns_exec hostA "$FLOWSEC_BIN" perf client -H 2001:db8:2::2 -t CBR --rate 5M -m 500 -l 4 --json >"$stream6" 2>&1 &
    streamer6=$!
    sleep 1
    out=$(fctl gwA reload 2>&1) || { echo "    $out"; wait "$streamer" "$streamer6"; return 1; }
    sed 's/^/    ctl reload: /' <<<"$out"
    wait "$streamer" || { show_log "$stream" 5; return 1; }
    wait "$streamer6" || { show_log "$stream6" 5; return 1; }
    stop_bg "$TCPDUMP_PID" 2
    loss=$(cbr_loss "$stream")
    loss6=$(cbr_loss "$stream6")
    echo "    CBR 20 Mbit/s of 1000 B over one across the reload: lost/received $loss"
    echo "    CBR 5 Mbit/s of 500 B over two (replaced) across the reload: lost/received $loss6"
    # Independent of flowsec: tcpdump reads the transit capture.
    clear=$(tcpdump -r "$pcap" -n 'ip6 and (net 2001:db8:1::/64 or net 2001:db8:2::/64)' 2>/dev/null | wc -l)
    esp=$(tcpdump -r "$pcap" -n 'esp' 2>/dev/null | wc -l)
    echo "    transit during the reload (tcpdump): $esp ESP packets, $clear of two's inner addresses in the clear"
    [ "$clear" -eq 0 ] && [ "$esp" -gt 0 ] || return 1
    [ "${loss%% *}" -eq 0 ] || return 1
    grep -q 'connections replaced: two' <<<"$out" && grep -q 'connections added: three' <<<"$out" &&
        grep -q 'connections unchanged: one' <<<"$out" || return 1
    poll "$SA_TIMEOUT" up_as "one three two" >/dev/null || { echo "    gwA: $(names gwA); gwB: $(names gwB)"; return 1; }
    agreed one && agreed two && agreed three || return 1
    echo "    one before: $before_one"
    echo "    one after:  $(line_of one)"
    echo "    two before: $before_two"
    echo "    two after:  $(line_of two)"
    [ "$(line_of one)" = "$before_one" ] || { echo "    one changed"; return 1; }
    [ "$(line_of two | awk '{print $7}')" = AES-GCM-16-256 ] || return 1
    [ "$(line_of two | awk '{print $2}')" != "$(awk '{print $2}' <<<"$before_two")" ] || return 1
    ping_one hostA 2001:db8:2::2 && ping_one hostA 10.12.0.2
}
check "b. reload: two replaced (ESP AES-GCM-256), three added, one untouched under a CBR stream (0 lost)" reload_under_stream

bad_file_changes_nothing() {
    local before out policies
    before=$(conns gwA | sort)
    policies=$(fctl gwA policies)
    cp "$W/gwA-swanctl.conf" "$W/gwA-swanctl.good"
    # Line 3 loses its '='.
    sed -i '3s/=//' "$W/gwA-swanctl.conf"
    if out=$(fctl gwA reload 2>&1); then
        echo "    a broken file was accepted: $out"; return 1
    fi
    echo "    ctl reload: $out"
    grep -q 'gwA-swanctl.conf:3:' <<<"$out" && grep -q 'nothing changed' <<<"$out" || return 1
    sleep 1
    [ "$(conns gwA | sort)" = "$before" ] || { echo "    the SAs changed"; return 1; }
    [ "$(fctl gwA policies)" = "$policies" ] || { echo "    the policies changed"; return 1; }
    mv "$W/gwA-swanctl.good" "$W/gwA-swanctl.conf"
}
check "c. reload of a file with a syntax error: refused with FILE:LINE, nothing changed" bad_file_changes_nothing

gone() {  # gone NAME: no IKE SA of NAME in any state at either gateway
    local gw
    for gw in gwA gwB; do
        fctl "$gw" sas --json | python3 -c '
import json, sys
sys.exit(any(s["name"] == sys.argv[1] for s in json.load(sys.stdin)["ike_sas"]))' "$1" || return 1
    done
}
sighup_removes() {
    local before_one before_two
    before_one=$(line_of one) before_two=$(line_of two)
    gwa_conf aes256gcm16 >"$W/gwA-swanctl.conf"
    kill -HUP "${GW_PID[gwA]}"
    poll "$SA_TIMEOUT" gone three >/dev/null || { echo "    three still listed"; show_ctl_sas gwA 30; return 1; }
    up_as "one two" || { echo "    gwA: $(names gwA); gwB: $(names gwB)"; return 1; }
    grep -E 'reloaded|IKE_SA three.*deleted' "$(log_of gwA)" | tail -n 2 | sed 's/^/    gwA: /'
    [ "$(line_of one)" = "$before_one" ] && [ "$(line_of two)" = "$before_two" ] &&
        grep -q 'IKE_SA three\[[0-9]*\] deleted by the peer' "$(log_of gwB)" &&
        ping_one hostA 10.2.0.2
}
check "d. three removed, SIGHUP: deleted at both ends, one and two untouched" sighup_removes

manual_seq() {  # manual_seq GW SPI: the SA's sequence number (sent packets)
    fctl "$1" sas --json | python3 -c '
import json, sys
print(sum(s["seq"] for s in json.load(sys.stdin)["sas"] if s["spi"] == sys.argv[1]))' "$2"
}
setkey_reload() {
    local before after out gw
    ping_one hostA 10.22.0.2 || return 1
    before=$(manual_seq gwA 00003201)
    for gw in gwA gwB; do
        setkey_file "$gw" 2 3 >"$W/$gw.setkey"
        out=$(fctl "$gw" reload 2>&1) || { echo "    $gw: $out"; return 1; }
        sed "s/^/    $gw ctl reload: /" <<<"$out" | grep setkey
        grep -q 'setkey: 2 SAs kept, 2 added, 0 removed; policies changed' <<<"$out" || return 1
    done
    ping_one hostA 10.23.0.2 && ping_one hostA 10.22.0.2 || return 1
    after=$(manual_seq gwA 00003201)
    echo "    gwA's SA 0x3201: sequence number $before before the reload, $after after"
    [ "$before" -ge 3 ] && [ "$after" -ge $((before + 3)) ] || return 1
    # An error anywhere: nothing changes (the first pair still there).
    echo "add $GW_A $GW_B esp 0x3999 -E aes-cbc 0x00;" >>"$W/gwA.setkey"
    if out=$(fctl gwA reload 2>&1); then echo "    accepted: $out"; return 1; fi
    echo "    ctl reload: $out"
    grep -q "gwA.setkey:$(wc -l <"$W/gwA.setkey"):" <<<"$out" || return 1
    [ "$(manual_seq gwA 00003201)" -ge "$after" ] && ping_one hostA 10.23.0.2
}
check "e. setkey file reloaded: a second pair added, the first kept (its sequence numbers go on); an error changes nothing" setkey_reload

unit_verifies() {  # the unit as installed, ExecStart and ExecReload on this build's binary
    local unit="$W/flowsec.service" bin out
    bin=$(realpath "$FLOWSEC_BIN")
    sed "s#/usr/sbin/flowsec#$bin#g" "$E2E_ROOT/contrib/flowsec.service" >"$unit"
    out=$(systemd-analyze verify "$unit" 2>&1) || { echo "$out" | sed 's/^/    /'; return 1; }
    [ -z "$out" ] || { echo "$out" | sed 's/^/    /'; return 1; }
    grep -q '^Type=notify' "$unit" && grep -q "^ExecReload=$bin ctl reload" "$unit"
}
if command -v systemd-analyze >/dev/null 2>&1; then
    check "f. contrib/flowsec.service: systemd-analyze verify" unit_verifies
else
    skip "f. contrib/flowsec.service: no systemd-analyze on this machine"
fi

ike_finish
