# shellcheck shell=bash
# shellcheck disable=SC2317,SC2119,SC2120,SC2153  # functions called through check and poll; variables the sourcing script sets
# What the IKEv2 end-to-end scripts (tests/e2e/ike.sh, tests/e2e/ike_nat.sh)
# share: two gateways gwA (the initiator) and gwB (the responder), each
# running strongSwan (charon-systemd with kernel-libipsec) or flowsec
# (`flowsec up -c swanctl.conf`), driven through swanctl or `flowsec ctl`:
# their configuration, their SAs (tools.py sas), the exchanges, the checks
# both scripts make (SAs up, Child SA and IKE SA rekeys, the capture).
# Source it after tests/e2e/lib.sh (scripts/soak.sh does, for fctl and
# child_spis).
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
#   IKE_SHOW_LOAD=1    start_daemon prints a charon's swanctl --load-all summary
#   INNER_FAMILIES     the inner address families the rekey checks ping (ping_both)
#   STRONGSWAN_ROOT    a Debian 13 root (scripts/lib.sh install_strongswan6):
#                      the strongswan gateways run its charon 6.0.1 and swanctl,
#                      chrooted (mount_root first: W, /dev and /proc in it)
#   CUR_CHILD          the agreed Child SA's SPIs, "A_IN A_OUT" (child_agreed), kept by the rekeys
# The daemons' PIDs: GW_PID[GW] (tests/e2e/lib.sh).

# FLOWSEC_IKE_NO_INSTALL=1: no apt-get install (scripts/lib.sh's apt_install).
FLOWSEC_NO_INSTALL="${FLOWSEC_NO_INSTALL:-${FLOWSEC_IKE_NO_INSTALL:-0}}"

# ------------------------------------------------------------ the packages
install_capture_tools() {  # install_capture_tools: tshark and tcpdump where missing
    if ! command -v tshark >/dev/null 2>&1 || ! command -v tcpdump >/dev/null 2>&1; then
        apt_install tshark tcpdump || true
    fi
}

log_of() { echo "$W/$1-${IMPL[$1]}.log"; }

# ------------------------------------------------------------ configuration
# The one swanctl.conf generator (issue 30): `flowsec lab conf WORDS...`
# prints the file (its words: crates/lab/src/swanctl.rs). CONF_BIN: the
# flowsec binary that prints it (default FLOWSEC_BIN; ike.sh's stand-in
# mode sets it to the real binary).
lab_conf() { "${CONF_BIN:-$FLOWSEC_BIN}" lab conf "$@"; }

# One gateway's swanctl.conf: the text both implementations read. From the
# script: per gateway LOCAL_ADDR, REMOTE_ADDR, LOCAL_ID, REMOTE_ID, LOCAL_TS
# and REMOTE_TS; IKE_PROPOSAL, ESP_PROPOSAL, DPD_DELAY, PSK; GWA_ROLE,
# gwA's role in the header comment; and lab conf words (split on blanks):
# CONN_ARGS, more keys for the connection; CHILD_ARGS, for the Child SA;
# ${EXTRA_CONN[GW]}, more connections (ike.sh's check j), when the script
# declares that associative array; and the array AUTH_ARGS_GW (words with
# blanks: a DN), both ends' sections instead of a PSK with the ids
# (ike_cert.sh), when the script declares it.
gen_swanctl_conf() {  # gen_swanctl_conf GW
    local gw="$1" role=responder extra="" auth=(--auth psk --local-id "${LOCAL_ID[$1]}" --remote-id "${REMOTE_ID[$1]}")
    [ "$gw" = gwA ] && role="${GWA_ROLE:-initiator}"
    if declare -p "AUTH_ARGS_$gw" >/dev/null 2>&1; then
        local -n auth_of="AUTH_ARGS_$gw"
        auth=("${auth_of[@]}")
    fi
    if declare -p EXTRA_CONN >/dev/null 2>&1; then extra="${EXTRA_CONN[$gw]:-}"; fi
    # shellcheck disable=SC2086  # word lists
    lab_conf --comment "flowsec $IKE_TAG: $gw (${IMPL[$gw]}), $role" \
        conn "$CONN" --version 2 --local-addrs "${LOCAL_ADDR[$gw]}" --remote-addrs "${REMOTE_ADDR[$gw]}" \
        --proposals "$IKE_PROPOSAL" --dpd-delay "$DPD_DELAY" ${CONN_ARGS:-} "${auth[@]}" \
        child "$CHILD" --local-ts "${LOCAL_TS[$gw]}" --remote-ts "${REMOTE_TS[$gw]}" \
        --esp-proposals "$ESP_PROPOSAL" --mode tunnel --start-action none --dpd-action clear \
        --rekey-time 1h ${CHILD_ARGS:-} $extra \
        secret "ike-$CONN" --id "${REMOTE_ID[$gw]}" --secret "$PSK"
}

# The swanctl.conf of GW: $W/GW/swanctl.conf when that directory exists
# (the swanctl layout with x509/ and the other credential directories next
# to it, ike_cert.sh), else $W/GW-swanctl.conf.
conf_of() {  # conf_of GW
    if [ -d "$W/$1" ]; then echo "$W/$1/swanctl.conf"; else echo "$W/$1-swanctl.conf"; fi
}

# One charon's strongswan.conf. The plugins: kernel-libipsec before
# kernel-netlink (libipsec's IPsec interface must be the one registered;
# kernel-netlink still does routes and addresses); openssl for ECP groups,
# 3DES and AES-GCM's fast path, gmp for MODP, curve25519 for x25519,
# chapoly for ChaCha20-Poly1305 (IKE and libipsec's ESP), kdf for the
# IKE key derivation (prf+; without it: "KDF_PRF with PRF_HMAC_SHA2_256 not
# supported", 5.9.8 moved prf+ into that plugin). FLOWSEC_IKE_CHARON_DEBUG
# ("ike 4, enc 2") sets charon's log levels per subsystem;
# CHARON_PLUGINS_EXTRA (" x509 pem …") loads more plugins.
gen_strongswan_conf() {  # gen_strongswan_conf GW [VICI_SOCKET]
    cat <<EOF
# flowsec $IKE_TAG: $1
charon {
    load = random nonce aes sha1 sha2 md5 hmac xcbc cmac gcm chapoly openssl gmp curve25519 kdf kernel-libipsec kernel-netlink socket-default vici${CHARON_PLUGINS_EXTRA:-}
    install_routes = yes
    # No ids for PSK lookups beyond the file's; no vendor ID.
    # Retransmissions: 1 s, then 1.4 s, then give up after another 1.96 s
    # (the defaults take 165 s to declare a peer dead).
    retransmit_tries = $RETRANSMIT_TRIES
    retransmit_timeout = $RETRANSMIT_TIMEOUT
    retransmit_base = $RETRANSMIT_BASE${CHARON_EXTRA:-}
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
# via_swanctl GW: whether GW is loaded, listed and driven with Debian's
# swanctl over vici: a charon, or a flowsec started with `--vici` and no
# -c when FLOWSEC_IKE_VICI=1 (flowsec in charon's place, the user's
# swanctl unchanged). IKE_LIST_VIA_CTL=1: such a flowsec is still listed
# with `flowsec ctl sas --json` (sas below): a swanctl process costs ~54 ms
# of CPU against ~11 ms for flowsec ctl (2-vCPU Xeon VM), and polled at
# both ends five times a second during the 40 Mbit/s rekey stream that
# cost 6 and 70 datagrams of charon's rekeys (0 with ctl).
via_swanctl() { [ "${IMPL[$1]}" = strongswan ] || [ "${FLOWSEC_IKE_VICI:-0}" = 1 ]; }
sw() {  # sw GW swanctl-args...: swanctl against GW's charon
    local gw="$1"; shift
    # shellcheck disable=SC2046  # chroot ROOT, or nothing
    ns_exec "$gw" timeout 30 $(in_root) swanctl "$@" --uri "$(uri "$gw")"
}
# in_root: "chroot STRONGSWAN_ROOT", or nothing for the machine's own
# strongSwan.
in_root() {
    [ -z "${STRONGSWAN_ROOT:-}" ] || echo chroot "$STRONGSWAN_ROOT"
}
# mount_root: W, /dev (libipsec's TUN device) and /proc mounted into
# STRONGSWAN_ROOT, at the same paths; e2e_cleanup unmounts them.
mount_root() {
    [ -n "${STRONGSWAN_ROOT:-}" ] || return 0
    # The empty mount points earlier runs left (a mounted one is not empty).
    rmdir "$STRONGSWAN_ROOT$(dirname "$W")"/*e2e* 2>/dev/null || true
    mkdir -p "$STRONGSWAN_ROOT$W"
    e2e_mount --bind "$W" "$STRONGSWAN_ROOT$W" || return 1
    mountpoint -q "$STRONGSWAN_ROOT/dev" || e2e_mount --bind /dev "$STRONGSWAN_ROOT/dev" || return 1
    mountpoint -q "$STRONGSWAN_ROOT/proc" || e2e_mount -t proc proc "$STRONGSWAN_ROOT/proc"
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

start_daemon() {  # start_daemon GW: GW's daemon up, its swanctl.conf loaded; GW_PID[GW]
    local gw="$1" log
    log=$(log_of "$gw")
    if [ "${IMPL[$gw]}" = strongswan ]; then
        rm -f "$W/$gw.vici"
        # shellcheck disable=SC2046  # chroot ROOT, or nothing
        start_bg "$gw" "$log" $(in_root) env STRONGSWAN_CONF="$W/$gw-strongswan.conf" /usr/sbin/charon-systemd
        GW_PID[$gw]=$E2E_LAST_PID
        local i
        for ((i = 0; i < UP_TIMEOUT * 10; i++)); do
            [ -S "$W/$gw.vici" ] && break
            pid_alive "${GW_PID[$gw]}" || break
            sleep 0.1
        done
        [ -S "$W/$gw.vici" ] || { echo "    $gw: no vici socket after ${UP_TIMEOUT}s"; show_log "$log"; return 1; }
        sw "$gw" --load-all --noprompt --file "$(conf_of "$gw")" >"$W/$gw-load.log" 2>&1 ||
            { show_log "$W/$gw-load.log"; show_log "$log"; return 1; }
        if [ "${IKE_SHOW_LOAD:-0}" = 1 ]; then
            sed 's/^/    /' "$W/$gw-load.log" | grep -v 'opening directory' | head -4
        fi
    else
        local args=(up -c "$(conf_of "$gw")" --tun "$TUN" --socket "$W/$gw.sock")
        if via_swanctl "$gw"; then
            rm -f "$W/$gw.vici"
            args=(up --vici "$(uri "$gw")" --tun "$TUN" --socket "$W/$gw.sock")
        fi
        [ -n "${FLOWSEC_IKE_WORKERS:-}" ] && args+=(--workers "$FLOWSEC_IKE_WORKERS")
        # More options for GW: ${UP_ARGS[GW]} (words), when the sourcing
        # script declares that associative array (ike_tcp.sh's --tcp-listen).
        if declare -p UP_ARGS >/dev/null 2>&1; then
            # shellcheck disable=SC2206
            args+=(${UP_ARGS[$gw]:-})
        fi
        # The same retransmission timers as the charons (for the DPD
        # check), where this flowsec has the options.
        if "$FLOWSEC_BIN" up --help 2>/dev/null | grep -q -- '--retransmit-timeout'; then
            args+=(--retransmit-timeout "$RETRANSMIT_TIMEOUT" --retransmit-base "$RETRANSMIT_BASE"
                --retransmit-tries "$RETRANSMIT_TRIES")
        fi
        daemon_up "$gw" "$log" env FLOWSEC_SOCKET="$W/$gw.sock" "$FLOWSEC_BIN" "${args[@]}" || return 1
        if via_swanctl "$gw"; then
            sw "$gw" --load-all --noprompt --file "$(conf_of "$gw")" >"$W/$gw-load.log" 2>&1 ||
                { show_log "$W/$gw-load.log"; show_log "$log"; return 1; }
            sed 's/^/    /' "$W/$gw-load.log" | grep -v 'opening directory' | head -4
        fi
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
# sas GW [EXPR]: GW's IKE SAs, from swanctl --list-sas or `flowsec ctl sas
# --json`, in one form (tools.py sas: flowsec's names): the JSON, or the
# value of the Python expression EXPR over them, with `ike` GW's one
# ESTABLISHED IKE SA of $CONN (or None), `child` its one INSTALLED Child SA
# $CHILD (or None), `ikes` all the ESTABLISHED ones of $CONN, `sas` all,
# `gw` GW. Status 1 when the daemon does not answer, or EXPR raises or is
# False or None. sas GW --show: a line an SA.
sas() {
    local gw="$1" raw
    shift
    local form=flowsec
    if [ "${IMPL[$gw]}" = strongswan ] || { via_swanctl "$gw" && [ "${IKE_LIST_VIA_CTL:-0}" != 1 ]; }; then
        form=strongswan
        raw=$(sw "$gw" --list-sas --raw 2>&1) || { echo "$raw" >"$W/$gw-sas.err"; return 1; }
    else
        raw=$(fctl "$gw" sas --json 2>&1) || { echo "$raw" >"$W/$gw-sas.err"; return 1; }
    fi
    python3 "$E2E_TOOLS" sas "$form" "$@" --conn "$CONN" --child "$CHILD" --gw "$gw" <<<"$raw" 2>"$W/$gw-sas.err"
}
child_spis() { sas "$1" '"%s %s" % (child["spi_in"], child["spi_out"])'; }   # child_spis GW: "IN OUT"
ike_spis() { sas "$1" '"%s %s" % (ike["initiator_spi"], ike["responder_spi"])'; }   # ike_spis GW: "SPI_I SPI_R"
show_sas() {  # show_sas: both gateways' SAs, indented
    local gw
    for gw in gwA gwB; do
        sas "$gw" --show | sed "s/^/    $gw: /" || { echo "    $gw: no answer"; show_log "$W/$gw-sas.err" 5; }
    done
}

# ------------------------------------------------------------ the exchanges
on_gw() {  # on_gw GW NAME swanctl-args... -- ctl-args...: sw or fctl, as GW runs, to $W/GW-NAME.log
    local gw="$1" log="$W/$1-$2.log" sw_args=()
    shift 2
    while [ "$1" != -- ]; do sw_args+=("$1"); shift; done
    shift
    if via_swanctl "$gw"; then
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
child_rekeyed() {  # child_rekeyed GW: GW rekeys the Child SA; a new one agreed at both ends, none of CUR_CHILD's SPIs; CUR_CHILD
    local old="$CUR_CHILD" t=$SECONDS new
    rekey_child "$1" || return 1
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

# ---------------------------------------------------- the checks they share
sa_up() {  # sa_up: gwA initiates; the SAs up and agreed at both ends (up_agreed), shown as a user sees them
    up_agreed || return 1
    local gw
    for gw in gwA gwB; do
        [ "${IMPL[$gw]}" = strongswan ] || continue
        grep -o 'selected proposal: .*' "$(log_of "$gw")" | sort -u | sed "s/^/    $gw /"
        break
    done
    # `flowsec ctl sas` as `swanctl --list-sas` would say it: the
    # responder's (behind a NAT, it sees the NAT's mapping), else gwA's.
    for gw in gwB gwA; do
        [ "${IMPL[$gw]}" = flowsec ] || continue
        show_ctl_sas "$gw" 14
        break
    done
}

# child_rekey GW: GW rekeys the Child SA: new SPIs agreed at both ends, the
# old ones gone (child_rekeyed), and the new SA carries the traffic.
child_rekey() {
    child_rekeyed "$1" && new_child_carries
}
new_child_carries() {  # new_child_carries: traffic both ways over INNER_FAMILIES, packets in on gwB's new inbound SA
    local pkts
    # shellcheck disable=SC2086
    ping_both $INNER_FAMILIES || return 1
    pkts=$(sas gwB 'child["packets_in"]') || true
    echo "    gwB's new Child SA: ${pkts:-?} packets in"
    [ "${pkts:-0}" -gt 0 ] 2>/dev/null || { echo "    no packets on the new SA"; return 1; }
}

ike_rekey() {  # ike_rekey GW: GW rekeys the IKE SA (ike_rekeyed: new SPIs, the Child SA kept); traffic both ways
    ike_rekeyed "$1" || return 1
    # shellcheck disable=SC2086
    ping_both $INNER_FAMILIES
}

# ------------------------------------------------------------ the capture
# Link-local noise in a capture: ARP, IPv6 neighbour discovery and
# multicast listener reports (a tshark display filter).
# shellcheck disable=SC2034  # used by the sourcing scripts
NOISE_FILTER="arp or (icmpv6 and (icmpv6.type >= 133 and icmpv6.type <= 137 or ipv6.src == fe80::/10 or ipv6.src == :: or ipv6.dst == ff02::/16))"

frames() {  # frames PCAP [FILTER]: how many frames of PCAP (match the tshark display FILTER)
    tshark -n -r "$1" ${2:+-Y "$2"} 2>/dev/null | wc -l
}

# capture_only PCAP NAME WIRE A B OTHER PLAIN: PCAP holds IKE and NAME
# (the tshark display filter WIRE) from A and from B, and not one frame of
# OTHER (what may not be there) or PLAIN (plaintext); says how many of
# each, and shows the first offending frames.
capture_only() {
    local pcap="$1" name="$2" wire="$3" a="$4" b="$5" other="$6" plain="$7" ip=ip total ike ab ba n_other n_plain
    [ -s "$pcap" ] || { echo "    no capture"; show_log "$pcap.log"; return 1; }
    case "$a" in *:*) ip=ipv6 ;; esac
    total=$(frames "$pcap")
    ike=$(frames "$pcap" isakmp)
    ab=$(frames "$pcap" "($wire) and $ip.src == $a")
    ba=$(frames "$pcap" "($wire) and $ip.src == $b")
    n_other=$(frames "$pcap" "$other")
    n_plain=$(frames "$pcap" "$plain")
    echo "    $total frames: $ike IKE, $name $ab from $a and $ba from $b, $n_other other, $n_plain plaintext"
    if [ "$n_other" -ne 0 ] || [ "$n_plain" -ne 0 ]; then
        tshark -n -r "$pcap" -Y "($other) or ($plain)" 2>/dev/null | head -5 | sed 's/^/    /'
        return 1
    fi
    [ "$ab" -gt 0 ] && [ "$ba" -gt 0 ] && [ "$ike" -gt 0 ]
}

stop_without_sas() {  # stop_without_sas: when no Child SA is agreed at both ends, the daemons' logs and e2e_finish
    child_agreed >/dev/null 2>&1 && return 0
    local gw
    for gw in gwA gwB; do show_log "$(log_of "$gw")" 40; done
    echo "$IKE_TAG: no SAs; not running the other checks"
    e2e_finish
}

ike_finish() {  # ike_finish: the time taken, the daemons' logs when a check failed; e2e_finish
    echo "$IKE_TAG: $((SECONDS - T0)) s"
    if [ "$E2E_FAILED" -ne 0 ]; then
        local gw
        for gw in gwA gwB; do show_log "$(log_of "$gw")" 40; done
    fi
    e2e_finish
}
