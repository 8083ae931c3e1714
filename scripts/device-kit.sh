#!/usr/bin/env bash
# The tools scripts/bench-tunnels.sh needs, for a machine that has none and
# no network (the device machine a session may be lent: Ubuntu 24.04, 16
# cores, kernel 6.18; see docs/BENCHMARKS.md "On 16 cores").
#
#   scripts/device-kit.sh prepare DIR   here (Debian 12, root, apt reachable):
#       Debian's iproute2, nftables, ethtool, iperf3, sockperf and
#       wireguard-tools with their libraries, extracted under DIR/root; the
#       stripped release binary of flowsec (DIR/flowsec) and wireguard-go
#       (DIR/wireguard-go). About 35 MB: DIR must be a folder git ignores,
#       named in the device call's `carry`.
#   scripts/device-kit.sh install DIR   there, as root: the binaries into
#       /usr/sbin and /usr/bin, the libraries into /usr/local/lib where the
#       system has none of that name; then checks each tool and that a
#       network namespace with an nftables table can be made. Status 1 if
#       anything is missing.
#
# Then, there:
#   FLOWSEC_BIN=DIR/flowsec WIREGUARD_GO=DIR/wireguard-go scripts/bench-tunnels.sh --no-install ...
set -euo pipefail

PKGS=(iproute2 libbpf1 libelf1 libmnl0 libcap2 libdb5.3 libselinux1 libtirpc3 libxtables12
      libbsd0 libmd0 nftables libnftables1 libnftnl11 libjansson4 libedit2 libgmp10 ethtool
      iperf3 libiperf0 libsctp1 libssl3 sockperf wireguard-tools libpcre2-8-0 libgssapi-krb5-2
      libkrb5-3 libk5crypto3 libkrb5support0 libcom-err2 libkeyutils1 libtinfo6 libxxhash0)

prepare() {
    local dir="$1" root f
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    mkdir -p "$dir/debs" "$dir/root"
    (cd "$dir/debs" && apt-get download "${PKGS[@]}")
    for f in "$dir"/debs/*.deb; do dpkg -x "$f" "$dir/root"; done
    rm -rf "$dir/debs" "$dir/root/usr/share/doc" "$dir/root/usr/share/man" "$dir/root/usr/share/locale"
    (cd "$root" && cargo build --release --locked -p flowsec)
    install -m 755 "${CARGO_TARGET_DIR:-$root/target}/release/flowsec" "$dir/flowsec"
    strip "$dir/flowsec"
    local wg="${WIREGUARD_GO:-$(command -v wireguard-go || command -v wireguard || echo "$HOME/go/bin/wireguard")}"
    [ -x "$wg" ] || { echo "device-kit: no wireguard-go binary (go install it first, or set WIREGUARD_GO)" >&2; exit 1; }
    install -m 755 "$wg" "$dir/wireguard-go"
    cp "$0" "$dir/device-kit.sh"
    du -sh "$dir"
}

install_kit() {
    local dir r d f n ok=1 c out
    dir="$(cd "$1" && pwd)"
    r="$dir/root"
    for d in lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu; do
        [ -d "$r/$d" ] || continue
        for f in "$r/$d"/*.so*; do
            n="$(basename "$f")"
            [ -e "/usr/lib/x86_64-linux-gnu/$n" ] || [ -e "/lib/x86_64-linux-gnu/$n" ] || cp -a "$f" /usr/local/lib/
        done
    done
    ldconfig
    install -m 755 "$r/bin/ip" "$r/usr/sbin/nft" "$r/sbin/ethtool" /usr/sbin/
    install -m 755 "$r/usr/bin/iperf3" "$r/usr/bin/sockperf" "$r/usr/bin/wg" /usr/bin/
    mkdir -p /etc/iproute2 /var/run/netns /var/run/wireguard
    cp -rn "$r/etc/iproute2/." /etc/iproute2/ 2>/dev/null || true
    for c in "ip -V" "nft -v" "ethtool --version" "iperf3 -v" "sockperf --version" "wg --version"; do
        if out="$($c 2>&1 | head -n 1)"; then echo "ok: $c: $out"; else echo "FAIL: $c: $out"; ok=0; fi
    done
    if ip netns add fskit && ip netns exec fskit nft list tables && ip netns del fskit; then
        echo "ok: a network namespace with nftables"
    else
        echo "FAIL: network namespace / nftables"; ok=0
    fi
    [ "$ok" = 1 ]
}

case "${1:-}" in
    prepare) prepare "${2:?prepare DIR}" ;;
    install) install_kit "${2:?install DIR}" ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
