#!/usr/bin/env bash
# End-to-end: a manual AES-GCM SA moved to a new SPI with the same key does
# not start its sequence numbers (and with them its GCM nonces, salt +
# sequence number, RFC 4106 §3.1) again at 1 after a restart (issue 29,
# item 5: the recorded numbers were named by SPI and destination).
#
#   hostA 10.1.0.2 -- gwA | 192.0.2.1 == ESP == 192.0.2.2 | gwB -- hostB 10.2.0.2
#
# Checks:
#   a. both gateways up with SPIs 0x1001 (gwA -> gwB) and 0x1002, AES-GCM,
#      each with its own --state-dir; pings through
#   b. both stopped; the setkey files changed to SPIs 0x1101 and 0x1102,
#      the keys as they were; both up again, pings through
#   c. tshark on the transit capture: under each key the new SPI's first
#      sequence number is above every number the old SPI used (and above
#      1), and no (key, sequence number) pair appears twice
#
#   tests/e2e/manual_nonce.sh              root; needs target/debug/flowsec
#   FLOWSEC=/path/to/flowsec tests/e2e/manual_nonce.sh
#   FLOWSEC_E2E_KEEP=1                     keep the work directory
#
# Without root or ip netns it prints "SKIP: ..." and exits 0; without
# tshark, check c is a SKIP line.
set -eu -o pipefail

E2E_PREFIX="${E2E_PREFIX:-nnc$$-}"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

e2e_require_root_netns

FLOWSEC="${FLOWSEC:-$E2E_ROOT/target/debug/flowsec}"
require_flowsec "$FLOWSEC" FLOWSEC
UP_TIMEOUT="${FLOWSEC_E2E_UP_TIMEOUT:-10}"
TUN=fsnnc0
e2e_outer v4

echo "e2e manual nonce: an AES-GCM SA moved to a new SPI, same key, restarted"
e2e_init
W="$E2E_WORK"
e2e_need_nft
e2e_topology_gateway

KEY_AB=0x000102030405060708090a0b0c0d0e0f10111213
KEY_BA=0x202122232425262728292a2b2c2d2e2f30313233

# setkey_files SPI_AB SPI_BA: both gateways' files, the keys always the same.
setkey_files() {
    local gw lnet rnet lgw rgw
    for gw in gwA gwB; do
        if [ "$gw" = gwA ]; then lnet=10.1.0.0/24 rnet=10.2.0.0/24 lgw=$GW_A rgw=$GW_B
        else lnet=10.2.0.0/24 rnet=10.1.0.0/24 lgw=$GW_B rgw=$GW_A; fi
        cat >"$W/$gw.setkey" <<EOF
add $GW_A $GW_B esp $1 -m tunnel -r 64 -E aes-gcm-16 $KEY_AB;
add $GW_B $GW_A esp $2 -m tunnel -r 64 -E aes-gcm-16 $KEY_BA;
spdadd $lnet $rnet any -P out ipsec esp/tunnel/$lgw-$rgw/require;
spdadd $rnet $lnet any -P in  ipsec esp/tunnel/$rgw-$lgw/require;
spdadd $rnet $lnet any -P fwd ipsec esp/tunnel/$rgw-$lgw/require;
EOF
    done
}

# both_up: each gateway's daemon, its sequence numbers under a state
# directory of its own (kept across restarts).
both_up() {
    local gw
    for gw in gwA gwB; do
        daemon_up "$gw" "$W/$gw.log" "$FLOWSEC" up --tun "$TUN" --setkey "$W/$gw.setkey" \
            --socket "$W/$gw.sock" --state-dir "$W/state-$gw" || return 1
    done
}
both_down() { daemon_down gwA && daemon_down gwB; }

start_capture gwA eth1 "$W/transit.pcap" esp || { echo "FAIL: no capture"; e2e_finish; }

setkey_files 0x1001 0x1002
check "a. up with SPIs 0x1001/0x1002 (AES-GCM), pings through" both_up
check "a. pings hostA <-> hostB" ping_both
check "a. both stop cleanly" both_down

setkey_files 0x1101 0x1102
check "b. up again with SPIs 0x1101/0x1102, the same keys" both_up
check "b. pings hostA <-> hostB" ping_both
check "b. both stop cleanly" both_down
sleep 0.5
stop_bg "$TCPDUMP_PID" 2

# Under each key: the old SPI's numbers, then the new SPI's, never again
# from 1 and never one twice.
numbers_go_on() {
    tshark -n -r "$W/transit.pcap" -Y esp -T fields -E separator=' ' -e esp.spi -e esp.sequence \
        >"$W/esp.txt" 2>"$W/tshark.err" || { show_log "$W/tshark.err"; return 1; }
    python3 - "$W/esp.txt" <<'EOF'
import sys
seen = {}
for line in open(sys.argv[1]):
    spi, seq = line.split()
    seen.setdefault(int(spi, 16), []).append(int(seq))
ok = True
for key, old, new in [("A->B", 0x1001, 0x1101), ("B->A", 0x1002, 0x1102)]:
    o, n = seen.get(old, []), seen.get(new, [])
    if not o or not n:
        print(f"    {key}: {len(o)} packets under {old:#x}, {len(n)} under {new:#x}")
        ok = False
        continue
    again = set(o) & set(n)
    print(f"    {key}: {old:#x} used {min(o)}..{max(o)} ({len(o)} packets), "
          f"{new:#x} started at {min(n)} ({len(n)} packets), numbers used twice: {len(again)}")
    ok &= min(n) > max(o) and min(n) > 1 and not again
sys.exit(0 if ok else 1)
EOF
}
check_needs tshark "c. under each key the new SPI goes on above the old SPI's numbers (no nonce twice)" numbers_go_on

e2e_finish
