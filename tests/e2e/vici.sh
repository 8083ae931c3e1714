#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions called through check and poll
# End-to-end: flowsec in charon's place, driven through vici by tools no one
# here wrote. gwA runs `flowsec up --vici unix://…` only (no -c); Debian's
# swanctl 5.9.8 loads its swanctl.conf (--load-all), initiates, lists,
# rekeys and terminates; the Python `vici` package streams events and reads
# counters; a Go program on strongSwan's govici lists the SAs. gwB is a
# charon (FLOWSEC_VICI_PEER=strongswan, the default) or another flowsec
# driven the same way (flowsec).
#
#   hostA 10.1.0.2 -- gwA | 192.0.2.1 ==== 192.0.2.2 | gwB -- hostB 10.2.0.2
#
# Checks:
#   a. swanctl --load-all into flowsec: the secrets (a PSK and an RFC 8784
#      PPK) and connection (ppk_required) loaded; --list-conns shows them
#   b. swanctl --initiate: IKE and Child SA up at both ends, SPIs agreed,
#      the PPK used (swanctl --list-sas: …/PPK); the Python client got
#      ike-updown and child-updown (up = yes)
#   c. ping through; --list-sas (swanctl), the Python client's list-sas and
#      govici's all show the Child SA with bytes counted; get-counters
#      with charon's names, in total and for gw (Python, swanctl --counters)
#   d. swanctl --rekey --child: new SPIs at both ends; child-rekey event
#   e. swanctl --stats; hostile clients (an unknown command answered
#      CMD_UNKNOWN; malformed frames, an oversized one, a server-only
#      packet: each client closed, its counter in `flowsec-stats` over vici
#      and `flowsec ctl stats`), the daemon answering after them
#   f. a second connection to the same peer (same addresses and
#      identities, other traffic selectors), loaded by --load-all: with a
#      flowsec peer, initiated from gwA, then from gwB, both tunnels stay
#      up at both ends (no INITIAL_CONTACT kills the first; the responder
#      takes the connection whose children accept the selectors); with
#      charon, which picks by identities only, the first tunnel survives
#      either way and flowsec sends no INITIAL_CONTACT
#   g. swanctl --terminate --ike: gone at both ends; ike-updown (down)
#   h. swanctl --load-authorities from a file with an `authorities`
#      section: --list-authorities shows it with its CRL URI; a file
#      without it unloads it
#   i. `flowsec ctl --uri` at gwA's vici socket: stats, status --json
#
#   tests/e2e/vici.sh            root; needs target/debug/flowsec, Go, python3-venv
#   FLOWSEC_VICI_PEER=flowsec    gwB a flowsec too
#   FLOWSEC_E2E_KEEP=1           keep the work directory
#
# Without root or ip netns it prints "SKIP: ..." and exits 0.
set -eu -o pipefail

E2E_PREFIX="${E2E_PREFIX:-vici$$-}"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/e2e/ike_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ike_lib.sh"
IKE_TAG="e2e vici" INNER_FAMILIES="4"
FLOWSEC_IKE_VICI=1

e2e_require_root_netns

PEER="${FLOWSEC_VICI_PEER:-strongswan}"
FLOWSEC_BIN="${FLOWSEC_BIN:-$E2E_ROOT/target/debug/flowsec}"
require_flowsec "$FLOWSEC_BIN" FLOWSEC_BIN
install_strongswan || { echo "FAIL: strongSwan is not installed (apt-get install ${STRONGSWAN_PKGS[*]})"; exit 1; }
command -v go >/dev/null || { echo "FAIL: Go is needed for the govici client"; exit 1; }

e2e_outer v4
IKE_PROPOSAL=aes128gcm16-prfsha256-ecp256 ESP_PROPOSAL=aes128gcm16-ecp256
DPD_DELAY=0s UP_TIMEOUT=15 SA_TIMEOUT=20
CONN=gw CHILD=net TUN=fsvici0
PSK="flowsec-e2e-vici psk, not a secret"
RETRANSMIT_TIMEOUT=1 RETRANSMIT_BASE=1.4 RETRANSMIT_TRIES=2
declare -A IMPL=([gwA]=flowsec [gwB]="$PEER")
declare -A LOCAL_ADDR=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ADDR=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_ID=([gwA]="$GW_A" [gwB]="$GW_B")
declare -A REMOTE_ID=([gwA]="$GW_B" [gwB]="$GW_A")
declare -A LOCAL_TS=([gwA]="10.1.0.0/24" [gwB]="10.2.0.0/24")
declare -A REMOTE_TS=([gwA]="10.2.0.0/24" [gwB]="10.1.0.0/24")
# RFC 8784: gw needs a post-quantum preshared key at both ends, which
# swanctl loads as a `ppk` secret (load-shared type PPK).
CONN_ARGS="--ppk-id ppk-vici --ppk-required yes"
PPK_WORDS="secret ppk-vici --id ppk-vici --secret flowsec-e2e-vici-ppk-not-a-secret"
declare -A EXTRA_CONN=([gwA]="$PPK_WORDS" [gwB]="$PPK_WORDS")
declare -A GW_PID=()

echo "$IKE_TAG: gwA flowsec --vici (swanctl, Python vici, govici), gwB $PEER"
e2e_init
W="$E2E_WORK"
T0=$SECONDS
e2e_topology_gateway

# The clients: the Python package in the repository's venv (as the oracle
# tests'), the Go program built from the module proxy.
VENV="${FLOWSEC_VENV:-$E2E_ROOT/.venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$E2E_DIR/requirements.txt"
PY="$VENV/bin/python"
(cd "$E2E_DIR/govici" && go build -o "$W/govici-list" .) || { echo "FAIL: building the govici client"; exit 1; }
SOCK_A="$W/gwA.vici"

for gw in gwA gwB; do
    gen_swanctl_conf "$gw" >"$W/$gw-swanctl.conf"
    [ "${IMPL[$gw]}" = strongswan ] && gen_strongswan_conf "$gw" >"$W/$gw-strongswan.conf"
done

start_daemons
listed_conns() {
    sw gwA --list-conns >"$W/conns.txt" || return 1
    head -4 "$W/conns.txt" | sed 's/^/    swanctl --list-conns: /'
    grep -q '^gw: IKEv2' "$W/conns.txt"
}
check "a. swanctl --list-conns through flowsec shows the loaded connection" listed_conns

# The Python listener from before the initiate to the end.
"$PY" "$E2E_DIR/vici_client.py" events "$SOCK_A" "$W/events.jsonl" 300 >"$W/events.log" 2>&1 &
LISTENER=$!
poll 5 grep -q listening "$W/events.log" >/dev/null || true

events_of() {  # events_of KIND [up]: how many KIND events (with up = yes) the Python client got
    "$PY" - "$W/events.jsonl" "$1" "${2:-}" <<'EOF'
import json, sys
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["event"] != sys.argv[2]:
        continue
    if sys.argv[3] == "up" and e["body"].get("up") != "yes":
        continue
    if sys.argv[3] == "down" and e["body"].get("up") == "yes":
        continue
    n += 1
print(n)
EOF
}
events_seen() {  # events_seen KIND [up|down]: at least one
    [ "$(events_of "$@")" -ge 1 ]
}

up_with_events() {
    up_agreed || return 1
    CUR_CHILD=$(child_agreed) || return 1
    poll 5 events_seen ike-updown up >/dev/null &&
        poll 5 events_seen child-updown up >/dev/null ||
        { echo "    events: $(wc -l <"$W/events.jsonl") lines"; return 1; }
    echo "    Python vici: ike-updown (up) $(events_of ike-updown up), child-updown (up) $(events_of child-updown up)"
    sed 's/^/    gwA initiate: /' "$W/gwA-initiate.log" | tail -2
    sw gwA --list-sas 2>&1 | grep -m1 '/PPK' | sed 's/^/    swanctl --list-sas:/' | grep PPK
}
check "b. swanctl --initiate: SAs up at both ends, SPIs agreed, the PPK used; ike-updown and child-updown streamed" up_with_events

counted() {
    ping_both >/dev/null 2>&1 || true
    sw gwA --list-sas >"$W/list-sas.txt" || return 1
    sed -n '1,12p' "$W/list-sas.txt" | sed 's/^/    swanctl: /'
    "$PY" "$E2E_DIR/vici_client.py" counters "$SOCK_A" >"$W/counters.json" || return 1
    "$W/govici-list" "$SOCK_A" >"$W/govici.txt" || return 1
    sed 's/^/    govici: /' "$W/govici.txt"
    "$PY" - "$W/counters.json" "$W/govici.txt" "$W/list-sas.txt" <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
kids = [c for sa in d["sas"] for ike in sa.values() for c in ike["child-sas"].values()]
assert kids and all(int(c["bytes-in"]) > 0 and int(c["bytes-out"]) > 0 for c in kids), kids
total, gw = d["counters"]["counters"][""], d["named"]["counters"]["gw"]
# charon's names (its counters plugin): gwA initiated gw's IKE SA.
assert int(total["ike-init-out-req"]) >= 1 and int(gw["ike-auth-out-req"]) >= 1, (total, gw)
assert int(gw["ike-auth-in-resp"]) >= 1 and "invalid-spi" in gw, gw
print("    Python vici: list-sas child bytes in/out %s/%s; get-counters %s keys, gw: ike-auth-out-req %s; version %s %s" % (
    kids[0]["bytes-in"], kids[0]["bytes-out"], len(total), gw["ike-auth-out-req"],
    d["version"]["daemon"], d["version"]["version"]))
g = open(sys.argv[2]).read()
assert re.search(r"^ike gw ESTABLISHED 192\.0\.2\.2$", g, re.M), g
m = re.search(r"^child net INSTALLED \S+ \S+ (\d+) (\d+)$", g, re.M)
assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0, g
s = open(sys.argv[3]).read()
assert re.search(r"in  [0-9a-f]{8}, +[1-9][0-9]* bytes", s), s
EOF
    # swanctl's own view of them (5.9.8's --counters).
    sw gwA --counters --name gw >"$W/counters.txt" 2>&1 || { sed 's/^/    /' "$W/counters.txt"; return 1; }
    grep -E 'ike-auth-out-req' "$W/counters.txt" | sed 's/^ */    swanctl --counters --name gw: /'
    grep -qE 'ike-auth-out-req *: *[1-9]' "$W/counters.txt"
}
check "c. ping through; swanctl --list-sas, Python vici and govici show the Child SA with bytes counted" counted

rekeyed_with_event() {
    child_rekeyed gwA || return 1
    poll 5 events_seen child-rekey >/dev/null || { echo "    no child-rekey event"; return 1; }
    echo "    Python vici: child-rekey $(events_of child-rekey)"
}
check "d. swanctl --rekey --child: new SPIs at both ends; child-rekey streamed" rekeyed_with_event

hostile() {
    sw gwA --stats | sed -n '1,4p' | sed 's/^/    swanctl --stats: /'
    "$PY" "$E2E_DIR/vici_client.py" hostile "$SOCK_A" | sed 's/^/    /'
    [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
    # flowsec's own counters, over vici (flowsec-stats) and the control socket.
    "$PY" "$E2E_DIR/vici_client.py" command "$SOCK_A" flowsec-stats >"$W/stats-vici.json" || return 1
    fctl gwA stats --json >"$W/stats.json" || return 1
    "$PY" - "$W/stats-vici.json" "$W/stats.json" <<'EOF'
import json, sys
v = json.load(open(sys.argv[1]))["vici"]
print("    flowsec-stats over vici: vici %s" % ", ".join("%s %s" % kv for kv in v.items() if kv[1] != "0"))
assert int(v["unknown_command"]) >= 1 and int(v["malformed"]) >= 3, v
assert int(v["too_long"]) >= 1 and int(v["unexpected"]) >= 1, v
c = json.load(open(sys.argv[2]))["vici"]
assert c["malformed"] >= int(v["malformed"]), (c, v)
EOF
    [ $? -eq 0 ] || return 1
    sw gwA --list-sas >/dev/null
}
check "e. hostile vici clients: unknown command answered CMD_UNKNOWN, malformed ones closed with counters, the daemon answers on" hostile

# f. The second connection: same addresses and identities, other selectors.
for gw in gwA gwB; do
    me=${LOCAL_ADDR[$gw]} peer=${REMOTE_ADDR[$gw]} l=10.1.1.0/24 r=10.2.1.0/24
    [ "$gw" = gwB ] && l=10.2.1.0/24 r=10.1.1.0/24
    EXTRA_CONN[$gw]="$PPK_WORDS conn gw2 --version 2 --local-addrs $me --remote-addrs $peer --proposals $IKE_PROPOSAL --auth psk --local-id $me --remote-id $peer child net2 --local-ts $l --remote-ts $r --esp-proposals $ESP_PROPOSAL --start-action none"
    # gwA: a trap policy too (swanctl --list-pols), never triggered.
    [ "$gw" = gwA ] && EXTRA_CONN[$gw]+=" conn gw3 --version 2 --local-addrs $me --remote-addrs $peer --proposals $IKE_PROPOSAL --auth psk --local-id $me --remote-id $peer child net3 --local-ts 10.1.3.0/24 --remote-ts 10.2.3.0/24 --esp-proposals $ESP_PROPOSAL --start-action trap"
    gen_swanctl_conf "$gw" >"$W/$gw-swanctl.conf"
    sw "$gw" --load-all --noprompt --file "$(conf_of "$gw")" >"$W/$gw-load2.log" 2>&1 ||
        { show_log "$W/$gw-load2.log"; }
done
trap_listed() {
    local now
    now=$(child_agreed) || { echo "    gw's Child SA gone after the second --load-all"; return 1; }
    [ "$now" = "$CUR_CHILD" ] || { echo "    gw's Child SA changed: $CUR_CHILD -> $now"; return 1; }
    echo "    gw's Child SA kept: $now"
    sw gwA --list-pols >"$W/pols.txt" 2>&1 || { show_log "$W/pols.txt"; return 1; }
    sed 's/^/    swanctl --list-pols: /' "$W/pols.txt" | head -4
    grep -q 'gw3/net3' "$W/pols.txt" && grep -q '10.2.3.0/24' "$W/pols.txt"
}
check "f. swanctl --load-all again: gw2 added, gw and its SAs kept; gw3's trap policy in swanctl --list-pols" trap_listed
has_ike() {  # has_ike GW NAME: GW lists an IKE SA of connection NAME
    sw "$1" --list-sas 2>/dev/null | grep -q "^$2: "
}
lacks_ike() { ! has_ike "$@"; }
both_up() {  # both_up: gw and gw2 ESTABLISHED with their Child SA at both ends
    local gw
    for gw in gwA gwB; do
        CONN=gw CHILD=net sas "$gw" 'ike and child' >/dev/null || { echo "    $gw: gw down"; return 1; }
        CONN=gw2 CHILD=net2 sas "$gw" 'ike and child' >/dev/null || { echo "    $gw: gw2 down"; return 1; }
    done
}
second_from() {  # second_from GW: GW initiates net2; then both tunnels up at both ends
    sw "$1" --initiate --child net2 --timeout "$SA_TIMEOUT" >"$W/$1-initiate2.log" 2>&1 ||
        { show_log "$W/$1-initiate2.log"; return 1; }
    sleep 1
    poll 10 both_up >/dev/null || { both_up; return 1; }
    for gw in gwA gwB; do
        echo "    $gw: $(sas "$gw" '", ".join("%s %s" % (s["name"], s["state"]) for s in sas)')"
    done
}
child_kept() {  # child_kept GW IN OUT: GW has an INSTALLED Child SA with these SPIs (any IKE SA)
    sas "$1" "any(c['spi_in'] == '$2' and c['spi_out'] == '$3' and c['state'] == 'INSTALLED' for s in sas for c in s['child_sas'])" >/dev/null
}
first_survives() {  # first_survives GW: GW initiates net2 (charon refuses it); gw's Child SA as before at both ends
    sw "$1" --initiate --child net2 --timeout "$SA_TIMEOUT" >"$W/$1-initiate2.log" 2>&1 || true
    tail -1 "$W/$1-initiate2.log" | sed "s/^/    $1: /"
    sleep 1
    local a_in a_out
    read -r a_in a_out <<<"$CUR_CHILD"
    child_kept gwA "$a_in" "$a_out" && child_kept gwB "$a_out" "$a_in" ||
        { echo "    gw's Child SA ($CUR_CHILD) is gone"; show_sas; return 1; }
    echo "    gw's Child SA kept at both ends: $CUR_CHILD"
    # The IKE_AUTH requests charon parsed: INITIAL_CONTACT in the first only.
    local n
    n=$(grep -c 'parsed IKE_AUTH request 1 .*N(INIT_CONTACT)' "$(log_of gwB)" || true)
    echo "    IKE_AUTH requests with INITIAL_CONTACT at gwB: $n"
    [ "$n" -le 1 ]
}
if [ "$PEER" = flowsec ]; then
    check "f. a second connection to the same peer, initiated from gwA: both tunnels up at both ends" second_from gwA
    sw gwA --terminate --ike gw2 --timeout "$SA_TIMEOUT" >/dev/null 2>&1 || true
    poll 10 lacks_ike gwB gw2 >/dev/null || true
    check "f. the same, initiated from gwB: both tunnels up at both ends" second_from gwB
else
    # charon's responder picks the first connection that matches the
    # identities (ike_auth.c load_cfg_candidates: no traffic selectors),
    # and its initiator runs a second connection's child in the IKE SA of
    # an equal one (ike_sa_manager checkout_by_config): charon refuses the
    # selectors as it would against itself; what flowsec owes is that
    # the first tunnel survives both ways.
    check "f. a second connection to the same peer from gwA (flowsec) to charon: no INITIAL_CONTACT, the first tunnel survives" first_survives gwA
    check "f. the same from gwB (charon): the first tunnel survives" first_survives gwB
fi
# Only gw from here (charon calls gw2's IKE SA gw: its connection).
sw gwA --terminate --ike gw2 --timeout "$SA_TIMEOUT" >/dev/null 2>&1 || true

down_with_event() {
    sw gwA --terminate --ike gw --timeout "$SA_TIMEOUT" >"$W/gwA-terminate.log" 2>&1 ||
        { show_log "$W/gwA-terminate.log"; return 1; }
    tail -1 "$W/gwA-terminate.log" | sed 's/^/    /'
    local gw
    for gw in gwA gwB; do
        poll 10 lacks_ike "$gw" gw >/dev/null ||
            { echo "    $gw still has gw:"; sw "$gw" --list-sas 2>&1 | head -5 | sed 's/^/      /'; return 1; }
    done
    poll 5 events_seen ike-updown down >/dev/null || { echo "    no ike-updown (down)"; return 1; }
    echo "    Python vici: ike-updown (down) $(events_of ike-updown down)"
}
check "g. swanctl --terminate --ike: gone at both ends; ike-updown (down) streamed" down_with_event

# An authority of swanctl.conf(5): swanctl reads its certificate and sends
# load-authority; --list-authorities lists it back; a file without it
# makes swanctl unload it (get-authorities, unload-authority).
authorities_round_trip() {
    local d="$W/authority"
    mkdir -p "$d/x509ca"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj "/CN=flowsec e2e vici CA" -addext basicConstraints=critical,CA:TRUE \
        -keyout "$d/ca.key" -out "$d/x509ca/ca.pem" 2>/dev/null || return 1
    printf 'authorities {\n  e2e-ca {\n    cacert = ca.pem\n    crl_uris = http://crl.example/e2e.crl\n    ocsp_uris = http://ocsp.example\n  }\n}\n' >"$d/swanctl.conf"
    sw gwA --load-authorities --file "$d/swanctl.conf" >"$d/load.log" 2>&1 || { sed "s/^/    /" "$d/load.log"; return 1; }
    sw gwA --list-authorities >"$d/list.txt" 2>&1 || { sed "s/^/    /" "$d/list.txt"; return 1; }
    sed 's/^/    swanctl --list-authorities: /' "$d/list.txt"
    grep -q '^e2e-ca:' "$d/list.txt" && grep -q 'flowsec e2e vici CA' "$d/list.txt" &&
        grep -q 'http://crl.example/e2e.crl' "$d/list.txt" || return 1
    printf 'authorities {\n}\n' >"$d/empty.conf"
    sw gwA --load-authorities --file "$d/empty.conf" >"$d/unload.log" 2>&1 || { sed "s/^/    /" "$d/unload.log"; return 1; }
    sed 's/^/    swanctl --load-authorities (none): /' "$d/unload.log" | tail -1
    sw gwA --list-authorities >"$d/list2.txt" 2>&1 || return 1
    ! grep -q 'e2e-ca' "$d/list2.txt"
}
check "h. swanctl --load-authorities: the authority loaded with its URIs, listed, unloaded by a file without it" authorities_round_trip

# flowsec's own client speaks vici too: `flowsec ctl --uri` at gwA's vici
# socket (no control socket in the way) lists what swanctl loaded.
ctl_over_vici() {
    local out
    out=$(timeout 10 "$FLOWSEC_BIN" ctl --uri "unix://$SOCK_A" stats 2>&1) || { echo "    $out"; return 1; }
    grep '^total:' <<<"$out" | sed 's/^/    flowsec ctl --uri: /'
    out=$(timeout 10 "$FLOWSEC_BIN" ctl --uri "unix://$SOCK_A" status --json 2>&1) || { echo "    $out"; return 1; }
    python3 -c 'import json,sys; s=json.loads(sys.argv[1]); assert s["tun"], s' "$out"
}
check "i. flowsec ctl --uri at the vici socket: stats and status answered (flowsec-* over vici)" ctl_over_vici

kill "$LISTENER" 2>/dev/null || true
echo "$IKE_TAG: $((SECONDS - T0)) s"
ike_finish
