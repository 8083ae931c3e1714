# shellcheck shell=bash
# What the scripts share: scripts/test.sh, demo.sh, bench-tunnels.sh and
# soak.sh source it, and so does tests/e2e/lib.sh (the e2e tests log,
# install and find strongSwan the same way). Source it from bash.
#
#   log MSG...                   "TAG: MSG" on stderr (TAG: $SCRIPT_TAG, default the script's name)
#   step MSG...                  "==> MSG": a stage of the run
#   say MSG...                   "    MSG": a result under the stage
#   show_log FILE [LINES]        the tail of a log, indented, on stderr
#   die MSG...                   log MSG, show the tails of the run's logs ($E2E_WORK/*.log), exit 1
#   apt_install PKG...           Debian packages (root; not with FLOWSEC_NO_INSTALL=1)
#   have_strongswan              strongSwan's charon with kernel-libipsec and swanctl are installed
#   install_strongswan           install them where missing; status 1 if still missing
#   wireguard_go                 print the wireguard-go binary ($WIREGUARD_GO, or found); status 1 if none
#   install_wireguard_go         go install it ($WIREGUARD_GO_VERSION)
#   release_flowsec              cargo build --release flowsec; FLOWSEC its path
#
# The namespace scripts (demo.sh, bench-tunnels.sh) measure with these, on
# tests/e2e/lib.sh's topology (source that too):
#
#   pings [WHAT]                 ping hostA <-> hostB (three tries), or die
#   tcp_run NAME [PID...]        $SECS seconds of TCP hostA -> hostB: says the rate;
#                                MBIT, TCP_BYTES, and TCP_CPU_S (the PIDs' CPU seconds, - without)

SCRIPT_TAG="${SCRIPT_TAG:-$(basename "$0" .sh)}"

log() { printf '%s: %s\n' "$SCRIPT_TAG" "$*" >&2; }
step() { printf '\n==> %s\n' "$*"; }
say() { printf '    %s\n' "$*"; }

show_log() {  # show_log FILE [LINES]: the last LINES (30) lines of FILE, indented, on stderr
    [ -f "$1" ] || return 0
    echo "---- $(basename "$1") (last ${2:-30} lines) ----" >&2
    tail -n "${2:-30}" "$1" | sed 's/^/    /' >&2
}

die() {  # die MSG...: log MSG, show the tails of this run's logs, exit 1
    log "$*"
    local f
    if [ -n "${E2E_WORK:-}" ]; then
        for f in "$E2E_WORK"/*.log; do show_log "$f" 10; done
    fi
    exit 1
}

# apt_install PKG...: Debian packages, non-interactively, without
# recommends; the package lists are fetched only if the install cannot go
# ahead without them (a fresh machine). apt-get's output goes to stderr.
# Status 1 when it fails, and without trying when not root, without
# apt-get, or with FLOWSEC_NO_INSTALL=1.
apt_install() {
    [ "${FLOWSEC_NO_INSTALL:-0}" != 1 ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1 ||
        return 1
    log "apt-get install $*"
    {
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" ||
            { DEBIAN_FRONTEND=noninteractive apt-get update -q &&
              DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"; }
    } >&2
}

# strongSwan as the tests and the lab run it: charon-systemd with the
# kernel-libipsec plugin (user-space ESP over a TUN device), driven by
# swanctl.
STRONGSWAN_PKGS=(charon-systemd strongswan-swanctl libcharon-extra-plugins
                 libcharon-extauth-plugins libstrongswan-standard-plugins
                 libstrongswan-extra-plugins strongswan-pki)
have_strongswan() {
    [ -x /usr/sbin/charon-systemd ] && command -v swanctl >/dev/null 2>&1 &&
        [ -e /usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so ] &&
        [ -e /usr/lib/ipsec/plugins/libstrongswan-openssl.so ]
}
# strongSwan 6.0.1 (RFC 9370, RFC 9242, RFC 8784) from Debian 13, which
# cannot be installed beside Debian 12's packages: a minimal trixie root
# made by debootstrap from the same Debian archive, kept between runs
# (FLOWSEC_STRONGSWAN6_ROOT; tests/e2e/ike_pq.sh chroots its charon).
STRONGSWAN6_ROOT="${FLOWSEC_STRONGSWAN6_ROOT:-/var/cache/flowsec/trixie}"
have_strongswan6() {
    [ -x "$STRONGSWAN6_ROOT/usr/sbin/charon-systemd" ] && [ -x "$STRONGSWAN6_ROOT/usr/sbin/swanctl" ] &&
        [ -e "$STRONGSWAN6_ROOT/usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so" ]
}
install_strongswan6() {
    have_strongswan6 && return 0
    [ "${FLOWSEC_NO_INSTALL:-0}" = 1 ] && return 1
    command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap || return 1
    if [ ! -x "$STRONGSWAN6_ROOT/usr/bin/apt-get" ]; then
        mkdir -p "$STRONGSWAN6_ROOT"
        debootstrap --variant=minbase trixie "$STRONGSWAN6_ROOT" http://deb.debian.org/debian >/dev/null || return 1
    fi
    chroot "$STRONGSWAN6_ROOT" apt-get update -q >/dev/null &&
        chroot "$STRONGSWAN6_ROOT" env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -q --no-install-recommends "${STRONGSWAN_PKGS[@]}" >/dev/null || return 1
    have_strongswan6
}
install_strongswan() {
    have_strongswan && return 0
    apt_install "${STRONGSWAN_PKGS[@]}" || true
    # The tests and the lab run their own charons in namespaces; a
    # packaged service started by the install is not ours to keep running.
    if command -v systemctl >/dev/null 2>&1; then
        systemctl disable --now strongswan.service >/dev/null 2>&1 || true
    fi
    have_strongswan
}

# wireguard-go, the lab's and bench-tunnels.sh's other user-space tunnel.
# The v0.0.20250522 tag is refused by the Go module proxy here; its commit
# (f333402bd9cb) is served as this pseudo-version.
WIREGUARD_GO_VERSION="${WIREGUARD_GO_VERSION:-v0.0.0-20250521234502-f333402bd9cb}"
wireguard_go() {
    local c
    if [ -n "${WIREGUARD_GO:-}" ]; then
        set -- "$WIREGUARD_GO"      # the one asked for, or none
    else
        set -- "$(command -v wireguard-go || true)" "$(command -v wireguard || true)" \
            "${GOPATH:-$HOME/go}/bin/wireguard" "$HOME/go/bin/wireguard"
    fi
    for c in "$@"; do
        if [ -n "$c" ] && [ -x "$c" ] && "$c" --version 2>/dev/null | grep -q '^wireguard-go'; then
            echo "$c"
            return 0
        fi
    done
    return 1
}
install_wireguard_go() {
    [ "${FLOWSEC_NO_INSTALL:-0}" != 1 ] && command -v go >/dev/null 2>&1 || return 1
    log "go install golang.zx2c4.com/wireguard@$WIREGUARD_GO_VERSION"
    (cd /tmp && go install "golang.zx2c4.com/wireguard@$WIREGUARD_GO_VERSION") >&2
}

release_flowsec() {  # release_flowsec: build flowsec's release binary (from the repository root); FLOWSEC its path
    step "build: cargo build --release --locked -p flowsec"
    cargo build --release --locked -p flowsec
    FLOWSEC="${CARGO_TARGET_DIR:-$PWD/target}/release/flowsec"
    case "$FLOWSEC" in /*) ;; *) FLOWSEC="$PWD/$FLOWSEC" ;; esac
}

# ------------------------------------------------- namespace measurements
pings() {  # pings [WHAT]: ping_both, three tries (wireguard-go's first packets wait for its handshake)
    local i out
    for i in 1 2 3; do
        if out="$(ping_both 2>&1)"; then
            printf '%s\n' "$out"
            return 0
        fi
        sleep 0.5
    done
    printf '%s\n' "$out" >&2
    die "ping hostA <-> hostB failed${1:+ ($1)}"
}

cpu_ticks() {  # cpu_ticks PID...: utime+stime of the PIDs (all threads), in clock ticks
    local pid total=0 stat f
    for pid in "$@"; do
        stat="$(cat "/proc/$pid/stat")" || return 1
        # after "pid (comm) ": field 3 onwards, so utime/stime are f[11], f[12]
        read -r -a f <<<"${stat##*) }"
        total=$((total + f[11] + f[12]))
    done
    echo "$total"
}

tcp_run() {  # tcp_run NAME [PID...]: $SECS s of TCP hostA -> hostB (tcp_stream), the PIDs' CPU time
    local name="$1" c0="" c1 out
    shift
    TCP_PORT=$((${TCP_PORT:-5100} + 1))
    TCP_CPU_S=-
    if [ $# -gt 0 ]; then c0="$(cpu_ticks "$@")" || die "$name: a tunnel process is gone"; fi
    tcp_stream "$name" hostA hostB 10.2.0.2 "$TCP_PORT" --seconds "$SECS" || die "$name: TCP transfer failed"
    if [ $# -gt 0 ]; then
        c1="$(cpu_ticks "$@")" || die "$name: a tunnel process died during the measurement"
        TCP_CPU_S="$(python3 -c "print(($c1 - $c0) / $(getconf CLK_TCK))")"
    fi
    out="$(python3 - "$E2E_WORK/send-$name.json" "$E2E_WORK/recv-$name.json" <<'EOF'
import json, sys
s, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
if s["bytes"] != r["bytes"]:
    print("the receiver got %d of %d bytes" % (r["bytes"], s["bytes"]))
    sys.exit(1)
print(s["mbit_s"], s["bytes"], s["seconds"])
EOF
)" || die "$name: TCP transfer incomplete: $out"
    read -r MBIT TCP_BYTES out <<<"$out"
    say "TCP hostA -> hostB ($name): $((TCP_BYTES / 1000000)) MB in $out s = $MBIT Mbit/s$(
        [ "$TCP_CPU_S" = - ] || echo ", endpoints' CPU $TCP_CPU_S s")"
}
