#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions called through check and poll
# End-to-end: road warriors (RFC 7296 §3.15) — a gateway hands out
# virtual IPs and DNS servers from its pools to two road warriors at once,
# one flowsec and one strongSwan 5.9.8, certificates from strongSwan's pki.
#
#   rw1 192.0.2.11 ---- 192.0.2.1 |    | 10.2.0.1 ---- lan 10.2.0.2
#                                 | gw |
#   rw2 198.51.100.12 - 198.51.100.1 |
#
# gw: pools rw4 (10.3.0.0/24, DNS 10.2.0.53) and rw6 (fd00:3::/120, DNS
# fd00:2::53), local_ts 10.2.0.0/24 and fd00:2::/64, remote_ts dynamic,
# certificate moon (ECDSA P-384). rw1 and rw2: vips = 0.0.0.0, ::,
# certificates venus (ECDSA P-256) and carol (Ed25519) through the
# intermediate CA (the gateway trusts only the root). Checks:
#   a. each road warrior comes up and gets its own virtual IPs from the
#      pools (the gateway's SAs list them; at the road warrior the flowsec
#      TUN or strongSwan's SA carries them)
#   b. DNS: the flowsec road warrior logs the servers, strongSwan's resolve
#      plugin writes them to its file
#   (the virtual IP leaves a flowsec road warrior's TUN with its IKE SA)
#   c. each road warrior pings the lan host from its virtual IPv4 and IPv6
#      address, at the same time as the other's SAs are up
#   d. a road warrior's IKE SA rekey keeps its address; after it leaves
#      and comes back it gets the same address again
#   e. (EAP) rw1's second connection, user dave with a wrong password:
#      refused with EAP-Failure, the reason in the gateway's log
#
# FLOWSEC_RW_AUTH=eap: the road warriors authenticate with EAP-MSCHAPv2
# (users carol and dave, the Windows/Android/iOS default) instead of
# certificates; the gateway still signs with moon's certificate.
#
#   FLOWSEC_RW_GW=flowsec|strongswan   the gateway (default flowsec); rw1 is
#                                      the other implementation, rw2 flowsec
#                                      when the gateway is strongSwan, else
#                                      strongSwan (so one of each)
#   tests/e2e/ike_rw.sh                root; needs target/debug/flowsec
#
# Without root or ip netns it prints "SKIP: ..." and exits 0.
set -eu -o pipefail

E2E_PREFIX="${E2E_PREFIX:-ikr$$-}"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/e2e/ike_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ike_lib.sh"
IKE_TAG="e2e road warriors"
T0=$SECONDS

e2e_require_root_netns

GW_IMPL="${FLOWSEC_RW_GW:-flowsec}"
case "$GW_IMPL" in
    flowsec) RW1=strongswan RW2=flowsec ;;
    strongswan) RW1=flowsec RW2=strongswan ;;
    *) echo "FAIL: FLOWSEC_RW_GW=$GW_IMPL (flowsec or strongswan)"; exit 1 ;;
esac
RW_AUTH="${FLOWSEC_RW_AUTH:-cert}"
case "$RW_AUTH" in cert|eap) ;; *) echo "FAIL: FLOWSEC_RW_AUTH=$RW_AUTH (cert or eap)"; exit 1 ;; esac
FLOWSEC_BIN="${FLOWSEC_BIN:-$E2E_ROOT/target/debug/flowsec}"
require_flowsec "$FLOWSEC_BIN" FLOWSEC_BIN
install_strongswan || { echo "FAIL: strongSwan is not installed (apt-get install ${STRONGSWAN_PKGS[*]})"; exit 1; }
command -v pki >/dev/null 2>&1 || apt_install strongswan-pki || true
command -v pki >/dev/null 2>&1 || { echo "FAIL: strongSwan's pki tool is not installed (apt-get install strongswan-pki)"; exit 1; }
if [ "$RW_AUTH" = eap ] && [ ! -e /usr/lib/ipsec/plugins/libstrongswan-eap-mschapv2.so ]; then
    apt_install libcharon-extauth-plugins || true
    [ -e /usr/lib/ipsec/plugins/libstrongswan-eap-mschapv2.so ] ||
        { echo "FAIL: strongSwan's eap-mschapv2 plugin is missing (apt-get install libcharon-extauth-plugins)"; exit 1; }
fi

IKE_PROPOSAL=aes128gcm16-prfsha256-ecp256 ESP_PROPOSAL=aes128gcm16
UP_TIMEOUT=15 SA_TIMEOUT=20 TUN=fsikr0
RETRANSMIT_TIMEOUT=1 RETRANSMIT_BASE=1.4 RETRANSMIT_TRIES=3
CHARON_PLUGINS_EXTRA=" x509 pem pkcs1 pkcs8 pubkey revocation constraints attr resolve eap-identity eap-mschapv2"
declare -A EAP_USER=([rw1]=carol [rw2]=dave)
declare -A EAP_PASS=([rw1]="carol's Pass-word 1" [rw2]="dave's Pass-word 2")
declare -A IMPL=([gw]="$GW_IMPL" [rw1]="$RW1" [rw2]="$RW2")
declare -A ADDR=([rw1]=192.0.2.11 [rw2]=198.51.100.12)
declare -A GW_ADDR=([rw1]=192.0.2.1 [rw2]=198.51.100.1)
declare -A CERT=([rw1]=venus [rw2]=carol)
declare -A KEYDIR=([rw1]=ecdsa [rw2]=pkcs8)
declare -A RW_ID=([rw1]=venus.flowsec.test [rw2]=carol@flowsec.test)

if [ "$RW_AUTH" = eap ]; then
    echo "$IKE_TAG: gateway $GW_IMPL; rw1 $RW1 and rw2 $RW2 with EAP-MSCHAPv2 (users carol and dave)"
else
    echo "$IKE_TAG: gateway $GW_IMPL; rw1 $RW1 (${CERT[rw1]}), rw2 $RW2 (${CERT[rw2]})"
fi
e2e_init
W="$E2E_WORK"

for n in gw rw1 rw2 lan; do ns_add "$n"; done
veth rw1 eth0 gw eth1
veth rw2 eth0 gw eth2
veth gw eth0 lan eth0
addr rw1 eth0 192.0.2.11/24
addr rw2 eth0 198.51.100.12/24
addr gw eth1 192.0.2.1/24
addr gw eth2 198.51.100.1/24
addr gw eth0 10.2.0.1/24 fd00:2::1/64
addr lan eth0 10.2.0.2/24 fd00:2::2/64
ns_exec lan ip route add default via 10.2.0.1
ns_exec lan ip -6 route add default via fd00:2::1
sysctl_ns gw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 \
    net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
for n in rw1 rw2; do disable_offloads "$n" eth0; done
disable_offloads gw eth0; disable_offloads gw eth1; disable_offloads gw eth2; disable_offloads lan eth0

"$E2E_ROOT/tests/pki/make-pki.sh" "$W/pki" 30 >/dev/null 2>&1 || { echo "FAIL: tests/pki/make-pki.sh"; exit 1; }
put() {  # put NS SUBDIR FILE...
    local n="$1" sub="$2"; shift 2
    mkdir -p "$W/$n/$sub"
    for f in "$@"; do cp "$W/pki/$f" "$W/$n/$sub/"; done
}
put gw x509ca caCert.pem
put gw x509 moonCert.pem
put gw ecdsa moonKey.pem
for rw in rw1 rw2; do
    put "$rw" x509ca caCert.pem interCert.pem
    put "$rw" x509 "${CERT[$rw]}Cert.pem"
    put "$rw" "${KEYDIR[$rw]}" "${CERT[$rw]}Key.pem"
done

# The swanctl.conf files (lab_conf: tests/e2e/ike_lib.sh). The gateway:
# its certificate, pools of both families, the road warriors' CA or their
# EAP-MSCHAPv2 users.
# shellcheck disable=SC2054  # commas within a value
words=(--comment "flowsec $IKE_TAG: gw ($GW_IMPL)" conn rw --version 2 --proposals "$IKE_PROPOSAL"
    --pools rw4,rw6 --local-auth pubkey --local-certs moonCert.pem --local-id moon.flowsec.test)
if [ "$RW_AUTH" = eap ]; then
    words+=(--remote-auth eap-mschapv2 --remote-eap-id %any)
else
    words+=(--remote-auth pubkey --remote-cacerts caCert.pem)
fi
# shellcheck disable=SC2054
words+=(child rw --local-ts 10.2.0.0/24,fd00:2::/64 --esp-proposals "$ESP_PROPOSAL"
    pool rw4 --addrs 10.3.0.0/24 --dns 10.2.0.53 pool rw6 --addrs fd00:3::/120 --dns fd00:2::53)
eap_secret() {  # eap_secret RW: the secret words of RW's EAP user (none with certificates)
    [ "$RW_AUTH" = eap ] || return 0
    words+=(secret "eap-${EAP_USER[$1]}" --id "${EAP_USER[$1]}" --secret "${EAP_PASS[$1]}")
}
eap_secret rw1; eap_secret rw2
lab_conf "${words[@]}" >"$W/gw/swanctl.conf"
# A road warrior's connection NAME: a virtual IP from each of VIPS, as
# USER (default: its own) with EAP, or its certificate (lab conf words).
rw_conn() {  # rw_conn RW NAME VIPS REMOTE_TS [USER]
    local rw="$1" user="${5:-${EAP_USER[$1]}}" local_auth
    if [ "$RW_AUTH" = eap ]; then
        local_auth="--local-auth eap-mschapv2 --local-id $user@flowsec.test --local-eap-id $user"
    else
        local_auth="--local-auth pubkey --local-certs ${CERT[$rw]}Cert.pem --local-id ${RW_ID[$rw]}"
    fi
    echo "conn $2 --version 2 --remote-addrs ${GW_ADDR[$rw]} --proposals $IKE_PROPOSAL --vips $3" \
        "$local_auth --remote-auth pubkey --remote-id moon.flowsec.test" \
        "child $2 --remote-ts $4 --esp-proposals $ESP_PROPOSAL"
}
for rw in rw1 rw2; do
    # shellcheck disable=SC2207  # words without blanks
    words=(--comment "flowsec $IKE_TAG: $rw (${IMPL[$rw]})" $(rw_conn "$rw" home 0.0.0.0,:: 10.2.0.0/24,fd00:2::/64))
    # rw1's connection "bad" (EAP only): user dave with a wrong password.
    # shellcheck disable=SC2207
    [ "$rw" = rw1 ] && [ "$RW_AUTH" = eap ] && words+=($(rw_conn rw1 bad 0.0.0.0 10.2.0.0/24 dave))
    eap_secret "$rw"
    [ "$rw" = rw1 ] && [ "$RW_AUTH" = eap ] && words+=(secret eap-dave --id dave --secret "not dave's password")
    lab_conf "${words[@]}" >"$W/$rw/swanctl.conf"
done
for n in gw rw1 rw2; do
    if [ "${IMPL[$n]}" = strongswan ]; then
        CHARON_EXTRA=$'\n    plugins {\n        resolve {\n            file = '"$W/$n-resolv.conf"$'\n        }\n    }'
        gen_strongswan_conf "$n" >"$W/$n-strongswan.conf"
    fi
done
: >"$W/rw1-resolv.conf"; : >"$W/rw2-resolv.conf"

for n in gw rw1 rw2; do
    check "$n: ${IMPL[$n]} up" start_daemon "$n"
done
[ "$E2E_FAILED" -eq 0 ] || { echo "$IKE_TAG: a daemon did not come up"; e2e_finish; }

# rw_vips RW: the virtual IPs RW's IKE SA lists (its own view), "V4 V6".
rw_vips() {
    local rw="$1"
    if [ "${IMPL[$rw]}" = strongswan ]; then
        sw "$rw" --list-sas --ike home 2>/dev/null | sed -nE "s/^ *local .*\] \[([^]]*)\].*/\1/p" | head -1
    else
        fctl "$rw" sas --json 2>/dev/null | python3 -c '
import json, sys
sas = [s for s in json.load(sys.stdin)["ike_sas"] if s["state"] == "ESTABLISHED"]
print(" ".join(sas[0]["local_vips"]) if sas else "")'
    fi
}
# gw_vips: every virtual IP the gateway lists, one line an IKE SA.
gw_vips() {
    if [ "$GW_IMPL" = strongswan ]; then
        sw gw --list-sas 2>/dev/null | sed -nE "s/^ *remote .* \[([^]]*)\] *$/\1/p"
    else
        fctl gw sas --json | python3 -c '
import json, sys
for s in json.load(sys.stdin)["ike_sas"]:
    if s["state"] == "ESTABLISHED":
        print(" ".join(s["remote_vips"]))'
    fi
}
bring_up() {  # bring_up RW: RW initiates; its virtual IPs: V4 and V6 (globals VIP4[RW], VIP6[RW])
    local rw="$1" v
    if [ "${IMPL[$rw]}" = strongswan ]; then
        sw "$rw" --initiate --child home --timeout "$SA_TIMEOUT" >"$W/$rw-initiate.log" 2>&1 ||
            { show_log "$W/$rw-initiate.log" 15; return 1; }
    else
        fctl "$rw" initiate --child home >"$W/$rw-initiate.log" 2>&1 || { show_log "$W/$rw-initiate.log"; return 1; }
    fi
    v=$(poll "$SA_TIMEOUT" rw_vips_both "$rw") || { echo "    $rw: no virtual IPs"; show_log "$(log_of "$rw")" 20; return 1; }
    VIP4[$rw]=${v%% *} VIP6[$rw]=${v##* }
    echo "    $rw (${IMPL[$rw]}): virtual IPs ${VIP4[$rw]} and ${VIP6[$rw]}"
}
rw_vips_both() { local v; v=$(rw_vips "$1"); case "$v" in 10.3.0.*" fd00:3::"*) echo "$v" ;; *) return 1 ;; esac; }
declare -A VIP4=() VIP6=()

check "a. rw1 (${IMPL[rw1]}) gets virtual IPs from the gateway" bring_up rw1
check "a. rw2 (${IMPL[rw2]}) gets virtual IPs too, rw1 still up" bring_up rw2
distinct() {
    local lines
    lines=$(gw_vips)
    echo "$lines" | sed 's/^/    gw lists: /'
    [ "${VIP4[rw1]}" != "${VIP4[rw2]}" ] && [ "${VIP6[rw1]}" != "${VIP6[rw2]}" ] &&
        grep -q -F "${VIP4[rw1]}" <<<"$lines" && grep -q -F "${VIP4[rw2]}" <<<"$lines"
}
check "a. two road warriors at once, each with its own addresses, both listed by the gateway" distinct

dns_seen() {
    local rw
    for rw in rw1 rw2; do
        if [ "${IMPL[$rw]}" = strongswan ]; then
            echo "    $rw resolv file: $(tr '\n' ' ' <"$W/$rw-resolv.conf")"
            grep -q "10.2.0.53" "$W/$rw-resolv.conf" || return 1
        else
            local line
            line=$(grep -m1 "installing virtual IP" "$(log_of "$rw")") || return 1
            echo "    $rw: ${line#*] }"
            grep -q "DNS 10.2.0.53 fd00:2::53" <<<"$line" || return 1
            fctl "$rw" sas | grep -q "DNS 10.2.0.53 fd00:2::53" || { echo "    not in $rw's ctl sas"; return 1; }
        fi
    done
}
check "b. DNS servers from the pools reach both road warriors" dns_seen

ping_from() {  # ping_from RW: RW pings the lan host over IPv4 and IPv6 (from its virtual IPs)
    local rw="$1" a
    for a in 10.2.0.2 fd00:2::2; do
        ping_one "$rw" "$a" || return 1
    done
}
check "c. rw1 reaches the lan from its virtual IPs" ping_from rw1
check "c. rw2 reaches the lan from its virtual IPs" ping_from rw2

rekey_keeps() {
    local before="${VIP4[rw2]}"
    if [ "${IMPL[rw2]}" = strongswan ]; then
        sw rw2 --rekey --ike home >/dev/null 2>&1 || return 1
    else
        fctl rw2 rekey --ike home >/dev/null 2>&1 || return 1
    fi
    sleep 2
    [ "$(rw_vips rw2 | cut -d' ' -f1)" = "$before" ] || { echo "    address changed"; return 1; }
    ping_from rw2
}
check "d. an IKE SA rekey of rw2 keeps its address" rekey_keeps
again() {
    local before="${VIP4[rw1]}"
    if [ "${IMPL[rw1]}" = strongswan ]; then
        sw rw1 --terminate --ike home --timeout "$SA_TIMEOUT" >/dev/null 2>&1 || return 1
    else
        fctl rw1 terminate --ike home >/dev/null 2>&1 || return 1
    fi
    sleep 2
    if [ "${IMPL[rw1]}" = flowsec ] && ns_exec rw1 ip -o addr show dev "$TUN" | grep -q "$before"; then
        echo "    $before still on $TUN after the IKE SA went"; return 1
    fi
    bring_up rw1 || return 1
    echo "    rw1 had $before, now ${VIP4[rw1]}"
    [ "${VIP4[rw1]}" = "$before" ] && ping_from rw1
}
check "d. rw1 leaves and comes back: the same address again" again

wrong_password() {
    local line pattern
    if [ "${IMPL[rw1]}" = strongswan ]; then
        sw rw1 --initiate --child bad --timeout "$SA_TIMEOUT" >"$W/rw1-bad.log" 2>&1 || true
    else
        fctl rw1 initiate --child bad >"$W/rw1-bad.log" 2>&1 || true
    fi
    if [ "$GW_IMPL" = flowsec ]; then
        pattern="authentication failed: EAP-MSCHAPv2: wrong password"
    else
        pattern="EAP-MS-CHAPv2 verification failed|EAP method EAP_MSCHAPV2 failed"
    fi
    line=$(poll 10 grep -m1 -E "$pattern" "$(log_of gw)") || { echo "    the gateway's log does not say why"; show_log "$(log_of gw)" 20; return 1; }
    echo "    gw: ${line:0:160}"
    poll 5 grep -q -E "EAP.?FAILURE|EAP-Failure|AUTHENTICATION_FAILED" "$(log_of rw1)" "$W/rw1-bad.log" ||
        { echo "    rw1 was not told"; show_log "$(log_of rw1)" 15; return 1; }
    # The good road warriors are still up.
    ping_from rw2
}
if [ "$RW_AUTH" = eap ]; then
    check "e. user dave with a wrong password is refused; the others stay up" wrong_password
fi

echo "$IKE_TAG: $((SECONDS - T0)) s"
if [ "$E2E_FAILED" -ne 0 ]; then
    for n in gw rw1 rw2; do show_log "$(log_of "$n")" 40; done
fi
e2e_finish
