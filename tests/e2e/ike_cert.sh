#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions called through check and poll
# End-to-end: IKEv2 with X.509 certificates (RFC 7296 §2.15, RFC 7427)
# between flowsec and strongSwan 5.9.8, the PKI made by strongSwan's own
# `pki` tool (tests/pki/make-pki.sh), each gateway in the swanctl layout
# (GW/swanctl.conf next to x509/, x509ca/, x509crl/, ecdsa/, rsa/, pkcs8/),
# IKE_AUTH forced into fragments (RFC 7383).
#
#   hostA 10.1.0.2 -- gwA | 192.0.2.1 ==== 192.0.2.2 | gwB -- hostB 10.2.0.2
#
# gwA initiates. FLOWSEC_CERTS picks the certificates:
#   moon-sun     gwA moon (ECDSA P-384, id its subject DN), gwB sun
#                (RSA-3072, id sun.flowsec.test); both issued by the root
#   venus-carol  gwA venus (ECDSA P-256), gwB carol (Ed25519,
#                carol@flowsec.test), both issued by the intermediate CA:
#                each peer trusts only the root (cacerts), so the
#                intermediate must travel in CERT
#   mars-sunpss  gwA mars (ECDSA P-521), gwB sunPss (RSA-2048) signing
#                with RSASSA-PSS (`auth = ike:rsa/pss-sha256`), which gwA requires
# gwB holds the root's CRL, which revokes "revoked.flowsec.test". Checks:
#   a. the SAs come up with certificates; each end sees the other's
#      identity
#   b. the capture: IKE_SA_INIT with SIGNATURE_HASH_ALGORITHMS both ways
#      and CERTREQ from the responder; IKE_AUTH in Encrypted Fragment
#      payloads from both, none above FRAG bytes
#   c. ping both ways; a CHILD_SA rekey and an IKE SA rekey
#   d. gwA's connection "rev" with the revoked certificate: refused,
#      AUTHENTICATION_FAILED at gwA, "revoked" in gwB's log
#   e. gwA's connection "evil", a certificate of a CA gwB does not
#      trust that claims sun.flowsec.test: refused the same way
#   f. flowsec counted the refusals by name (cert_revoked, cert_untrusted)
#      when it is gwB
#
#   FLOWSEC_IKE_LEFT=flowsec|strongswan    gwA (default flowsec); gwB is the other
#   FLOWSEC_CERTS=moon-sun|venus-carol|mars-sunpss   (default moon-sun)
#   tests/e2e/ike_cert.sh                  root; needs target/debug/flowsec
#
# Without root or ip netns it prints "SKIP: ..." and exits 0.
set -eu -o pipefail

E2E_PREFIX="${E2E_PREFIX:-ikc$$-}"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/e2e/ike_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ike_lib.sh"
IKE_TAG="e2e ike certificates"
T0=$SECONDS

e2e_require_root_netns

LEFT="${FLOWSEC_IKE_LEFT:-flowsec}"
case "$LEFT" in
    flowsec) RIGHT=strongswan ;;
    strongswan) RIGHT=flowsec ;;
    *) echo "FAIL: FLOWSEC_IKE_LEFT=$LEFT (flowsec or strongswan)"; exit 1 ;;
esac
CERTS="${FLOWSEC_CERTS:-moon-sun}"
FLOWSEC_BIN="${FLOWSEC_BIN:-$E2E_ROOT/target/debug/flowsec}"
require_flowsec "$FLOWSEC_BIN" FLOWSEC_BIN
install_strongswan || { echo "FAIL: strongSwan is not installed (apt-get install ${STRONGSWAN_PKGS[*]})"; exit 1; }
command -v pki >/dev/null 2>&1 || apt_install strongswan-pki || true
command -v pki >/dev/null 2>&1 || { echo "FAIL: strongSwan's pki tool is not installed (apt-get install strongswan-pki)"; exit 1; }
install_capture_tools

FRAG=500
e2e_outer v4
IKE_PROPOSAL=aes128gcm16-prfsha256-ecp256 ESP_PROPOSAL=aes128gcm16-ecp256
DPD_DELAY=30s UP_TIMEOUT=15 SA_TIMEOUT=20
CONN=gw CHILD=net TUN=fsikc0 PSK="unused"
RETRANSMIT_TIMEOUT=1 RETRANSMIT_BASE=1.4 RETRANSMIT_TRIES=3
INNER_FAMILIES="4"
CONN_ARGS="--fragmentation force"
CHARON_EXTRA=$'\n    fragment_size = '"$FRAG"
# Certificates, keys, CRLs: x509, pem, pkcs1 (RSA keys), pkcs8, pubkey,
# revocation (CRLs) and constraints (path checks).
CHARON_PLUGINS_EXTRA=" x509 pem pkcs1 pkcs8 pubkey revocation constraints"
declare -A IMPL=([gwA]="$LEFT" [gwB]="$RIGHT")
declare -A LOCAL_ADDR=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ADDR=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_ID=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ID=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_TS=([gwA]="10.1.0.0/24" [gwB]="10.2.0.0/24")
declare -A REMOTE_TS=([gwA]="10.2.0.0/24" [gwB]="10.1.0.0/24")
declare -A UP_ARGS=([gwA]="--fragment-size $FRAG" [gwB]="--fragment-size $FRAG")

case "$CERTS" in
    moon-sun)
        A_CERT=moon A_KEY=ecdsa A_ID="C=CH, O=flowsec, CN=moon.flowsec.test"
        B_CERT=sun B_KEY=rsa B_ID=sun.flowsec.test CAS="caCert.pem" ;;
    venus-carol)
        A_CERT=venus A_KEY=ecdsa A_ID=venus.flowsec.test
        B_CERT=carol B_KEY=pkcs8 B_ID=carol@flowsec.test CAS="caCert.pem interCert.pem" ;;
    mars-sunpss)
        A_CERT=mars A_KEY=ecdsa A_ID=mars.flowsec.test
        B_CERT=sunPss B_KEY=rsa B_ID=sunpss.flowsec.test CAS="caCert.pem" B_AUTH=ike:rsa/pss-sha256 ;;
    *) echo "FAIL: FLOWSEC_CERTS=$CERTS (moon-sun, venus-carol or mars-sunpss)"; exit 1 ;;
esac
# Both ends' sections (gen_swanctl_conf's lab conf words); A_ID may be a
# DN, quoted. Each trusts the root only: an intermediate must come in CERT.
# shellcheck disable=SC2034  # read by gen_swanctl_conf (a nameref)
AUTH_ARGS_gwA=(--local-auth pubkey --local-certs "${A_CERT}Cert.pem" --local-id "\"$A_ID\""
    --remote-auth "${B_AUTH:-pubkey}" --remote-id "$B_ID" --remote-cacerts caCert.pem)
# shellcheck disable=SC2034
AUTH_ARGS_gwB=(--local-auth "${B_AUTH:-pubkey}" --local-certs "${B_CERT}Cert.pem" --local-id "$B_ID"
    --remote-auth pubkey --remote-cacerts caCert.pem)
# gwA's two connections gwB must refuse (different selectors, never up).
bad_conn() {  # bad_conn NAME CERT ID: lab conf words
    echo "conn $1 --version 2 --local-addrs $GW_A --remote-addrs $GW_B --proposals $IKE_PROPOSAL" \
        "--local-auth pubkey --local-certs $2 --local-id $3 --remote-auth pubkey --remote-id $B_ID" \
        "child $1 --local-ts 10.1.9.0/24 --remote-ts 10.2.9.0/24 --esp-proposals $ESP_PROPOSAL --start-action none"
}
declare -A EXTRA_CONN=([gwA]="$(bad_conn rev revokedCert.pem revoked.flowsec.test) $(bad_conn evil evilCert.pem sun.flowsec.test)")

echo "$IKE_TAG: gwA $LEFT (initiator, $A_CERT), gwB $RIGHT ($B_CERT); fragment size $FRAG bytes"
e2e_init
W="$E2E_WORK"
"$E2E_ROOT/tests/pki/make-pki.sh" "$W/pki" 30 >/dev/null 2>&1 || { echo "FAIL: tests/pki/make-pki.sh"; exit 1; }
put() {  # put GW SUBDIR FILE...: fixtures into GW's swanctl directory
    local gw="$1" sub="$2"; shift 2
    mkdir -p "$W/$gw/$sub"
    for f in "$@"; do cp "$W/pki/$f" "$W/$gw/$sub/"; done
}
# shellcheck disable=SC2086  # CAS is a list
put gwA x509ca $CAS evilCaCert.pem
put gwA x509 "${A_CERT}Cert.pem" revokedCert.pem evilCert.pem
put gwA "$A_KEY" "${A_CERT}Key.pem"
put gwA ecdsa revokedKey.pem evilKey.pem
# shellcheck disable=SC2086
put gwB x509ca $CAS
put gwB x509 "${B_CERT}Cert.pem"
put gwB "$B_KEY" "${B_CERT}Key.pem"
put gwB x509crl rootCrl.pem
for gw in gwA gwB; do
    gen_swanctl_conf "$gw" >"$W/$gw/swanctl.conf"
    [ "${IMPL[$gw]}" = strongswan ] && gen_strongswan_conf "$gw" >"$W/$gw-strongswan.conf"
done
e2e_topology_gateway
start_daemons
start_capture gwA eth1 "$W/transit.pcap"

ids_seen() {
    local a b
    a=$(sas gwA 'ike["remote_id"]') || return 1
    b=$(sas gwB 'ike["remote_id"]') || return 1
    echo "    gwA sees $a; gwB sees $b"
    [ "$a" = "$B_ID" ] && [ "$b" = "$A_ID" ]
}
up() { sa_up && CUR_CHILD=$(child_agreed) && ids_seen; }
check "a. SAs up with certificates, each end sees the other's identity" up
stop_without_sas

init_and_fragments() {
    local from n big
    sleep 0.5
    for from in "$GW_A" "$GW_B"; do
        n=$(frames "$W/transit.pcap" "ip.src == $from and isakmp.exchangetype == 34 and isakmp.notify.msgtype == 16431")
        echo "    IKE_SA_INIT with SIGNATURE_HASH_ALGORITHMS from $from: $n"
        [ "$n" -ge 1 ] || return 1
        n=$(frames "$W/transit.pcap" "ip.src == $from and isakmp.nextpayload == 53")
        echo "    Encrypted Fragment payloads from $from: $n"
        [ "$n" -ge 2 ] || return 1
    done
    n=$(frames "$W/transit.pcap" "ip.src == $GW_B and isakmp.exchangetype == 34 and isakmp.typepayload == 38")
    echo "    IKE_SA_INIT responses with CERTREQ: $n"
    [ "$n" -ge 1 ] || return 1
    big=$(frames "$W/transit.pcap" "isakmp and ip.len > $FRAG")
    echo "    IKE datagrams above $FRAG bytes: $big"
    [ "$big" -eq 0 ]
}
check "b. the capture: signature hashes and CERTREQ in IKE_SA_INIT, IKE_AUTH in fragments from both" init_and_fragments
stop_bg "$TCPDUMP_PID" 2

check "c. ping both ways through the tunnel" ping_both 4
check "c. CHILD_SA rekey from gwA (${IMPL[gwA]}), traffic on the new SA" child_rekey gwA
check "c. IKE SA rekey from gwB (${IMPL[gwB]}), traffic after it" ike_rekey gwB

# refused CONN CHILD GWB_PATTERN: gwA initiates CONN; no SA, gwA told
# AUTHENTICATION_FAILED, gwB's log says why (GWB_PATTERN, grep -E).
refused() {
    local conn="$1" child="$2" pattern="$3" a_log b_log
    a_log=$(log_of gwA) b_log=$(log_of gwB)
    if [ "${IMPL[gwA]}" = strongswan ]; then
        sw gwA --initiate --child "$child" --timeout "$SA_TIMEOUT" >"$W/gwA-$conn.log" 2>&1 || true
    else
        fctl gwA initiate --child "$child" >"$W/gwA-$conn.log" 2>&1 || true
    fi
    poll 10 grep -q -E "AUTHENTICATION_FAILED" "$a_log" "$W/gwA-$conn.log" >/dev/null ||
        { echo "    gwA was not told AUTHENTICATION_FAILED"; show_log "$a_log" 15; return 1; }
    local line
    line=$(poll 5 grep -m1 -E "$pattern" "$b_log") ||
        { echo "    gwB's log does not say why (/$pattern/)"; show_log "$b_log" 15; return 1; }
    echo "    gwB: ${line:0:200}"
    if sas gwA "any(s['name'] == '$conn' and s['state'] == 'ESTABLISHED' for s in sas)" >/dev/null 2>&1; then
        echo "    $conn is ESTABLISHED at gwA"; return 1
    fi
}
if [ "${IMPL[gwB]}" = flowsec ]; then
    REVOKED="authentication failed: certificate revoked \(CRL\)"
    UNTRUSTED="authentication failed: certificate not trusted: issuer not among the trusted CAs"
else
    REVOKED="certificate was revoked"
    UNTRUSTED="no trusted .* public key found for 'sun.flowsec.test'|constraint check failed"
fi
check "d. a revoked certificate is refused (AUTHENTICATION_FAILED; gwB says why)" refused rev rev "$REVOKED"
check "e. a certificate of a CA gwB does not trust is refused" refused evil evil "$UNTRUSTED"

counted() {
    fctl gwB stats --json | python3 -c '
import json, sys
ike = json.load(sys.stdin)["ike"]
names = ("auth_failed", "cert_revoked", "cert_untrusted", "cert_malformed", "bad_signature")
print("    gwB (flowsec): " + ", ".join("%s %d" % (n, ike[n]) for n in names))
sys.exit(0 if ike["cert_revoked"] >= 1 and ike["cert_untrusted"] >= 1 and ike["auth_failed"] >= 2 else 1)'
}
if [ "${IMPL[gwB]}" = flowsec ]; then
    check "f. flowsec (gwB) counted the refusals by name" counted
fi
check "the first SA still carries traffic" ping_both 4

# A flowsec driven over vici (FLOWSEC_IKE_VICI=1): swanctl --list-certs
# reads the certificates it loaded back, parsed by swanctl itself.
listed_certs() {
    local gw
    gw=gwA; [ "${IMPL[gwA]}" = flowsec ] || gw=gwB
    sw "$gw" --list-certs >"$W/$gw-certs.txt" 2>&1 || { show_log "$W/$gw-certs.txt"; return 1; }
    grep -E '^\s+subject:' "$W/$gw-certs.txt" | head -4 | sed "s/^ */    $gw: /"
    grep -q 'has private key' "$W/$gw-certs.txt" && grep -q 'X.509 CA Certificates' "$W/$gw-certs.txt"
}
if [ "${FLOWSEC_IKE_VICI:-0}" = 1 ]; then
    check "g. swanctl --list-certs through flowsec: its certificate (with its key) and the CAs" listed_certs
fi

ike_finish
