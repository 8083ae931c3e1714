#!/usr/bin/env bash
# The test command (README, .ci/run): everything flowsec checks, on a fresh
# Debian 12 machine. Installs what the oracle tests need when run as root
# (tshark, python3-venv; tshark also checks the e2e capture; nftables for
# flowsec's plaintext filter, which e2e checks); the Rust tests
# need only cargo.
#
#   scripts/test.sh            all tests
#   FLOWSEC_SKIP_ORACLE=1 ...  without the scapy/tshark oracle tests
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=scripts/lib.sh
. scripts/lib.sh

install_system_deps() {
    local missing=()
    command -v tshark >/dev/null || missing+=(tshark)
    # flowsec up's inbound plaintext filter (RFC 4301 §5.2), checked by e2e
    command -v nft >/dev/null || missing+=(nftables)
    # an independent view of the transit link (tests/e2e/fragments.sh)
    command -v tcpdump >/dev/null || missing+=(tcpdump)
    # the e2e veths without offloads (lib.sh disable_offloads): with TSO
    # on, a capture sees a few large segments (ike_tcp.sh counts them)
    command -v ethtool >/dev/null || [ -x /usr/sbin/ethtool ] || missing+=(ethtool)
    python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
    # the lab's s5-app: Debian's nginx and ApacheBench (study S5's web benchmark)
    command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx)
    command -v ab >/dev/null || missing+=(apache2-utils)
    # an independent parser of flowsec up --metrics (tests/e2e/ike_tcp.sh)
    /usr/bin/python3 -c 'import prometheus_client' 2>/dev/null || missing+=(python3-prometheus-client)
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "not root: cannot install ${missing[*]}; the oracle tests that need them will be skipped"
        return 0
    fi
    step "installing ${missing[*]}"
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt_install "${missing[@]}"
    # The package starts its own nginx on port 80; the lab runs its own,
    # in a namespace.
    if pgrep -x nginx >/dev/null; then
        nginx -s quit 2>/dev/null || true
    fi
}

install_system_deps

# The lab's other implementations (issue 4): strongSwan's charon with
# kernel-libipsec, and wireguard-go (scripts/lib.sh). Optional: the lab
# skips a missing one with a message, and the check below only asks for
# rows of those present.
install_peers() {
    [ "$(id -u)" -eq 0 ] || return 0
    if ! have_strongswan; then
        step "installing strongSwan (the lab's strongswan implementation): ${STRONGSWAN_PKGS[*]}"
        install_strongswan || echo "strongSwan could not be installed: the lab will skip it"
    fi
    if ! wireguard_go >/dev/null && command -v go >/dev/null; then
        step "installing wireguard-go $WIREGUARD_GO_VERSION (the lab's wireguard-go implementation)"
        install_wireguard_go || echo "wireguard-go could not be installed: the lab will skip it"
    fi
}
install_peers

step "cargo test (unit, known-answer, wire captures, replay window, processing, fuzz corpus replay, CLI)"
cargo test --workspace --locked

step "end-to-end: two flowsec gateways in network namespaces (needs root; skips without)"
cargo build --locked -p flowsec
# mode, suite, encapsulation, outer family, bytes (the slow legacy suites
# move less: this is a debug build), workers (- = one per CPU), TUN
# offloads (1 on, 0 --no-offload), crypto backend (- = auto), how raw
# ESP/AH is received (--esp-receive; - = auto: the fanout group with 4
# workers or more) and sent (--esp-send; - = raw: IP output; link: to the
# neighbor)
while read -r mode suite encap outer bytes workers offload backend receive send; do
    echo "-- e2e: $mode mode, suite $suite, encapsulation $encap, outer $outer, $bytes bytes, workers $workers, offloads $offload, backend ${backend:--}, receive ${receive:--}, send ${send:--}"
    [ "$workers" = - ] && workers=""
    [ "${backend:--}" = - ] && backend=""
    [ "${receive:--}" = - ] && receive=""
    [ "${send:--}" = - ] && send=""
    FLOWSEC_E2E_MODE=$mode FLOWSEC_E2E_SUITE=$suite FLOWSEC_E2E_ENCAP=$encap FLOWSEC_E2E_OUTER=$outer \
        FLOWSEC_E2E_BYTES=$bytes FLOWSEC_E2E_WORKERS=$workers FLOWSEC_E2E_OFFLOAD=$offload \
        FLOWSEC_E2E_BACKEND=$backend FLOWSEC_E2E_ESP_RECEIVE=$receive FLOWSEC_E2E_ESP_SEND=$send \
        tests/e2e/gateway.sh </dev/null
done <<'MATRIX'
tunnel gcm raw v4 52428800 - 1
tunnel gcm raw v4 20000000 4 1 - - link
tunnel gcm raw v4 20000000 1 0 - fanout
tunnel gcm udp v6 20000000 - 1
tunnel gcm udp v4 52428800 - 1
transport gcm udp v4 5000000 - 1
tunnel gcm raw v6 52428800 - 1 - fanout link
tunnel cbc-sha1 raw v4 20000000 - 1
tunnel cbc-sha1 raw v4 5000000 - 1 engine
tunnel 3des-md5 raw v4 5000000 - 1
tunnel ah-esp raw v4 20000000 - 1 - fanout link
tunnel ah-esp raw v6 20000000 - 1
tunnel ipcomp-esp raw v4 5000000 - 1
transport ah-esp raw v4 20000000 - 1 - fanout
transport ah raw v4 5000000 - 1
transport gcm raw v4 5000000 - 1
transport gcm raw v6 20000000 - 1
transport ah-esp raw v6 5000000 - 1
transport ah raw v6 5000000 - 1
MATRIX
for mode in tunnel transport; do
    echo "-- e2e: fragments under a port policy (RFC 4301 §7), $mode mode: arrive whole, none in the clear"
    FLOWSEC_E2E_MODE=$mode tests/e2e/fragments.sh </dev/null
done
echo "-- e2e: a manual AES-GCM SA moved to a new SPI with the same key, restarted: its sequence numbers (GCM nonces) go on, not again from 1"
tests/e2e/manual_nonce.sh </dev/null
echo "-- e2e: per-resource SAs (RFC 9611, setkey -cpu): --parallel flow spreads one tunnel over 2 workers, --parallel default keeps one SA"
tests/e2e/parallel.sh </dev/null
echo "-- e2e: the daemon's privileges (capabilities, no_new_privs) and its control socket (mode, SO_PEERCRED, --ctl-group)"
tests/e2e/hardening.sh </dev/null
echo "-- e2e: harness self-test (plain forwarding stand-in: the sniffer sees plaintext, injected plaintext arrives)"
FLOWSEC_E2E_STANDIN=1 FLOWSEC_E2E_BYTES=5000000 tests/e2e/gateway.sh </dev/null

step "IKEv2 against strongSwan 5.9.8 (charon + kernel-libipsec) in network namespaces (needs root; skips without)"
# left = gwA, the initiator; right = gwB, the responder. Each run: SAs up and
# agreed, ping and TCP both ways, counters rising in swanctl --list-sas,
# CHILD_SA rekeys (PFS) and IKE SA rekeys from each side, terminate and
# initiate again, a capture with only IKE and ESP, DPD after a SIGKILL.
while read -r left right proposal outer kill ipcomp ah; do
    echo "-- ike: $left -> $right, $proposal, outer $outer, DPD kills $kill, IPComp ${ipcomp:-0}, AH ${ah:-0}"
    FLOWSEC_IKE_LEFT=$left FLOWSEC_IKE_RIGHT=$right FLOWSEC_IKE_PROPOSAL=$proposal \
        FLOWSEC_IKE_OUTER=$outer FLOWSEC_IKE_DPD_KILL=$kill FLOWSEC_IKE_IPCOMP=${ipcomp:-0} \
        FLOWSEC_IKE_AH=${ah:-0} FLOWSEC_BIN=target/debug/flowsec tests/e2e/ike.sh </dev/null
done <<'MATRIX'
flowsec strongswan aes128gcm16-prfsha256-ecp256 v4 right
strongswan flowsec aes128gcm16-prfsha256-ecp256 v4 left
flowsec strongswan aes256-sha256-modp2048 v4 left
strongswan flowsec aes256-sha256-modp2048 v4 right
flowsec strongswan chacha20poly1305-prfsha256-x25519 v4 right
strongswan flowsec chacha20poly1305-prfsha256-x25519 v4 left
flowsec strongswan 3des-sha1-modp1024 v4 left
strongswan flowsec 3des-sha1-modp1024 v4 right
flowsec strongswan aes128gcm16-prfsha256-ecp256 v6 right
flowsec flowsec aes128gcm16-prfsha256-ecp256 v4 right
flowsec flowsec aes256-sha256-modp2048 v4 left 1 0
flowsec flowsec chacha20poly1305-prfsha256-x25519 v6 right 0 1
MATRIX
# flowsec in charon's place: started with --vici only, loaded, driven and
# (flowsec -> strongswan) listed by Debian's swanctl (ike_lib.sh via_swanctl).
echo "-- ike: flowsec driven by swanctl over vici (--vici, no -c) -> strongswan"
FLOWSEC_IKE_VICI=1 FLOWSEC_IKE_LEFT=flowsec FLOWSEC_IKE_RIGHT=strongswan FLOWSEC_BIN=target/debug/flowsec \
    tests/e2e/ike.sh </dev/null
echo "-- ike: strongswan -> flowsec driven by swanctl over vici (listed by flowsec ctl: ike_lib.sh IKE_LIST_VIA_CTL)"
IKE_LIST_VIA_CTL=1 FLOWSEC_IKE_VICI=1 FLOWSEC_IKE_LEFT=strongswan FLOWSEC_IKE_RIGHT=flowsec \
    FLOWSEC_BIN=target/debug/flowsec tests/e2e/ike.sh </dev/null
echo "-- ike_cert: certificates, keys and CRLs loaded by swanctl over vici: flowsec (moon) -> strongswan, strongswan -> flowsec (carol, revocation)"
FLOWSEC_IKE_VICI=1 FLOWSEC_CERTS=moon-sun FLOWSEC_IKE_LEFT=flowsec FLOWSEC_BIN=target/debug/flowsec \
    tests/e2e/ike_cert.sh </dev/null
FLOWSEC_IKE_VICI=1 FLOWSEC_CERTS=venus-carol FLOWSEC_IKE_LEFT=strongswan FLOWSEC_BIN=target/debug/flowsec \
    tests/e2e/ike_cert.sh </dev/null
for peer in strongswan flowsec; do
    echo "-- vici: swanctl, Python vici and govici drive flowsec (--vici only); the peer $peer"
    FLOWSEC_VICI_PEER=$peer FLOWSEC_BIN=target/debug/flowsec tests/e2e/vici.sh </dev/null
done
# strongSwan 6.0.1 from Debian 13: a trixie root made once by debootstrap
# (a few minutes, kept in /var/cache/flowsec/trixie).
install_strongswan6 || echo "strongSwan 6 root could not be made: ike_pq.sh will say so"
for left in flowsec peer; do
    for ppk in required fallback; do
        echo "-- hybrid IKEv2 (RFC 9370: IKE_INTERMEDIATE, IKE_FOLLOWUP_KE; RFC 8784 PPK $ppk) against strongSwan 6.0.1, initiator: $left"
        FLOWSEC_PQ_PEER=strongswan6 FLOWSEC_PQ_LEFT=$left FLOWSEC_PQ_PPK=$ppk FLOWSEC_BIN=target/debug/flowsec \
            tests/e2e/ike_pq.sh </dev/null
    done
done
for left in flowsec peer; do
    echo "-- a hybrid proposal against strongSwan 5.9.8 (no RFC 9370), initiator: $left"
    FLOWSEC_PQ_LEFT=$left FLOWSEC_BIN=target/debug/flowsec tests/e2e/ike_pq_legacy.sh </dev/null
done
for proposal in aes256gcm16-prfsha384-x25519-ke1_mlkem768 aes256gcm16-prfsha384-mlkem1024; do
    echo "-- post-quantum IKEv2 with ML-KEM ($proposal): flowsec -> flowsec"
    FLOWSEC_PQ_PEER=flowsec FLOWSEC_PQ_PROPOSAL=$proposal FLOWSEC_BIN=target/debug/flowsec \
        tests/e2e/ike_pq.sh </dev/null
done
for right in flowsec strongswan; do
    echo "-- ike through a real NAT (nftables masquerade, random ports): flowsec behind it -> $right"
    FLOWSEC_IKE_NAT_RIGHT=$right FLOWSEC_BIN=target/debug/flowsec tests/e2e/ike_nat.sh </dev/null
done
for pair in flowsec:flowsec strongswan:flowsec flowsec:strongswan flowsec:flowsec:nat; do
    IFS=: read -r left right nat <<<"$pair"
    echo "-- MOBIKE (RFC 4555): $left (initiator) loses its first address under a paced stream, $right follows${nat:+; the first path behind a NAT}"
    FLOWSEC_MOBIKE_LEFT=$left FLOWSEC_MOBIKE_RIGHT=$right FLOWSEC_MOBIKE_NAT=$([ -n "$nat" ] && echo 1 || echo 0) \
        FLOWSEC_BIN=target/debug/flowsec tests/e2e/ike_mobike.sh </dev/null
done
echo "-- redirect (RFC 5685) and a gateway cluster: 20 flowsec road warriors, a flowsec front redirecting by the backs' vici stats; strongSwan 5.9.8 road warrior and gateway"
FLOWSEC_BIN=target/debug/flowsec tests/e2e/ike_redirect.sh </dev/null
for right in flowsec strongswan; do
    echo "-- ike per_cpu_sas (RFC 9611), 2 workers: flowsec -> $right (one per-resource Child SA per worker, or one Child SA with strongSwan 5.9)"
    FLOWSEC_IKE_RIGHT=$right FLOWSEC_BIN=target/debug/flowsec tests/e2e/ike_parallel.sh </dev/null
done

echo "-- ike and esp over TCP and TLS (RFC 9329), UDP and ESP dropped on the transit link: flowsec -> flowsec"
FLOWSEC_BIN=target/debug/flowsec tests/e2e/ike_tcp.sh </dev/null

echo "-- ike over TCP (RFC 9329) flooded: 1000 connections write IKE_SA_INIT and never read; the responder's RSS stays below 256 MiB"
FLOWSEC_BIN=target/debug/flowsec tests/e2e/ike_tcp_flood.sh </dev/null

for left in flowsec strongswan; do
    echo "-- ike fragmentation (RFC 7383), 300-byte fragments: $left initiates (flowsec <-> strongSwan)"
    FLOWSEC_IKE_LEFT=$left FLOWSEC_BIN=target/debug/flowsec tests/e2e/ike_frag.sh </dev/null
done

for certs in moon-sun venus-carol mars-sunpss; do
    for left in flowsec strongswan; do
        echo "-- ike with certificates from strongSwan's pki ($certs; revoked and wrong-CA refused), IKE_AUTH fragmented: $left initiates (flowsec <-> strongSwan)"
        FLOWSEC_CERTS=$certs FLOWSEC_IKE_LEFT=$left FLOWSEC_BIN=target/debug/flowsec tests/e2e/ike_cert.sh </dev/null
    done
done

for auth in cert eap; do
    for gw in flowsec strongswan; do
        echo "-- road warriors (virtual IPs and DNS from pools; $auth): $gw gateway, a flowsec and a strongSwan road warrior at once"
        FLOWSEC_RW_AUTH=$auth FLOWSEC_RW_GW=$gw FLOWSEC_BIN=target/debug/flowsec tests/e2e/ike_rw.sh </dev/null
    done
done

echo "-- --metrics: a client trickling its request holds neither ctl nor IKE (own thread, 2 s per client); a Host that is not an IP address gets 421 (DNS rebinding)"
FLOWSEC_BIN=target/debug/flowsec tests/e2e/metrics.sh </dev/null

echo "-- running as a service: ctl reload / SIGHUP with several connections and a setkey file, the systemd unit: flowsec -> flowsec"
FLOWSEC_BIN=target/debug/flowsec tests/e2e/reload.sh </dev/null

echo "-- ike: a captured IKE_AUTH replayed 50 times from a forged address (no reflector, the SA stays with its peer): flowsec -> flowsec"
FLOWSEC_BIN=target/debug/flowsec tests/e2e/ike_replay.sh </dev/null

step "flowsec lab run --quick all (every scenario writes its report; verdicts come from the data)"
LAB_OUT="$(mktemp -d)"
target/debug/flowsec lab run --quick all --out "$LAB_OUT"
n=0
for name in $(target/debug/flowsec lab list | awk '{print $1}'); do
    dir="$LAB_OUT/$name"
    for f in results.json results.md; do
        [ -s "$dir/$f" ] || { echo "FAIL: $name: $f missing"; exit 1; }
    done
    ls "$dir"/*.png "$dir"/*.svg >/dev/null || { echo "FAIL: $name: no plot"; exit 1; }
    # Every finding carries a verdict and the numbers it came from.
    python3 - "$dir/results.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
assert r["findings"], f"{sys.argv[1]}: no findings"
for f in r["findings"]:
    assert isinstance(f["holds"], bool) and any(c.isdigit() for c in f["evidence"]), f
PY
    n=$((n + 1))
done
[ "$n" -ge 10 ] || { echo "FAIL: only $n scenarios"; exit 1; }
# Where strongSwan and wireguard-go are installed (and the lab ran as
# root), s2-maxrate and s4-crypto carry a measured row for each.
if [ "$(id -u)" -eq 0 ]; then
    peers=()
    have_strongswan && peers+=("strongSwan")
    wireguard_go >/dev/null && peers+=("wireguard-go")
    python3 - "$LAB_OUT" "${peers[@]}" <<'PY' || exit 1
import json, re, sys
out, peers = sys.argv[1], sys.argv[2:]
for scenario in ["s2-maxrate", "s4-crypto"]:
    r = json.load(open(f"{out}/{scenario}/results.json"))
    rows = [row for t in r["tables"] for row in t["rows"]]
    for peer in peers:
        # The peer's own figure: the third column of both tables.
        got = [row for row in rows if peer in row[0] and re.search(r"[1-9]", row[2])]
        assert got, f"{scenario}: no measured {peer} row in {rows}"
        print(f"PASS: {scenario}: {peer}: {' | '.join(got[0])}")
PY
fi
# s2-rekey (issue 14): each configuration measured across rekeys (gwA's
# new Child SAs seen), strongSwan's rows where it is installed, and
# keep-old's skew losing responder -> initiator (the mechanism works on
# real packets; the other verdicts are reported, not asserted).
python3 - "$LAB_OUT" "$(have_strongswan && [ "$(id -u)" -eq 0 ] && echo yes)" <<'PY' || exit 1
import json, re, sys
out, sw = sys.argv[1], sys.argv[2] == "yes"
r = json.load(open(f"{out}/s2-rekey/results.json"))
rows = [row for row in r["tables"][0]["rows"] if row[0].startswith("today: ")]
want = ["flowsec loss-free", "flowsec prefer-new", "flowsec keep-old", "flowsec loss-free, PFS off"]
if sw:
    want += ["strongSwan", "flowsec ↔ strongSwan"]
for w in want:
    got = [row for row in rows if row[0].startswith("today: " + w)]
    assert got and int(got[0][4].split()[0]) >= 2, f"s2-rekey: {w}: not measured across rekeys: {rows}"
    print(f"PASS: s2-rekey: {' | '.join(got[0])}")
keep = [row for row in rows if "keep-old" in row[0]][0]
assert int(keep[6].split()[0]) > 1000, f"s2-rekey: keep-old lost nothing responder -> initiator: {keep}"
PY
# s4-crypto's SSL-VPN row (issue 15, root only): a stream measured over
# UDP, TCP and TLS (RFC 9329), and through the engine over TLS.
if [ "$(id -u)" -eq 0 ]; then
    python3 - "$LAB_OUT" <<'PY' || exit 1
import json, re, sys
r = json.load(open(f"{sys.argv[1]}/s4-crypto/results.json"))
t = [t for t in r["tables"] if t["title"].startswith("SSL-VPN")]
assert t, "s4-crypto: no SSL-VPN table"
for w in ["ESP in UDP", "ESP in TCP", "ESP in TLS 1.3 (the SSL-VPN), inline", "crypto engine", "plain TCP between"]:
    got = [row for row in t[0]["rows"] if w in row[0] and re.search(r"[1-9]", row[2])]
    assert got, f"s4-crypto: SSL-VPN: no measured '{w}' row: {t[0]['rows']}"
    print(f"PASS: s4-crypto: {' | '.join(got[0])}")
PY
fi
for f in report.md report.html; do
    [ -s "$LAB_OUT/$f" ] || { echo "FAIL: lab report $f missing"; exit 1; }
done
echo "PASS: $n scenarios wrote results.json, results.md, PNG and SVG plots; report.md and report.html combine them"
# The charts come back from results.json alone: this run's, and the
# committed full runs'.
rm -f "$LAB_OUT"/*/*.png
cp -r docs/results "$LAB_OUT/committed"
for dir in "$LAB_OUT" "$LAB_OUT/committed"; do
    target/debug/flowsec lab plot "$dir"
    n_png=$(ls "$dir"/*/*.png | wc -l)
    [ "$n_png" -ge 8 ] || { echo "FAIL: lab plot $dir drew $n_png PNGs"; exit 1; }
done
echo "PASS: lab plot redraws the charts from results.json"
rm -rf "$LAB_OUT"

if [ "${FLOWSEC_SKIP_ORACLE:-0}" != 1 ]; then
    step "oracle tests: scapy (ESP/AH both ways) and tshark (ESP decryption)"
    tests/oracle/run.sh
fi
