#!/usr/bin/env bash
# make-pki.sh DIR [DAYS]: a test PKI made with strongSwan's own `pki` tool
# (package strongswan-pki), as a strongSwan user makes one:
#
#   flowsec Root CA (ECDSA P-384, self-signed)
#   ├── moon.flowsec.test     ECDSA P-384  (gateway)
#   ├── sun.flowsec.test      RSA-3072     (gateway)
#   ├── revoked.flowsec.test  ECDSA P-256  (revoked in the root's CRL)
#   ├── mars.flowsec.test     ECDSA P-521
#   └── flowsec Intermediate CA (ECDSA P-256)
#       ├── venus.flowsec.test  ECDSA P-256 (needs the intermediate)
#       └── carol@flowsec.test  Ed25519
#   Evil Root CA (ECDSA P-256, self-signed, trusted by nobody)
#   └── sun.flowsec.test      ECDSA P-256  (the wrong CA's "sun")
#
# DIR gets caCert.pem, interCert.pem, evilCaCert.pem, NAMECert.pem and
# NAMEKey.pem for moon, sun, revoked, mars, venus, carol and evil, rootCrl.pem
# (revoking revoked), staleCrl.pem (expired), and RSA-2048 "sunPss" for PSS. DAYS: validity of the
# leaves (default 3650).
set -euo pipefail
dir="$1"; days="${2:-3650}"
mkdir -p "$dir"; cd "$dir"
p() { pki "$@" 2>/dev/null; }   # pki's TPM plugin warnings go to stderr
dn() { echo "C=CH, O=flowsec, CN=$1"; }

p --gen --type ecdsa --size 384 --outform pem > caKey.pem
p --self --ca --lifetime $((days + 365)) --in caKey.pem --dn "$(dn 'flowsec Root CA')" --outform pem > caCert.pem
p --gen --type ecdsa --size 256 --outform pem > interKey.pem
p --issue --cacert caCert.pem --cakey caKey.pem --in interKey.pem --type priv --ca \
    --lifetime $((days + 180)) --dn "$(dn 'flowsec Intermediate CA')" --outform pem > interCert.pem
p --gen --type ecdsa --size 256 --outform pem > evilCaKey.pem
p --self --ca --lifetime $((days + 365)) --in evilCaKey.pem --dn "C=CH, O=evil, CN=Evil Root CA" --outform pem > evilCaCert.pem

leaf() {  # leaf NAME TYPE SIZE CA SAN
    local name="$1" type="$2" size="$3" ca="$4" san="$5" gen=(--gen --type "$2")
    [ -n "$size" ] && gen+=(--size "$size")
    p "${gen[@]}" --outform pem > "${name}Key.pem"
    p --issue --cacert "${ca}Cert.pem" --cakey "${ca}Key.pem" --in "${name}Key.pem" --type priv \
        --lifetime "$days" --dn "$(dn "$san")" --san "$san" --flag serverAuth --flag clientAuth \
        --outform pem > "${name}Cert.pem"
    : "$type"
}
leaf moon ecdsa 384 ca moon.flowsec.test
leaf sun rsa 3072 ca sun.flowsec.test
leaf sunPss rsa 2048 ca sunpss.flowsec.test
leaf revoked ecdsa 256 ca revoked.flowsec.test
leaf mars ecdsa 521 ca mars.flowsec.test
leaf venus ecdsa 256 inter venus.flowsec.test
leaf carol ed25519 "" inter carol@flowsec.test
leaf evil ecdsa 256 evilCa sun.flowsec.test
p --signcrl --cacert caCert.pem --cakey caKey.pem --lifetime "$days" \
    --cert revokedCert.pem --reason key-compromise --outform pem > rootCrl.pem
# staleCrl.pem: the root's CRL for one week before the leaves were made,
# long past (revocation = strict refuses it). pki sets thisUpdate to now;
# openssl's `ca -gencrl` takes both dates.
stale=$(mktemp -d)
touch "$stale/index.txt"; echo 01 > "$stale/crlnumber"
printf '[ca]\ndefault_ca=c\n[c]\ndatabase=%s/index.txt\ncrlnumber=%s/crlnumber\ndefault_md=sha384\ncrl_extensions=e\n[e]\nauthorityKeyIdentifier=keyid:always\n' \
    "$stale" "$stale" > "$stale/ca.cnf"
openssl ca -config "$stale/ca.cnf" -gencrl -cert caCert.pem -keyfile caKey.pem \
    -crl_lastupdate "$(date -u -d '-4 weeks' +%Y%m%d%H%M%SZ)" \
    -crl_nextupdate "$(date -u -d '-3 weeks' +%Y%m%d%H%M%SZ)" -out staleCrl.pem 2>/dev/null
rm -r "$stale"
# Raw public keys (swanctl.conf `pubkeys`, the pubkey/ directory): the
# SubjectPublicKeyInfo of some leaves, PEM and one DER.
for k in moon sun carol; do
    openssl pkey -in ${k}Key.pem -pubout -out ${k}Pub.pem
done
openssl pkey -in moonKey.pem -pubout -outform DER -out moonPub.der
