#!/usr/bin/env bash
# shellcheck disable=SC2317,SC2119,SC2120,SC2015,SC2034  # functions called through check and poll; variables ike_lib.sh reads
# End-to-end redirect (RFC 5685) and a small gateway cluster: a flowsec
# front gateway sends each new road warrior, at IKE_SA_INIT, to the back
# gateway holding the fewest IKE SAs (it reads their vici `stats` once a
# second: `redirect_to` with `redirect_load`); each back gateway serves
# its own pool. All on one switch (a bridge):
#
#   front 192.0.2.1 (flowsec: redirect_to back1, back2)
#   sfront 192.0.2.2 (strongSwan 5.9.8, an ordinary road-warrior gateway)
#   back1 192.0.2.11 (flowsec, pool 10.3.1.0/24) · back2 192.0.2.12 (flowsec, pool 10.3.2.0/24)
#     each back has 10.2.0.1 (on lo): what a road warrior reaches through it
#   rw1..rwN 192.0.2.101.. (flowsec road warriors, vips = 0.0.0.0, remote_ts 10.2.0.0/16)
#   srw 192.0.2.99 (strongSwan 5.9.8 road warrior) · rwx 192.0.2.98 (flowsec, to sfront)
#
# All gateways present id gw.cluster.test; PSK, any client identity.
# Checks, one PASS/FAIL line each:
#   a. the gateways come up
#   b. the cluster: N flowsec road warriors (default 20). A quarter go to
#      back1 directly first; then the rest start at once against the
#      front. Each is up at back1 or back2 with a virtual IP from that
#      back's pool; the front holds no IKE SA and redirected the rest; the
#      backs end even (they differ by at most N/10): the front sent more
#      to back2, as the backs' counts said
#   c. each road warrior pings 10.2.0.1 through its tunnel
#   d. a strongSwan 5.9.8 road warrior, redirected by the flowsec front at
#      IKE_SA_INIT: up at a back with an address of its pool, pings
#   e. `flowsec ctl redirect --peer-ip` on that back (an INFORMATIONAL
#      REDIRECT): the strongSwan road warrior goes to the other back (new
#      IKE SA there, the old one deleted), pings
#   f. a flowsec road warrior up at the strongSwan gateway, redirected by
#      `swanctl --redirect --peer-ip … --gateway 192.0.2.11`: up at back1,
#      gone from sfront, pings
#
#   tests/e2e/ike_redirect.sh       root
#   FLOWSEC_REDIRECT_CLIENTS=N      flowsec road warriors in the cluster (default 20)
#   FLOWSEC_BIN=PATH                the flowsec binary (default target/debug/flowsec)
#   FLOWSEC_IKE_NO_INSTALL=1        never apt-get install strongSwan
#   FLOWSEC_E2E_KEEP=1              keep the work directory (configs, logs)
#
# Without root or ip netns it prints "SKIP: ..." and exits 0; exit status 1
# when any check fails.
set -eu -o pipefail

E2E_PREFIX="${E2E_PREFIX:-redir$$-}"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/e2e/ike_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ike_lib.sh"
IKE_TAG="e2e ike-redirect"

e2e_require_root_netns

FLOWSEC_BIN="${FLOWSEC_BIN:-$E2E_ROOT/target/debug/flowsec}"
N="${FLOWSEC_REDIRECT_CLIENTS:-20}"
PRE=$((N / 4))   # of them, those that go to back1 directly first
UP_TIMEOUT=15 SA_TIMEOUT=30
RETRANSMIT_TIMEOUT=1 RETRANSMIT_BASE=1.4 RETRANSMIT_TRIES=4
CONN=rw CHILD=net TUN=fsrd0
PSK="flowsec-e2e-redirect psk, not a secret"
FRONT=192.0.2.1 SFRONT=192.0.2.2 BACK1=192.0.2.11 BACK2=192.0.2.12 SRW=192.0.2.99 RWX=192.0.2.98
PROPOSALS="proposals = aes128gcm16-prfsha256-ecp256"
ESP="esp_proposals = aes128gcm16-ecp256"

install_strongswan || { echo "FAIL: strongSwan is not installed (apt-get install ${STRONGSWAN_PKGS[*]})"; exit 1; }
require_flowsec "$FLOWSEC_BIN" FLOWSEC_BIN
echo "e2e ike-redirect: $N flowsec road warriors -> flowsec front -> back1/back2; strongSwan 5.9.8 road warrior and gateway"
e2e_init
W="$E2E_WORK"
T0=$SECONDS
declare -A IMPL=([front]=flowsec [back1]=flowsec [back2]=flowsec [sfront]=strongswan [srw]=strongswan [rwx]=flowsec)
CLIENTS=()
for ((i = 1; i <= N; i++)); do CLIENTS+=("rw$i"); IMPL[rw$i]=flowsec; done

# -------------------------------------------------------------------- topology
ns_add sw
ns_exec sw ip link add br0 type bridge
ns_exec sw ip link set br0 up
port=0
attach() {  # attach NODE ADDRESS: NODE's eth0 on the switch
    ns_add "$1"
    port=$((port + 1))
    veth "$1" eth0 sw "p$port"
    ns_exec sw ip link set "p$port" master br0
    addr "$1" eth0 "$2/24"
    sysctl_ns "$1" net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
}
attach front "$FRONT"
attach sfront "$SFRONT"
# charon's kernel-libipsec installs its routes with a source address in
# local_ts: sfront has one too.
addr sfront lo 10.2.0.1/32
for b in back1:"$BACK1" back2:"$BACK2"; do
    attach "${b%%:*}" "${b#*:}"
    addr "${b%%:*}" lo 10.2.0.1/32
    sysctl_ns "${b%%:*}" net.ipv4.ip_forward=1
done
attach srw "$SRW"
attach rwx "$RWX"
for ((i = 1; i <= N; i++)); do attach "rw$i" "192.0.2.$((100 + i))"; done

# ------------------------------------------------------------ configuration
gateway_conf() {  # gateway_conf LOCAL POOL [EXTRA]: a road-warrior gateway's swanctl.conf
    cat <<EOF
# flowsec $IKE_TAG: gateway $1
connections {
    rw {
        local_addrs = $1
        $PROPOSALS
        pools = rw
        ${3:-}
        local {
            auth = psk
            id = gw.cluster.test
        }
        remote {
            auth = psk
        }
        children {
            net {
                local_ts = 10.2.0.0/16
                $ESP
            }
        }
    }
}
pools {
    rw {
        addrs = $2
    }
}
secrets {
    ike-rw {
        secret = "$PSK"
    }
}
EOF
}
client_conf() {  # client_conf ID GATEWAY: a road warrior's swanctl.conf
    cat <<EOF
# flowsec $IKE_TAG: road warrior $1
connections {
    rw {
        remote_addrs = $2
        vips = 0.0.0.0
        $PROPOSALS
        local {
            auth = psk
            id = $1
        }
        remote {
            auth = psk
            id = gw.cluster.test
        }
        children {
            net {
                remote_ts = 10.2.0.0/16
                $ESP
                start_action = ${3:-start}
            }
        }
    }
}
secrets {
    ike-rw {
        secret = "$PSK"
    }
}
EOF
}
gateway_conf "$FRONT" 10.3.0.0/24 "redirect_to = $BACK1, $BACK2
        redirect_load = unix://$W/back1.sock, unix://$W/back2.sock" >"$W/front-swanctl.conf"
gateway_conf "$BACK1" 10.3.1.0/24 >"$W/back1-swanctl.conf"
gateway_conf "$BACK2" 10.3.2.0/24 >"$W/back2-swanctl.conf"
gateway_conf "$SFRONT" 10.3.9.0/24 >"$W/sfront-swanctl.conf"
client_conf srw.cluster.test "$FRONT" none >"$W/srw-swanctl.conf"
client_conf rwx.cluster.test "$SFRONT" >"$W/rwx-swanctl.conf"
for c in "${CLIENTS[@]}"; do client_conf "$c.cluster.test" "$FRONT" >"$W/$c-swanctl.conf"; done
for s in sfront srw; do gen_strongswan_conf "$s" >"$W/$s-strongswan.conf"; done

gateways_up() {
    local g
    for g in front back1 back2 sfront; do start_daemon "$g" || return 1; done
}
check "a. the gateways up: flowsec front, back1, back2; strongSwan sfront" gateways_up
[ "$E2E_FAILED" -eq 0 ] || ike_finish

# ------------------------------------------------------------ (b) the cluster
# One road warrior's IKE SA as "GATEWAY VIP" (its remote host, its
# virtual IP), from `flowsec ctl sas` (sas: tests/e2e/ike_lib.sh).
where() { sas "$1" '"%s %s" % (ike["remote_host"], " ".join(ike["local_vips"]))'; }
all_up_of() {  # all_up_of CLIENT...: each has an IKE SA and a Child SA
    local c
    for c in "$@"; do sas "$c" 'child is not None' >/dev/null || return 1; done
}
cluster() {
    local c at vip t n1=0 n2=0 bad=0 front_sas redirects i
    # The first PRE go to back1 directly (as if its earlier clients):
    # the front must see back1's load and send more of the rest to back2.
    for ((i = 0; i < N; i++)); do
        c="${CLIENTS[$i]}"
        UP_ARGS[$c]="--workers 1"
        [ "$i" -lt "$PRE" ] && client_conf "$c.cluster.test" "$BACK1" >"$W/$c-swanctl.conf"
    done
    for ((i = 0; i < PRE; i++)); do start_daemon "${CLIENTS[$i]}" || return 1; done
    poll "$SA_TIMEOUT" all_up_of "${CLIENTS[@]:0:$PRE}" >/dev/null || echo "    the first $PRE are not up at back1"
    sleep 2   # the front reads the backs' counts once a second
    t=$SECONDS
    for ((i = PRE; i < N; i++)); do start_daemon "${CLIENTS[$i]}" || return 1; done
    poll "$SA_TIMEOUT" all_up_of "${CLIENTS[@]}" >/dev/null || echo "    not every road warrior is up within ${SA_TIMEOUT}s"
    echo "    $PRE road warriors up at back1 directly; then $((N - PRE)) started at once through the front, up within $((SECONDS - t)) s"
    for c in "${CLIENTS[@]}"; do
        read -r at vip <<<"$(where "$c" || echo "- -")"
        case "$at:$vip" in
            "$BACK1":10.3.1.*) n1=$((n1 + 1)) ;;
            "$BACK2":10.3.2.*) n2=$((n2 + 1)) ;;
            *) echo "    $c: at ${at:--} with virtual IP ${vip:--}"; bad=$((bad + 1)) ;;
        esac
    done
    front_sas=$(fctl front stats --json | python3 -c 'import json,sys; d=json.load(sys.stdin)["ike"]; print(d.get("ike_sas", "?"), d.get("redirects", "?"))')
    read -r front_sas redirects <<<"$front_sas"
    echo "    back1 $n1 (of them $PRE direct), back2 $n2, elsewhere $bad; the front holds $front_sas IKE SAs and redirected $redirects clients"
    local diff=$((n1 > n2 ? n1 - n2 : n2 - n1))
    [ "$bad" -eq 0 ] && [ "$front_sas" = 0 ] && [ "$redirects" = $((N - PRE)) ] && [ "$diff" -le $((N / 10 > 1 ? N / 10 : 1)) ]
}
declare -A UP_ARGS=()
check "b. $PRE road warriors at back1, then $((N - PRE)) through the front: each up at a back with an address of its pool, the front keeps none, the backs even" cluster

pings() {
    local c bad=0
    for c in "${CLIENTS[@]}"; do
        e2e_ping "$c" 10.2.0.1 2 0.2 2 >"$W/ping-$c.log" 2>&1 || { echo "    $c: no answer"; bad=$((bad + 1)); }
    done
    echo "    $((N - bad)) of $N road warriors reach 10.2.0.1 through their back gateway"
    [ "$bad" -eq 0 ]
}
check "c. every road warrior pings 10.2.0.1 through its tunnel" pings

# ----------------------------------------------- (d) strongSwan road warrior
SRW_AT=""
srw_at() {  # srw_at: "HOST VIP" of srw's IKE SA (swanctl --list-sas)
    sas srw '"%s %s" % (ike["remote_host"], " ".join(ike["local_vips"]))'
}
srw_redirected() {
    local at vip
    mount_root
    start_daemon srw || return 1
    sw srw --initiate --child net --timeout 20 >"$W/srw-initiate.log" 2>&1 || { show_log "$W/srw-initiate.log"; return 1; }
    read -r at vip <<<"$(poll 10 srw_at || echo "- -")"
    sw srw --list-sas --raw >"$W/srw-list-sas.txt" 2>&1 || true
    echo "    srw (strongSwan 5.9.8): up at $at with virtual IP $vip"
    grep -E "redirect" "$(log_of srw)" | head -3 | sed 's/^/    srw log: /' || true
    case "$at:$vip" in
        "$BACK1":10.3.1.*|"$BACK2":10.3.2.*) SRW_AT="$at" ;;
        *) return 1 ;;
    esac
    ping_one srw 10.2.0.1
}
check "d. a strongSwan 5.9.8 road warrior redirected by the flowsec front at IKE_SA_INIT: up at a back gateway, its pool's address, pings" srw_redirected

# ------------------------------------------- (e) INFORMATIONAL redirect by ctl
ctl_redirect() {
    local from to other at vip
    [ -n "$SRW_AT" ] || { echo "    srw is not up"; return 1; }
    from=back1 to="$BACK2"
    [ "$SRW_AT" = "$BACK2" ] && from=back2 to="$BACK1"
    fctl "$from" redirect --peer-ip "$SRW" --gateway "$to" | sed 's/^/    /' || return 1
    other() { srw_at | grep -q "^$to "; }
    poll "$SA_TIMEOUT" other >/dev/null || { echo "    srw not at $to within ${SA_TIMEOUT}s"; show_sas_of srw; return 1; }
    read -r at vip <<<"$(srw_at)"
    echo "    srw now at $at with virtual IP $vip"
    gone() { ! sas "$from" 'any(s["remote_host"] == "'"$SRW"'" for s in sas)' >/dev/null; }
    poll 35 gone >/dev/null || { echo "    $from still holds srw's IKE SA"; return 1; }
    ping_one srw 10.2.0.1
}
show_sas_of() { sas "$1" --show | sed "s/^/    $1: /" || true; }
check "e. flowsec ctl redirect --peer-ip on srw's back gateway: srw goes to the other back (make before break), pings" ctl_redirect

# ------------------------------------------------- (f) swanctl --redirect
rwx_redirected() {
    local at vip
    start_daemon rwx || return 1
    up_at() { sas rwx 'child is not None and ike["remote_host"] == "'"$1"'"' >/dev/null; }
    poll "$SA_TIMEOUT" up_at "$SFRONT" || { echo "    rwx not up at sfront"; show_sas_of rwx; return 1; }
    sw sfront --redirect --peer-ip "$RWX" --gateway "$BACK1" 2>&1 | sed 's/^/    sfront: /'
    poll "$SA_TIMEOUT" up_at "$BACK1" || { echo "    rwx not at back1 within ${SA_TIMEOUT}s"; show_sas_of rwx; return 1; }
    read -r at vip <<<"$(where rwx)"
    echo "    rwx now at $at with virtual IP $vip"
    gone() { ! sas sfront 'ike is not None' >/dev/null; }
    poll 35 gone >/dev/null || { echo "    sfront still holds rwx's IKE SA"; return 1; }
    ping_one rwx 10.2.0.1
}
check "f. swanctl --redirect on the strongSwan gateway sends a flowsec road warrior to back1: up there, gone from sfront, pings" rwx_redirected

ike_finish
