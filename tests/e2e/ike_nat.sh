#!/usr/bin/env bash
# shellcheck disable=SC2317,SC2119,SC2120,SC2015  # functions called through check and poll
# End-to-end IKEv2 NAT traversal through a real, port-rewriting NAT: gwA
# (flowsec) sits behind a masquerading router and initiates to gwB's public
# address; gwB (flowsec or strongSwan's charon-systemd with kernel-libipsec)
# responds.
#
#   hostA 10.1.0.2 -- gwA 10.1.0.1 | 192.168.77.2 -- 192.168.77.1 nat 192.0.2.1 -- 192.0.2.2 gwB | 10.2.0.1 -- hostB 10.2.0.2
#                               (private)                         (public)
#
# `nat` forwards and masquerades everything leaving its public side, UDP and
# TCP to a random source port of 20000-30000 (nftables `masquerade to
# :20000-30000 random`): gwA's UDP 500 and 4500 both arrive at gwB from
# other ports, as behind a home router. Identities are FQDNs
# (gwa.nat.test, gwb.nat.test); gwB accepts the initiator from anywhere
# (remote_addrs = %any).
#
# Checks, one PASS/FAIL line each:
#   a. IKE SA ESTABLISHED and Child SA INSTALLED at both ends, SPIs agreed;
#      both ends see the NAT (gwA: nat, peer at 4500; a flowsec gwB: nat,
#      the peer's port the NAT's, neither 500 nor 4500; a strongSwan gwB:
#      nat-remote, the same port), the Child SAs are ESP in UDP (encap)
#   b. ping hostA <-> hostB both ways, a TCP transfer hostA -> hostB
#   c. a capture of the public link holds only UDP (IKE on 500/4500 and ESP
#      in UDP), no ESP (protocol 50), no plaintext 10.x, and gwA's packets
#      arrive from NAT-chosen ports (never 500 or 4500)
#   d. Child SA rekeys initiated by gwA and by gwB, an IKE SA rekey by gwA:
#      new SPIs at both ends, still ESP in UDP through the NAT, traffic flows
#   e. NAT rebinding (informative unless it works: PASS or a NOTE line, never
#      FAIL): the NAT forgets its mappings and moves to ports 30001-40000;
#      gwA pings (ESP from the new port), then rekeys its IKE SA (an IKE
#      request from the new port); does gwB follow, IKE and ESP?
#
#   tests/e2e/ike_nat.sh                      root; flowsec on both sides
#   FLOWSEC_IKE_NAT_RIGHT=flowsec|strongswan  what runs on gwB, the responder
#   FLOWSEC_BIN=PATH             the flowsec binary (default target/debug/flowsec)
#   FLOWSEC_IKE_BYTES=N          TCP transfer size (default 2000000)
#   FLOWSEC_IKE_NO_INSTALL=1     never apt-get install strongSwan/tshark
#   FLOWSEC_IKE_WORKERS=N, FLOWSEC_IKE_CHARON_DEBUG=...   as in tests/e2e/ike.sh
#   FLOWSEC_E2E_KEEP=1           keep the work directory (configs, logs, captures)
#
# Without root or ip netns it prints "SKIP: ..." and exits 0; exit status 1
# when any check fails (the daemons' logs are printed then).
set -eu -o pipefail

E2E_PREFIX="${E2E_PREFIX:-ikenat$$-}"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/e2e/ike_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ike_lib.sh"
IKE_TAG="e2e ike-nat" INNER_FAMILIES=4

e2e_require_root_netns

RIGHT="${FLOWSEC_IKE_NAT_RIGHT:-flowsec}"
case "$RIGHT" in
    strongswan|flowsec) ;;
    *) echo "FAIL: FLOWSEC_IKE_NAT_RIGHT=$RIGHT (strongswan or flowsec)"; exit 1 ;;
esac
if ! command -v nft >/dev/null 2>&1; then
    echo "SKIP: needs nft (nftables) for the NAT"
    exit 0
fi
FLOWSEC_BIN="${FLOWSEC_BIN:-$E2E_ROOT/target/debug/flowsec}"
BYTES="${FLOWSEC_IKE_BYTES:-2000000}"
IKE_PROPOSAL=aes128gcm16-prfsha256-ecp256
ESP_PROPOSAL=aes128gcm16-ecp256
UP_TIMEOUT=15 SA_TIMEOUT=20 DPD_DELAY=10s GWA_ROLE="initiator behind the NAT"
CONN=gw CHILD=net TUN=fsnat0
PSK="flowsec-e2e-ike-nat psk, not a secret"
RETRANSMIT_TIMEOUT=1 RETRANSMIT_BASE=1.4 RETRANSMIT_TRIES=2
NAT_PRIV=192.168.77.1 GWA_PRIV=192.168.77.2 NAT_PUB=192.0.2.1 GWB_PUB=192.0.2.2
PORTS1=20000-30000 PORTS2=30001-40000

if [ "$RIGHT" = strongswan ]; then
    install_strongswan || { echo "FAIL: strongSwan is not installed (apt-get install ${STRONGSWAN_PKGS[*]})"; exit 1; }
fi
install_capture_tools
require_flowsec "$FLOWSEC_BIN" FLOWSEC_BIN

echo "e2e ike-nat: gwA (initiator, behind the NAT) flowsec, gwB (responder) $RIGHT; IKE $IKE_PROPOSAL, ESP $ESP_PROPOSAL"
e2e_init
W="$E2E_WORK"
T0=$SECONDS

declare -A IMPL=([gwA]=flowsec [gwB]="$RIGHT")
declare -A LOCAL_ADDR=([gwA]="$GWA_PRIV" [gwB]="$GWB_PUB")
declare -A REMOTE_ADDR=([gwA]="$GWB_PUB" [gwB]="%any")
declare -A LOCAL_ID=([gwA]=gwa.nat.test [gwB]=gwb.nat.test)
declare -A REMOTE_ID=([gwA]=gwb.nat.test [gwB]=gwa.nat.test)
declare -A LOCAL_TS=([gwA]=10.1.0.0/24 [gwB]=10.2.0.0/24)
declare -A REMOTE_TS=([gwA]=10.2.0.0/24 [gwB]=10.1.0.0/24)

# ------------------------------------------------------------ configuration
# (gen_swanctl_conf, gen_strongswan_conf: tests/e2e/ike_lib.sh)
for gw in gwA gwB; do
    gen_swanctl_conf "$gw" >"$W/$gw-swanctl.conf"
    [ "${IMPL[$gw]}" = strongswan ] && gen_strongswan_conf "$gw" >"$W/$gw-strongswan.conf"
done

# -------------------------------------------------------------- one side
# The endpoints each side uses, one line (sas: tests/e2e/ike_lib.sh).
endpoints() {
    local gw
    for gw in gwA gwB; do
        sas "$gw" '"%s: %s:%s -> %s:%s nat %s%s, child encap %s" % (gw, ike["local_host"], ike["local_port"],
            ike["remote_host"], ike["remote_port"], ike["nat"],
            "" if ike["nat_remote"] is None else " (nat-local %s, nat-remote %s)" % (ike["nat_local"], ike["nat_remote"]),
            child["encap"] if child else "-")' | sed 's/^/    /' || echo "    $gw: no IKE SA"
    done
}

# -------------------------------------------------------------------- topology
for n in hostA gwA nat gwB hostB; do ns_add "$n"; done
veth hostA eth0 gwA eth0
veth gwA eth1 nat eth0
veth nat eth1 gwB eth1
veth gwB eth0 hostB eth0
addr hostA eth0 10.1.0.2/24
addr gwA eth0 10.1.0.1/24
addr gwA eth1 "$GWA_PRIV/24"
addr nat eth0 "$NAT_PRIV/24"
addr nat eth1 "$NAT_PUB/24"
addr gwB eth1 "$GWB_PUB/24"
addr gwB eth0 10.2.0.1/24
addr hostB eth0 10.2.0.2/24
ns_exec hostA ip route add default via 10.1.0.1
ns_exec hostB ip route add default via 10.2.0.1
# gwA reaches the Internet through the NAT; gwB has no route to the
# private network (only the NAT's public address is on its link).
ns_exec gwA ip route add default via "$NAT_PRIV"
for n in gwA nat gwB; do
    sysctl_ns "$n" net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
        net.ipv4.conf.eth0.rp_filter=0 net.ipv4.conf.eth1.rp_filter=0
done
for l in hostA:eth0 gwA:eth0 gwA:eth1 nat:eth0 nat:eth1 gwB:eth1 gwB:eth0 hostB:eth0; do
    disable_offloads "${l%%:*}" "${l#*:}"
done

nat_rules() {  # nat_rules PORTS: masquerade on the public side, TCP/UDP to PORTS, random
    ns_exec nat nft -f - <<EOF
flush ruleset
table ip nat {
    chain post {
        type nat hook postrouting priority 100; policy accept;
        oifname "eth1" meta l4proto { tcp, udp } masquerade to :$1 random
        oifname "eth1" masquerade
    }
}
EOF
}
nat_rules "$PORTS1" || { echo "FAIL: nft: cannot set up the NAT"; exit 1; }
# The NAT forgets its mappings: conntrack -F where there is conntrack(8);
# otherwise its public address goes and comes back (masquerade drops the
# connections it mapped to an address that goes away).
nat_forget() {
    if command -v conntrack >/dev/null 2>&1; then
        ns_exec nat conntrack -F >/dev/null 2>&1 && { echo "conntrack -F"; return 0; }
    fi
    ns_exec nat ip addr del "$NAT_PUB/24" dev eth1
    ns_exec nat ip addr add "$NAT_PUB/24" dev eth1
    echo "public address removed and re-added"
}

start_daemons

capture() {  # capture NAME: tcpdump on the NAT's public side; TCPDUMP_PID
    start_capture nat eth1 "$W/$1.pcap"
}
capture public

# ----------------------------------------------------------- (a) SAs come up
NAT_PORT=""   # gwA's IKE port (4500) as the NAT maps it: what gwB sees
sa_up_through_nat() {
    local ok=0
    sa_up || return 1
    endpoints
    sas gwA 'ike["nat"] and ike["remote_host"] == "'"$GWB_PUB"'" and ike["remote_port"] == 4500 and ike["local_port"] == 4500' ||
        { echo "    gwA: expected nat true, local port 4500, peer $GWB_PUB:4500"; ok=1; }
    NAT_PORT=$(sas gwB 'ike["remote_port"]') || true
    if [ "$RIGHT" = flowsec ]; then
        sas gwB 'ike["nat"]' || { echo "    gwB: nat is not true"; ok=1; }
    else
        sas gwB 'ike["nat_remote"] and not ike["nat_local"]' || { echo "    gwB: expected nat-remote (and not nat-local)"; ok=1; }
    fi
    sas gwB 'ike["remote_host"] == "'"$NAT_PUB"'" and ike["remote_port"] not in (500, 4500) and ike["local_port"] == 4500' ||
        { echo "    gwB: expected the peer at the NAT's $NAT_PUB, port neither 500 nor 4500, local port 4500"; ok=1; }
    echo "    gwB sees gwA at $NAT_PUB:$NAT_PORT (the NAT's mapping of gwA's 4500)"
    sas gwA 'child["encap"]' || { echo "    gwA: Child SA not ESP in UDP"; ok=1; }
    sas gwB 'child["encap"]' || { echo "    gwB: Child SA not ESP in UDP"; ok=1; }
    return "$ok"
}
check "a. IKE SA ESTABLISHED and Child SA INSTALLED at both ends through the NAT, SPIs agreed, NAT detected, ESP in UDP" sa_up_through_nat
stop_without_sas

# ------------------------------------------------------------ (b) traffic
check "b. ping hostA <-> hostB through the NAT, both ways" ping_both

check "b. TCP hostA -> hostB through the NAT, $BYTES bytes, sha256 matches" tcp_transfer hostA hostB 10.2.0.2 "$BYTES"

# --------------------------------------------------------- (d) rekeys
CUR_CHILD=$(child_agreed || true)
child_rekey_via_nat() {  # child_rekey_via_nat GW: child_rekey (ike_lib.sh), and the new Child SA is ESP in UDP at both ends
    child_rekey "$1" || return 1
    sas gwA 'child["encap"]' && sas gwB 'child["encap"]' || { echo "    the new Child SA is not ESP in UDP"; endpoints; return 1; }
}
check "d. Child SA rekey initiated by gwA (flowsec, behind the NAT): new SPIs at both ends, ESP in UDP, traffic flows" \
    child_rekey_via_nat gwA
check "d. Child SA rekey initiated by gwB ($RIGHT, to the NAT's mapping): new SPIs at both ends, ESP in UDP, traffic flows" \
    child_rekey_via_nat gwB

ike_rekey_via_nat() {  # ike_rekey_via_nat GW: ike_rekey (ike_lib.sh), and both ends still see the NAT
    ike_rekey "$1" || return 1
    endpoints
    sas gwA 'ike["nat"]' && sas gwB 'ike["nat"]' || { echo "    the new IKE SA lost the NAT"; return 1; }
}
check "d. IKE SA rekey initiated by gwA (flowsec, behind the NAT): new IKE SPIs at both ends, Child SA kept, traffic flows" \
    ike_rekey_via_nat gwA

# ------------------------------------------------------------- (c) capture
stop_bg "$TCPDUMP_PID" 3
public_capture_check() {
    local pcap="$W/public.pcap" ports bad_src
    # Anything but UDP to/from gwB's 500/4500 (raw ESP among it), and link-local noise.
    local other="not ((udp.srcport == 500 or udp.srcport == 4500) and ip.src == $GWB_PUB) and not ((udp.dstport == 500 or udp.dstport == 4500) and ip.dst == $GWB_PUB) and not ($NOISE_FILTER)"
    capture_only "$pcap" "ESP in UDP" "esp and udp" "$NAT_PUB" "$GWB_PUB" "$other" \
        'ip.addr == 10.0.0.0/8 or ip.addr == 192.168.0.0/16' || return 1
    # The ports gwA's packets came from, as the NAT rewrote them.
    ports=$(tshark -n -r "$pcap" -Y "udp and ip.src == $NAT_PUB" -T fields -e udp.srcport -e udp.dstport 2>/dev/null |
        sort | uniq -c | awk '{printf "%s%s->%s (%d)", (NR > 1 ? ", " : ""), $2, $3, $1}')
    echo "    gwA's UDP via the NAT, source->destination port (frames): $ports"
    bad_src=$(frames "$pcap" "udp and ip.src == $NAT_PUB and (udp.srcport == 500 or udp.srcport == 4500 or udp.srcport < 20000 or udp.srcport > 30000)")
    [ "$bad_src" -eq 0 ] || { echo "    $bad_src frames from the NAT with a source port outside $PORTS1"; return 1; }
}
check_needs tshark "c. the public link carries only UDP (IKE 500/4500, ESP in UDP) both ways, no ESP protocol 50, no plaintext, NAT-rewritten ports" public_capture_check

# ------------------------------------------------------ (e) NAT rebinding
# Informative: PASS when gwB follows gwA to its new NAT mapping, a NOTE
# line saying what happened otherwise.
rebinding() {
    local old_port new_port how got pin0 pin1 t
    old_port=$(sas gwB 'ike["remote_port"]') || { echo "    no IKE SA at gwB"; return 1; }
    capture rebind
    nat_rules "$PORTS2" || { echo "    nft failed"; return 1; }
    how=$(nat_forget) || { echo "    could not flush the NAT's mappings"; return 1; }
    echo "    NAT: mappings flushed ($how), masquerading to ports $PORTS2 now; gwB saw gwA at $NAT_PUB:$old_port"
    # 1. ESP alone: hostA pings; its ESP leaves the NAT from a new port.
    pin0=$(sas gwB 'child["packets_in"]') || pin0=0
    if e2e_ping hostA 10.2.0.2 2 0.3 1 >"$W/ping-rebind.log" 2>&1; then got=answered; else got="not answered"; fi
    pin1=$(sas gwB 'child["packets_in"]') || pin1=0
    new_port=$(sas gwB 'ike["remote_port"]') || new_port="?"
    REBIND_ESP="ESP only (hostA pings 10.2.0.2): $(grep -o '[0-9]* received' "$W/ping-rebind.log" || echo '?') of 2, $got; gwB's Child SA packets in $pin0 -> $pin1; gwB's IKE SA has gwA at port $new_port"
    echo "    $REBIND_ESP"
    # 2. An IKE request from the new port: gwA rekeys its IKE SA.
    t=$SECONDS
    local old new
    old=$(ike_agreed) || old=""
    rekey_ike gwA || return 1
    # shellcheck disable=SC2086
    if new=$(poll "$SA_TIMEOUT" ike_agreed $old); then
        echo "    IKE SA rekey from gwA after the rebinding: SPIs $old -> $new in $((SECONDS - t)) s"
    else
        REBIND_RESULT="the IKE SA rekey from gwA's new port did not complete within ${SA_TIMEOUT}s"
        show_sas; return 1
    fi
    new_port=$(sas gwB 'ike["remote_port"]') || new_port="?"
    endpoints
    local child
    child=$(poll 5 child_agreed) || { REBIND_RESULT="no agreed Child SA after the IKE SA rekey"; show_sas; return 1; }
    if [ "$child" = "$CUR_CHILD" ]; then
        echo "    Child SA kept: SPIs (gwA in/out) $child"
    else
        echo "    Child SA replaced: SPIs (gwA in/out) $CUR_CHILD -> $child"
    fi
    CUR_CHILD=$child
    if [ "$new_port" = "$old_port" ]; then
        REBIND_RESULT="gwB's IKE SA still has gwA at $NAT_PUB:$old_port after an IKE request from the new mapping"
        return 1
    fi
    echo "    gwB's IKE SA follows gwA: $NAT_PUB:$old_port -> $NAT_PUB:$new_port"
    if [ "$RIGHT" = flowsec ]; then
        fctl gwB sas --json | python3 -c '
import json, sys
for s in json.load(sys.stdin)["sas"]:
    print("    gwB SA %s %s -> %s encap %s" % (s["spi"], s["src"], s["dst"], s["encap"]))' || true
    fi
    # 3. ESP both ways on the Child SAs (kept across the IKE rekey).
    if ping_both; then
        REBIND_RESULT="ok"
    else
        REBIND_RESULT="gwB's IKE SA moved to $NAT_PUB:$new_port, but ESP hostA <-> hostB does not flow after the rebinding"
        return 1
    fi
}
REBIND_ESP="" REBIND_RESULT=""
if rebinding; then
    echo "PASS: e. NAT rebinding: gwB follows gwA to its new NAT port (IKE and ESP in UDP)"
    E2E_PASSED=$((E2E_PASSED + 1))
else
    echo "NOTE: e. NAT rebinding (informative, not a failure): ${REBIND_RESULT:-see above}"
fi
stop_bg "$TCPDUMP_PID" 3
if command -v tshark >/dev/null 2>&1 && [ -s "$W/rebind.pcap" ]; then
    echo "    after the rebinding, UDP on the public link (source -> destination, frames):"
    tshark -n -r "$W/rebind.pcap" -Y 'udp and not icmp' -T fields -e ip.src -e udp.srcport -e ip.dst -e udp.dstport -e _ws.col.Protocol 2>/dev/null |
        awk '{printf "%s:%s -> %s:%s %s\n", $1, $2, $3, $4, $5}' | uniq -c | head -n 20 | sed 's/^ */      /'
    tshark -n -r "$W/rebind.pcap" -Y icmp 2>/dev/null | head -n 3 | sed 's/^/      icmp: /'
fi
for gw in gwA gwB; do
    if [ "${IMPL[$gw]}" = flowsec ]; then
        grep -E 'NAT|rebound|moved from|rekey failed' "$(log_of "$gw")" | tail -n 5 | sed "s/^/    $gw log: /" || true
    else
        grep -E 'remote endpoint changed|half-open|TEMP_FAIL' "$(log_of "$gw")" | tail -n 5 | sed "s/^/    $gw log: /" || true
    fi
done

ike_finish
