#!/usr/bin/env bash
# End-to-end: what a running flowsec daemon may do and who may talk to it
# (issue 12). Two gateways keyed by setkey (AES-GCM-16, tunnel mode):
#
#   hostA 10.1.0.2 -- gwA | 192.0.2.1 == ESP == 192.0.2.2 | gwB -- hostB 10.2.0.2
#
# Checks: the daemon keeps only CAP_NET_ADMIN, CAP_NET_RAW and
# CAP_NET_BIND_SERVICE (CapEff and CapBnd of every thread in /proc) with
# no_new_privs, and `ctl status` says so; the control socket is mode 0600
# and refuses another user; with --ctl-group a member of that group may
# use it and others may not.
#
#   tests/e2e/hardening.sh          root; needs target/debug/flowsec
#   FLOWSEC_E2E_KEEP=1              keep the work directory
#
# Without root or ip netns it prints "SKIP: ..." and exits 0.
set -eu -o pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

e2e_require_root_netns

FLOWSEC="${FLOWSEC:-$E2E_ROOT/target/debug/flowsec}"
require_flowsec "$FLOWSEC" FLOWSEC
command -v setpriv >/dev/null || { echo "SKIP: no setpriv (util-linux)"; exit 0; }

e2e_init
W="$E2E_WORK"
# The sockets live under $W/ctl; another user must be able to reach it.
chmod 0755 "$W"
e2e_topology_gateway
e2e_write_gcm_setkeys "$W" hardening
echo "e2e hardening: $FLOWSEC"

gateway_up() {  # gateway_up GW [flowsec up options...]
    local gw="$1"; shift
    daemon_up "$gw" "$W/$gw.log" "$FLOWSEC" up --tun fsec0 --setkey "$W/$gw.setkey" "$@"
}
check "gwA: flowsec up" gateway_up gwA --socket "$W/ctl/gwA.sock"
check "gwB: flowsec up" gateway_up gwB --socket "$W/ctl/gwB.sock"
[ "$E2E_FAILED" -eq 0 ] || e2e_finish

# ------------------------------------------------------------ capabilities
KEPT=0000000000003400   # bits 10, 12, 13: NET_BIND_SERVICE, NET_ADMIN, NET_RAW
capabilities_dropped() {
    local pid="${GW_PID[gwA]}" task bad=0 n=0
    for task in /proc/"$pid"/task/*; do
        n=$((n + 1))
        local eff bnd prm nnp
        read -r eff prm bnd nnp < <(awk '{ v[$1] = $2 } END { print v["CapEff:"], v["CapPrm:"], v["CapBnd:"], v["NoNewPrivs:"] }' "$task/status")
        if [ "$eff" != $KEPT ] || [ "$prm" != $KEPT ] || [ "$bnd" != $KEPT ] || [ "$nnp" != 1 ]; then
            echo "    $(cat "$task/comm"): CapEff $eff CapPrm $prm CapBnd $bnd NoNewPrivs $nnp"
            bad=1
        fi
    done
    echo "    $n threads: CapEff/CapPrm/CapBnd $KEPT, NoNewPrivs 1: $([ $bad = 0 ] && echo all || echo not all)"
    [ $bad = 0 ]
}
check "gwA: every thread keeps only NET_ADMIN, NET_RAW, NET_BIND_SERVICE, no_new_privs (/proc/PID/task/*/status)" \
    capabilities_dropped

status_says_so() {
    "$FLOWSEC" ctl status --json --socket "$W/ctl/gwA.sock" | python3 -c '
import json, sys
s = json.load(sys.stdin)
print("    ctl status: capabilities %s, no_new_privs %s" % (s["capabilities"], s["no_new_privs"]))
assert sorted(s["capabilities"]) == ["cap_net_admin", "cap_net_bind_service", "cap_net_raw"], s
assert s["no_new_privs"] is True, s
'
}
check "ctl status shows the effective capabilities" status_says_so

# The tunnel still works with what is left (routes, nft, raw sockets).
check "ping hostA -> hostB through the tunnel" ping_one hostA 10.2.0.2

# ------------------------------------------- manual keys never repeat a nonce
# AES-GCM's IV is the sequence number: gwA's SA 0x1001 must go on above
# every number it used, after a restart and after delete + add of the same
# key (RFC 4106 §8.1). The capture on the transit link shows the numbers.
esp_seqs() {  # esp_seqs PCAP: the sequence numbers of SPI 0x1001, one a line
    tcpdump -n -r "$1" 'ip proto 50' 2>/dev/null | grep -o 'spi=0x00001001,seq=0x[0-9a-f]*' |
        sed 's/.*seq=//' | while read -r x; do echo $((x)); done
}
pings_captured() {  # pings_captured PCAP
    start_capture gwA eth1 "$1" ip proto 50 || return 1
    ping_one hostA 10.2.0.2 >/dev/null || return 1
    sleep 0.3
    stop_bg "$TCPDUMP_PID" 2
}
nonces_never_repeat() {
    local before after readded
    pings_captured "$W/before.pcap" || return 1
    before=$(esp_seqs "$W/before.pcap" | sort -n | tail -n 1)
    daemon_down gwA
    gateway_up gwA --socket "$W/ctl/gwA.sock" || return 1
    pings_captured "$W/after.pcap" || return 1
    after=$(esp_seqs "$W/after.pcap" | sort -n | head -n 1)
    # The same SA and key deleted and added again at run time.
    sed -n '/^add 192.0.2.1 192.0.2.2/p' "$W/gwA.setkey" >"$W/readd.setkey"
    { echo "delete 192.0.2.1 192.0.2.2 esp 0x1001;"; cat "$W/readd.setkey"; } >"$W/readd2.setkey"
    "$FLOWSEC" setkey -f "$W/readd2.setkey" --socket "$W/ctl/gwA.sock" >"$W/readd.log" 2>&1 || { show_log "$W/readd.log"; return 1; }
    pings_captured "$W/readded.pcap" || return 1
    readded=$(esp_seqs "$W/readded.pcap" | sort -n | head -n 1)
    echo "    SPI 0x1001: last seq before the restart ${before:-none}, first after ${after:-none}, first after delete + add ${readded:-none}"
    [ -n "$before" ] && [ -n "$after" ] && [ -n "$readded" ] && [ "$after" -gt "$before" ] && [ "$readded" -gt "$after" ]
}
check "manual AES-GCM: sequence numbers (nonces) go on after a restart and after delete + add of the same key" nonces_never_repeat

state_dir_required() {
    local out rc=0
    out=$(ns_exec gwA timeout 10 "$FLOWSEC" up --tun fsec9 --setkey "$W/gwA.setkey" --socket "$W/ctl/x.sock" \
        --state-dir /proc/flowsec-no-such-dir 2>&1) || rc=$?
    echo "    $out" | grep -v warning | head -n 1
    [ "$rc" = 1 ] && echo "$out" | grep -q 'state directory'
}
check "no writable state directory: flowsec up with manual AES-GCM keys refuses to start" state_dir_required

# ---------------------------------------------------------- control socket
as_user() {  # as_user UID GID cmd...: run cmd as another user (no supplementary groups)
    local uid="$1" gid="$2"; shift 2
    setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all "$@"
}
socket_private() {
    local mode out rc=0
    mode=$(stat -c '%a %U:%G' "$W/ctl/gwA.sock")
    echo "    $W/ctl/gwA.sock: $mode"
    [ "$mode" = "600 root:root" ] || return 1
    out=$(as_user 65534 65534 "$FLOWSEC" ctl status --socket "$W/ctl/gwA.sock" 2>&1) || rc=$?
    echo "    as nobody: exit $rc: $out" | head -n 1
    [ "$rc" -ne 0 ] || return 1
    # Past the file's mode (CAP_DAC_OVERRIDE): the daemon itself refuses
    # the connection by its SO_PEERCRED uid.
    rc=0
    out=$(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=+dac_override \
        --ambient-caps=+dac_override "$FLOWSEC" ctl status --socket "$W/ctl/gwA.sock" 2>&1) || rc=$?
    echo "    as nobody with CAP_DAC_OVERRIDE: exit $rc: $out" | head -n 1
    [ "$rc" -ne 0 ] && echo "$out" | grep -q 'permission denied: uid 65534'
}
check "control socket: mode 0600 root, another user refused (by the file's mode and by SO_PEERCRED)" socket_private

group_may_use_it() {
    local gid=4242 mode out rc=0
    daemon_down gwA
    gateway_up gwA --socket "$W/ctlg/gwA.sock" --ctl-group "$gid" || return 1
    mode=$(stat -c "%a %g" "$W/ctlg/gwA.sock")
    echo "    with --ctl-group $gid: $mode"
    [ "$mode" = "660 $gid" ] || return 1
    as_user 65534 "$gid" "$FLOWSEC" ctl status --socket "$W/ctlg/gwA.sock" >/dev/null 2>"$W/member.log" ||
        { show_log "$W/member.log"; return 1; }
    out=$(as_user 65534 65534 "$FLOWSEC" ctl status --socket "$W/ctlg/gwA.sock" 2>&1) || rc=$?
    echo "    a member: answered; nobody (not a member): exit $rc"
    [ "$rc" -ne 0 ]
}
check "--ctl-group: a member of the group is answered, others are refused" group_may_use_it
SOCK_A="$W/ctlg/gwA.sock"

# ---------------------------------------------------------- stalled egress
# gwA's transit link nearly stops (8 kbit/s, a deep queue): its sends
# would block. Workers must drop and count instead (send_eagain), and the
# control plane must keep answering (ctl stats and setkey -D ask the
# workers) and stop on SIGTERM.
stalled_egress() {
    local t0 took rc=0 eagain
    ns_exec gwA tc qdisc replace dev eth1 root tbf rate 8kbit burst 1600 limit 3000000
    start_bg hostA "$W/flood.log" python3 "$E2E_TOOLS" dgram-send --to 10.2.0.2 --port 9 --size 1200 \
        --count 40000 --rate 8000
    local flood=$E2E_LAST_PID
    sleep 2
    t0=$SECONDS
    timeout 5 "$FLOWSEC" ctl stats --json --socket "$SOCK_A" >"$W/stall-stats.json" 2>&1 || rc=$?
    timeout 5 "$FLOWSEC" setkey -D --socket "$SOCK_A" >"$W/stall-dump.txt" 2>&1 || rc=$?
    took=$((SECONDS - t0))
    eagain=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"].get("send_eagain", 0))' \
        "$W/stall-stats.json" 2>/dev/null || echo "?")
    stop_bg "$flood" 1
    daemon_down gwA
    local down=$E2E_LAST_RC
    ns_exec gwA tc qdisc del dev eth1 root 2>/dev/null || true
    echo "    ctl stats + setkey -D answered in ${took}s (exit $rc); send_eagain=$eagain; SIGTERM: exit $down"
    [ "$rc" = 0 ] && [ "$took" -le 4 ] && [ "$eagain" != "?" ] && [ "$eagain" -gt 0 ] && [ "$down" = 0 ]
}
check "stalled egress at gwA: sends dropped and counted (send_eagain), the control plane answers, SIGTERM stops it" \
    stalled_egress

for gw in gwA gwB; do
    [ -z "${GW_PID[$gw]}" ] || check "$gw: SIGTERM -> exit 0" daemon_down "$gw"
done
e2e_finish
