# shellcheck shell=bash
# shellcheck disable=SC2317,SC2119,SC2120,SC2153  # functions called through check and poll; variables the sourcing script sets
# What the IKEv2 end-to-end scripts (tests/e2e/ike.sh, tests/e2e/ike_nat.sh)
# share: two gateways gwA (the initiator) and gwB (the responder), each
# running strongSwan (charon-systemd with kernel-libipsec) or flowsec
# (`flowsec up -c swanctl.conf`), driven through swanctl or `flowsec ctl`.
# Source it after tests/e2e/lib.sh.
#
# The sourcing script sets, before calling these:
#   IKE_TAG            its name in messages ("e2e ike")
#   W                  the work directory ($E2E_WORK)
#   IMPL[gw]           strongswan or flowsec, per gateway (gwA, gwB)
#   FLOWSEC_BIN        the flowsec binary
#   CONN CHILD         the IKE connection and the Child SA names
#   TUN                flowsec's TUN device
#   UP_TIMEOUT SA_TIMEOUT   seconds for a daemon to start, an exchange to complete
#   RETRANSMIT_TIMEOUT RETRANSMIT_BASE RETRANSMIT_TRIES   IKE retransmissions
#   SAS_FORMAT         what `sas GW` prints: lines (default) or json (below)
#   IKE_SHOW_LOAD=1    start_daemon prints a charon's swanctl --load-all summary
#   BYTES              tcp_transfer's size
# and defines child_spis GW and ike_spis GW: "IN OUT" of GW's one INSTALLED
# Child SA, "SPI_I SPI_R" of its ESTABLISHED IKE SA (status 1 when none).

# Per gateway: the daemon's PID (start_daemon).
declare -A DPID

# ------------------------------------------------------------ the packages
STRONGSWAN_PKGS=(charon-systemd strongswan-swanctl libcharon-extra-plugins
    libstrongswan-extra-plugins libstrongswan-standard-plugins)

# The binaries a strongSwan side needs.
have_strongswan() {
    [ -x /usr/sbin/charon-systemd ] && command -v swanctl >/dev/null 2>&1 &&
        [ -f /usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so ] &&
        [ -f /usr/lib/ipsec/plugins/libstrongswan-openssl.so ]
}
apt_install() {  # apt_install PKG...: Debian packages, quietly
    [ "${FLOWSEC_IKE_NO_INSTALL:-0}" = 1 ] && return 1
    command -v apt-get >/dev/null 2>&1 || return 1
    echo "$IKE_TAG: apt-get install $*"
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"; } \
        >/tmp/flowsec-e2e-ike-apt.log 2>&1 || { tail -5 /tmp/flowsec-e2e-ike-apt.log; return 1; }
}
install_strongswan() {  # install_strongswan: strongSwan's packages where they are missing
    have_strongswan && return 0
    apt_install "${STRONGSWAN_PKGS[@]}" || true
    # The packaged service must not run a charon of its own (it would
    # be harmless in the root namespace, but it is not what we test).
    if command -v systemctl >/dev/null 2>&1; then
        systemctl disable --now strongswan.service >/dev/null 2>&1 || true
    fi
}
install_capture_tools() {  # install_capture_tools: tshark and tcpdump where missing
    if ! command -v tshark >/dev/null 2>&1 || ! command -v tcpdump >/dev/null 2>&1; then
        apt_install tshark tcpdump || true
    fi
}
require_flowsec_bin() {  # require_flowsec_bin: exit 1 unless $FLOWSEC_BIN runs
    if [ ! -x "$FLOWSEC_BIN" ]; then
        echo "FAIL: flowsec binary not found at $FLOWSEC_BIN (cargo build -p flowsec, or set FLOWSEC_BIN=)"
        exit 1
    fi
}

log_of() { echo "$W/$1-${IMPL[$1]}.log"; }

# ------------------------------------------------------------ configuration
# One gateway's swanctl.conf: the text both implementations read. From the
# script: per gateway LOCAL_ADDR, REMOTE_ADDR, LOCAL_ID, REMOTE_ID, LOCAL_TS
# and REMOTE_TS; IKE_PROPOSAL, ESP_PROPOSAL, DPD_DELAY, PSK; CHILD_EXTRA,
# lines to end the child's section with; GWA_ROLE, gwA's role in the
# header comment.
gen_swanctl_conf() {  # gen_swanctl_conf GW
    local gw="$1"
    cat <<EOF
# flowsec $IKE_TAG: $gw (${IMPL[$gw]}), $([ "$gw" = gwA ] && echo "${GWA_ROLE:-initiator}" || echo responder)
connections {
    $CONN {
        version = 2
        local_addrs = ${LOCAL_ADDR[$gw]}
        remote_addrs = ${REMOTE_ADDR[$gw]}
        proposals = $IKE_PROPOSAL
        dpd_delay = $DPD_DELAY
        local {
            auth = psk
            id = ${LOCAL_ID[$gw]}
        }
        remote {
            auth = psk
            id = ${REMOTE_ID[$gw]}
        }
        children {
            $CHILD {
                local_ts = ${LOCAL_TS[$gw]}
                remote_ts = ${REMOTE_TS[$gw]}
                esp_proposals = $ESP_PROPOSAL
                mode = tunnel
                start_action = none
                dpd_action = clear
                rekey_time = 1h${CHILD_EXTRA:-}
            }
        }
    }$(extra_connections "$gw")
}
secrets {
    ike-$CONN {
        id = ${REMOTE_ID[$gw]}
        secret = "$PSK"
    }
}
EOF
}

# More connections for GW: ${EXTRA_CONN[GW]}, when the sourcing script
# declares that associative array (tests/e2e/ike.sh's check j).
extra_connections() {  # extra_connections GW
    if declare -p EXTRA_CONN >/dev/null 2>&1; then
        printf '%s' "${EXTRA_CONN[$1]:-}"
    fi
    return 0
}

# One charon's strongswan.conf. The plugins: kernel-libipsec before
# kernel-netlink (libipsec's IPsec interface must be the one registered;
# kernel-netlink still does routes and addresses); openssl for ECP groups,
# 3DES and AES-GCM's fast path, gmp for MODP, curve25519 for x25519,
# chapoly for ChaCha20-Poly1305 (IKE and libipsec's ESP), kdf for the
# IKE key derivation (prf+; without it: "KDF_PRF with PRF_HMAC_SHA2_256 not
# supported", 5.9.8 moved prf+ into that plugin). FLOWSEC_IKE_CHARON_DEBUG
# ("ike 4, enc 2") sets charon's log levels per subsystem.
gen_strongswan_conf() {  # gen_strongswan_conf GW [VICI_SOCKET]
    cat <<EOF
# flowsec $IKE_TAG: $1
charon {
    load = random nonce aes sha1 sha2 md5 hmac xcbc cmac gcm chapoly openssl gmp curve25519 kdf kernel-libipsec kernel-netlink socket-default vici
    install_routes = yes
    # No ids for PSK lookups beyond the file's; no vendor ID.
    # Retransmissions: 1 s, then 1.4 s, then give up after another 1.96 s
    # (the defaults take 165 s to declare a peer dead).
    retransmit_tries = $RETRANSMIT_TRIES
    retransmit_timeout = $RETRANSMIT_TIMEOUT
    retransmit_base = $RETRANSMIT_BASE
    filelog {
        stderr {
            default = 1
$(echo "${FLOWSEC_IKE_CHARON_DEBUG:-}" | tr ',' '\n' | sed -nE 's/^ *([a-z]+)[ =]+(-?[0-9]) *$/            \1 = \2/p')
            flush_line = yes
            time_format = %T
            ike_name = yes
        }
    }
    journal {
        default = -1
    }
    plugins {
        vici {
            socket = unix://${2:-$W/$1.vici}
        }
    }
}
EOF
}

# -------------------------------------------------------------- one side
uri() { echo "unix://$W/$1.vici"; }
sw() {  # sw GW swanctl-args...: swanctl against GW's charon
    local gw="$1"; shift
    ns_exec "$gw" timeout 30 swanctl "$@" --uri "$(uri "$gw")"
}
fctl() {  # fctl GW ctl-args...: flowsec ctl against GW's daemon (never hangs)
    local gw="$1"; shift
    FLOWSEC_SOCKET="$W/$gw.sock" timeout 10 "$FLOWSEC_BIN" ctl --socket "$W/$gw.sock" "$@"
}
show_ctl_sas() {  # show_ctl_sas GW LINES: the first LINES of `flowsec ctl sas`, indented
    # Whole, then cut: `flowsec ctl` panics on a closed pipe.
    local shown
    shown=$(fctl "$1" sas 2>&1) || true
    head -n "$2" <<<"$shown" | sed "s/^/    $1: /"
}

start_daemon() {  # start_daemon GW: GW's daemon up, its swanctl.conf loaded; DPID[GW]
    local gw="$1" log
    log=$(log_of "$gw")
    if [ "${IMPL[$gw]}" = strongswan ]; then
        rm -f "$W/$gw.vici"
        start_bg "$gw" "$log" env STRONGSWAN_CONF="$W/$gw-strongswan.conf" /usr/sbin/charon-systemd
        DPID[$gw]=$E2E_LAST_PID
        local i
        for ((i = 0; i < UP_TIMEOUT * 10; i++)); do
            [ -S "$W/$gw.vici" ] && break
            pid_alive "${DPID[$gw]}" || break
            sleep 0.1
        done
        [ -S "$W/$gw.vici" ] || { echo "    $gw: no vici socket after ${UP_TIMEOUT}s"; show_log "$log"; return 1; }
        sw "$gw" --load-all --noprompt --file "$W/$gw-swanctl.conf" >"$W/$gw-load.log" 2>&1 ||
            { show_log "$W/$gw-load.log"; show_log "$log"; return 1; }
        if [ "${IKE_SHOW_LOAD:-0}" = 1 ]; then
            sed 's/^/    /' "$W/$gw-load.log" | grep -v 'opening directory' | head -4
        fi
    else
        local args=(up -c "$W/$gw-swanctl.conf" --tun "$TUN" --socket "$W/$gw.sock")
        [ -n "${FLOWSEC_IKE_WORKERS:-}" ] && args+=(--workers "$FLOWSEC_IKE_WORKERS")
        # The same retransmission timers as the charons (for the DPD
        # check), where this flowsec has the options.
        if "$FLOWSEC_BIN" up --help 2>/dev/null | grep -q -- '--retransmit-timeout'; then
            args+=(--retransmit-timeout "$RETRANSMIT_TIMEOUT" --retransmit-base "$RETRANSMIT_BASE"
                --retransmit-tries "$RETRANSMIT_TRIES")
        fi
        start_bg "$gw" "$log" env FLOWSEC_SOCKET="$W/$gw.sock" "$FLOWSEC_BIN" "${args[@]}"
        DPID[$gw]=$E2E_LAST_PID
        wait_for_log "$log" 'flowsec: up' "$UP_TIMEOUT" "${DPID[$gw]}" || { show_log "$log"; return 1; }
    fi
}
start_daemons() {  # start_daemons: both gateways' daemons (a check each); stops the run if one fails
    local gw
    for gw in gwA gwB; do
        check "$gw: ${IMPL[$gw]} up" start_daemon "$gw"
    done
    if [ "$E2E_FAILED" -ne 0 ]; then
        echo "$IKE_TAG: a daemon did not come up; not running the other checks"
        e2e_finish
    fi
}

# ------------------------------------------------------------ the SAs
# $W/sas.py FORMAT [OUTPUT] reads one gateway's SAs on stdin: FORMAT
# strongswan (swanctl --list-sas --raw), flowsec (`flowsec ctl sas --json`)
# or vici-json (swanctl's raw listing to the JSON of vici's names, for
# tests/e2e/ike.sh's stand-in). OUTPUT lines (the default), one line an SA:
#   IKE <name> <state> <initiator-spi> <responder-spi>
#   CHILD <name> <state> <spi-in> <spi-out> <bytes-in> <bytes-out> <packets-in> <packets-out> <dh-group|->
# or OUTPUT json, the same JSON for either implementation:
#   [{"name", "state", "spi_i", "spi_r", "local_host", "local_port",
#     "remote_host", "remote_port", "nat" (bool), "nat_local", "nat_remote"
#     (bool or null), "children": [{"name", "state", "spi_in", "spi_out",
#     "encap" (bool), "bytes_in", "packets_in", "bytes_out", "packets_out"}]}]
write_sas_py() {  # write_sas_py: $W/sas.py
    cat >"$W/sas.py" <<'PYEOF'
import json, re, sys

def norm(d):
    """keys with dashes, lower case"""
    return {str(k).lower().replace("_", "-"): v for k, v in d.items()} if isinstance(d, dict) else {}

def parse_vici_raw(text):
    """swanctl --list-sas --raw: 'list-sa event {name {k=v sec {..} list [a b]}}' per line"""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("list-sa event"):
            continue
        toks = re.findall(r"\{|\}|\[|\]|[^\s{}\[\]]+", line[len("list-sa event"):])
        def section(i):
            d = {}
            while i < len(toks):
                t = toks[i]
                if t == "}":
                    return d, i + 1
                if i + 1 < len(toks) and toks[i + 1] == "{":
                    d[t], i = section(i + 2)
                elif i + 1 < len(toks) and toks[i + 1] == "[":
                    j = toks.index("]", i + 2)
                    d[t] = toks[i + 2:j]
                    i = j + 1
                elif "=" in t:
                    k, v = t.split("=", 1)
                    d[k] = v
                    i += 1
                else:
                    i += 1
            return d, i
        top, _ = section(1) if toks and toks[0] == "{" else section(0)
        for name, sa in top.items():
            if isinstance(sa, dict):
                sa.setdefault("name", name)
                kids = sa.get("child-sas", {})
                sa["child-sas"] = [dict(c, name=c.get("name", k)) for k, c in kids.items()] if isinstance(kids, dict) else []
                out.append(sa)
    return out

def hexspi(v):
    if v is None:
        return "-"
    if isinstance(v, int):
        return "%x" % v
    s = str(v).lower()
    s = s[2:] if s.startswith("0x") else s
    return s.lstrip("0") or "0"

def num(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None

def normalised(fmt, text):
    """the JSON above"""
    out = []
    if fmt == "strongswan":
        for sa in parse_vici_raw(text):
            nl, nr = sa.get("nat-local") == "yes", sa.get("nat-remote") == "yes"
            out.append({
                "name": sa["name"], "state": sa.get("state", "-").upper(),
                "spi_i": hexspi(sa.get("initiator-spi")), "spi_r": hexspi(sa.get("responder-spi")),
                "local_host": sa.get("local-host"), "local_port": num(sa.get("local-port")),
                "remote_host": sa.get("remote-host"), "remote_port": num(sa.get("remote-port")),
                "nat": nl or nr or sa.get("nat-any") == "yes" or sa.get("nat-fake") == "yes",
                "nat_local": nl, "nat_remote": nr,
                "children": [{
                    "name": c["name"], "state": c.get("state", "-").upper(),
                    "spi_in": hexspi(c.get("spi-in")), "spi_out": hexspi(c.get("spi-out")),
                    "encap": c.get("encap") == "yes",
                    "bytes_in": num(c.get("bytes-in")), "packets_in": num(c.get("packets-in")),
                    "bytes_out": num(c.get("bytes-out")), "packets_out": num(c.get("packets-out")),
                } for c in sa["child-sas"]],
            })
    else:
        for sa in json.loads(text)["ike_sas"]:
            out.append({
                "name": sa["name"], "state": str(sa["state"]).upper(),
                "spi_i": hexspi(sa["initiator_spi"]), "spi_r": hexspi(sa["responder_spi"]),
                "local_host": sa["local_host"], "local_port": sa["local_port"],
                "remote_host": sa["remote_host"], "remote_port": sa["remote_port"],
                "nat": sa["nat"] is True, "nat_local": None, "nat_remote": None,
                "children": [{
                    "name": c["name"], "state": str(c["state"]).upper(),
                    "spi_in": hexspi(c["spi_in"]), "spi_out": hexspi(c["spi_out"]),
                    "encap": c["encap"] is True,
                    "bytes_in": c["bytes_in"], "packets_in": c["packets_in"],
                    "bytes_out": c["bytes_out"], "packets_out": c["packets_out"],
                } for c in sa["child_sas"]],
            })
    return out

def main():
    fmt = sys.argv[1]
    output = sys.argv[2] if len(sys.argv) > 2 else "lines"
    text = sys.stdin.read()
    if fmt == "vici-json":  # the stand-in's `ctl sas --json`
        print(json.dumps(parse_vici_raw(text)))
        return
    if output == "json":
        print(json.dumps(normalised(fmt, text)))
        return
    if fmt == "strongswan":
        sas = parse_vici_raw(text)
    else:
        sas = json.loads(text)
        if isinstance(sas, dict):
            sas = sas.get("ike_sas", sas.get("ike-sas", sas.get("sas", [])))
    for sa in sas:
        sa = norm(sa)
        print("IKE %s %s %s %s" % (sa.get("name", "-"), str(sa.get("state", "-")).upper(),
                                   hexspi(sa.get("initiator-spi")), hexspi(sa.get("responder-spi"))))
        kids = sa.get("child-sas", sa.get("children", []))
        if isinstance(kids, dict):
            kids = [dict(v, name=v.get("name", k)) for k, v in kids.items()]
        for c in kids:
            c = norm(c)
            print("CHILD %s %s %s %s %s %s %s %s %s" % (
                c.get("name", "-"), str(c.get("state", "-")).upper(),
                hexspi(c.get("spi-in")), hexspi(c.get("spi-out")),
                c.get("bytes-in", "-"), c.get("bytes-out", "-"),
                c.get("packets-in", "-"), c.get("packets-out", "-"),
                c.get("dh-group") or "-"))

main()
PYEOF
}

sas() {  # sas GW: GW's SAs as sas.py's $SAS_FORMAT; status 1 when the daemon does not answer
    local gw="$1" raw
    if [ "${IMPL[$gw]}" = strongswan ]; then
        raw=$(sw "$gw" --list-sas --raw 2>&1) || { echo "$raw" >"$W/$gw-sas.err"; return 1; }
        python3 "$W/sas.py" strongswan "${SAS_FORMAT:-lines}" <<<"$raw"
    else
        raw=$(fctl "$gw" sas --json 2>&1) || { echo "$raw" >"$W/$gw-sas.err"; return 1; }
        python3 "$W/sas.py" flowsec "${SAS_FORMAT:-lines}" <<<"$raw" 2>"$W/$gw-sas.err" ||
            { echo "$raw" >>"$W/$gw-sas.err"; return 1; }
    fi
}
show_sas() {  # show_sas: both gateways' SAs, indented
    local gw
    for gw in gwA gwB; do
        sas "$gw" 2>/dev/null | sed "s/^/    $gw: /" || { echo "    $gw: no answer"; show_log "$W/$gw-sas.err" 5; }
    done
}

# ------------------------------------------------------------ the exchanges
on_gw() {  # on_gw GW NAME swanctl-args... -- ctl-args...: sw or fctl, as GW runs, to $W/GW-NAME.log
    local gw="$1" log="$W/$1-$2.log" sw_args=()
    shift 2
    while [ "$1" != -- ]; do sw_args+=("$1"); shift; done
    shift
    if [ "${IMPL[$gw]}" = strongswan ]; then
        sw "$gw" "${sw_args[@]}" >"$log" 2>&1
    else
        fctl "$gw" "$@" >"$log" 2>&1
    fi || { show_log "$log" 10; return 1; }
}
initiate() {  # initiate GW: bring the Child SA (and the IKE SA) up from GW
    on_gw "$1" initiate --initiate --child "$CHILD" --timeout "$SA_TIMEOUT" -- initiate --child "$CHILD"
}
rekey_child() {  # rekey_child GW
    on_gw "$1" rekey --rekey --child "$CHILD" -- rekey --child "$CHILD"
}
rekey_ike() {  # rekey_ike GW
    on_gw "$1" rekey --rekey --ike "$CONN" -- rekey --ike "$CONN"
}
terminate_ike() {  # terminate_ike GW
    on_gw "$1" terminate --terminate --ike "$CONN" --timeout "$SA_TIMEOUT" -- terminate --ike "$CONN"
}

# The Child SA installed at both ends, one pair of SPIs each, agreed
# (gwA's in = gwB's out and back); prints "A_IN A_OUT". With EXCLUDE (a
# list of SPIs), none of them may still be installed.
child_agreed() {  # child_agreed [EXCLUDE...]
    local a b a_in a_out b_in b_out x
    a=$(child_spis gwA) || return 1
    b=$(child_spis gwB) || return 1
    read -r a_in a_out <<<"$a"
    read -r b_in b_out <<<"$b"
    [ "$a_in" = "$b_out" ] && [ "$a_out" = "$b_in" ] || return 1
    for x in "$@"; do
        [ "$x" != "$a_in" ] && [ "$x" != "$a_out" ] || return 1
    done
    echo "$a_in $a_out"
}
ike_agreed() {  # ike_agreed [EXCLUDE_SPI...]: the IKE SA at both ends, same SPIs; prints "SPI_I SPI_R"
    local a b x
    a=$(ike_spis gwA) || return 1
    b=$(ike_spis gwB) || return 1
    [ -n "$a" ] && [ -n "$b" ] || return 1
    [ "$a" = "$b" ] || return 1
    for x in "$@"; do
        case " $a " in *" $x "*) return 1 ;; esac
    done
    echo "$a"
}
poll() {  # poll TIMEOUT_S cmd...: until cmd succeeds; its output on stdout
    local timeout="$1" i out
    shift
    for ((i = 0; i < timeout * 5; i++)); do
        if out=$("$@" 2>/dev/null); then
            echo "$out"; return 0
        fi
        sleep 0.2
    done
    return 1
}

up_agreed() {  # up_agreed: gwA initiates; the Child SA and the IKE SA agreed at both ends
    local t=$SECONDS spis ike
    initiate gwA || return 1
    spis=$(poll "$SA_TIMEOUT" child_agreed) || { echo "    no agreed INSTALLED Child SA at both ends within ${SA_TIMEOUT}s"; show_sas; return 1; }
    ike=$(poll 5 ike_agreed) || { echo "    IKE SA not ESTABLISHED with the same SPIs at both ends"; show_sas; return 1; }
    echo "    IKE SPIs $ike; Child SA SPIs (gwA in/out) $spis; $((SECONDS - t)) s"
}
child_rekeyed() {  # child_rekeyed OLD T0: a new agreed Child SA, none of OLD's SPIs; CUR_CHILD
    local old="$1" t="$2" new
    # shellcheck disable=SC2086
    new=$(poll "$SA_TIMEOUT" child_agreed $old) || {
        echo "    no new agreed Child SA (old SPIs $old gone) within ${SA_TIMEOUT}s"; show_sas; return 1; }
    CUR_CHILD=$new
    echo "    SPIs (gwA in/out) $old -> $new in $((SECONDS - t)) s"
}
ike_rekeyed() {  # ike_rekeyed GW: GW rekeys the IKE SA; new SPIs at both ends, the Child SA kept (CUR_CHILD)
    local gw="$1" old new t=$SECONDS child
    old=$(ike_agreed) || { echo "    no IKE SA before the rekey"; show_sas; return 1; }
    rekey_ike "$gw" || return 1
    # shellcheck disable=SC2086
    new=$(poll "$SA_TIMEOUT" ike_agreed $old) || {
        echo "    no new IKE SA at both ends (old SPIs $old gone) within ${SA_TIMEOUT}s"; show_sas; return 1; }
    echo "    IKE SPIs $old -> $new in $((SECONDS - t)) s"
    # The Child SA moves to the new IKE SA, unchanged.
    child=$(poll 5 child_agreed) || { echo "    Child SA lost"; show_sas; return 1; }
    [ "$child" = "$CUR_CHILD" ] || echo "    (Child SA SPIs changed: $CUR_CHILD -> $child)"
    CUR_CHILD=$child
}

# ------------------------------------------------------------ traffic
start_capture() {  # start_capture NS IF PCAP LOG: tcpdump on NS's IF to PCAP; TCPDUMP_PID
    start_bg "$1" "$4" tcpdump -i "$2" -n -U -s 0 -w "$3"
    TCPDUMP_PID=$E2E_LAST_PID
    wait_for_log "$4" 'listening on' 5 "$TCPDUMP_PID" || show_log "$4"
}
# Link-local noise in a capture: ARP, IPv6 neighbour discovery and
# multicast listener reports (a tshark display filter).
# shellcheck disable=SC2034  # used by the sourcing scripts
NOISE_FILTER="arp or (icmpv6 and (icmpv6.type >= 133 and icmpv6.type <= 137 or ipv6.src == fe80::/10 or ipv6.src == :: or ipv6.dst == ff02::/16))"

frames() {  # frames PCAP [FILTER]: how many frames of PCAP (match the tshark display FILTER)
    if [ $# -gt 1 ]; then
        tshark -n -r "$1" -Y "$2" 2>/dev/null | wc -l
    else
        tshark -n -r "$1" 2>/dev/null | wc -l
    fi
}

tcp_transfer() {  # tcp_transfer: $BYTES hostA -> hostB 10.2.0.2:5001, sha256 compared
    local res="$W/recv.json" rpid
    rm -f "$res"
    start_bg hostB "$W/recv.log" python3 "$E2E_TOOLS" recv --bind 10.2.0.2 --port 5001 --result "$res" --timeout 30
    rpid=$E2E_LAST_PID
    wait_for_log "$W/recv.log" 'recv: listening' 5 "$rpid" || { show_log "$W/recv.log"; return 1; }
    ns_exec hostA timeout 30 python3 "$E2E_TOOLS" send --to 10.2.0.2 --port 5001 --bytes "$BYTES" --timeout 25 \
        >"$W/send.json" 2>"$W/send.log" || { echo "    sender failed"; show_log "$W/send.log"; stop_bg "$rpid" 1; return 1; }
    stop_bg "$rpid" 2
    [ -f "$res" ] || { echo "    receiver wrote no result"; show_log "$W/recv.log"; return 1; }
    python3 - "$W/send.json" "$res" "$BYTES" <<'EOF'
import json, sys
s, r, n = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
print("    %d B in %.2f s (%.0f Mbit/s), sha256 %s %s" % (s["bytes"], s["seconds"], s["mbit_s"], s["sha256"][:16],
      "matches" if s["sha256"] == r["sha256"] else "DIFFERS: " + str(r["sha256"])[:16]))
sys.exit(0 if s["bytes"] == r["bytes"] == n and s["sha256"] == r["sha256"] else 1)
EOF
}

ike_finish() {  # ike_finish: the time taken, the daemons' logs when a check failed; e2e_finish
    echo "$IKE_TAG: $((SECONDS - T0)) s"
    if [ "$E2E_FAILED" -ne 0 ]; then
        local gw
        for gw in gwA gwB; do show_log "$(log_of "$gw")" 40; done
    fi
    e2e_finish
}
