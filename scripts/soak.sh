#!/usr/bin/env bash
# Soak (a benchmark, not a test: CI does not run it). Two flowsec gateways
# keyed by IKEv2 (PSK, AES-GCM-16 with ECP-256, PFS on every CHILD_SA
# rekey), in network namespaces:
#
#   hostA 10.1.0.2 -- gwA | 192.0.2.1 == ESP == 192.0.2.2 | gwB -- hostB 10.2.0.2
#
# CHILD_SAs are rekeyed every 10 s and the IKE SA every 60 s, while for N
# minutes:
#   - a paced UDP stream hostA -> hostB (flowsec perf CBR, 1000-byte
#     datagrams) runs at 80% of the loss-free rate measured first through
#     the same tunnel (flowsec perf MAXRATE);
#   - a bulk TCP stream hostB -> hostA (iperf3, paced at 10% of that rate
#     so that the two together stay under what the tunnel carries: an
#     unpaced TCP stream fills the TUN queue and any datagram behind it is
#     lost, rekey or not);
#   - hostile packets every 30 s: junk and forged ESP at both gateways'
#     current SPIs (tests/e2e/tools.py hostile), and junk IKE.
# Every 10 s it samples each daemon's RSS and open file descriptors.
#
# It reports the datagrams lost (in all, and in the seconds around each
# CHILD_SA rekey), the rekeys done, RSS and descriptors over time, and
# fails (exit 1) on any lost datagram, on RSS or descriptor growth of more
# than 10% after the first minute, or if a daemon dies.
#
#   scripts/soak.sh [--minutes N] [--out DIR]     root; default 60 minutes
#   FLOWSEC_BIN=...                               default: target/release/flowsec (built)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

MINUTES=60
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --minutes) MINUTES="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) echo "soak: unknown argument $1 (--minutes N, --out DIR)" >&2; exit 2 ;;
    esac
done
[ "$MINUTES" -ge 2 ] 2>/dev/null || { echo "soak: --minutes: at least 2" >&2; exit 2; }

# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh
e2e_require_root_netns
e2e_need_nft
command -v iperf3 >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends iperf3 >&2

if [ -z "${FLOWSEC_BIN:-}" ]; then
    cargo build --release --locked -p flowsec >&2
    FLOWSEC_BIN=target/release/flowsec
fi
FLOWSEC_BIN=$(realpath "$FLOWSEC_BIN")
e2e_init
W="$E2E_WORK"
OUT="${OUT:-$W/soak}"
mkdir -p "$OUT"
log() { printf 'soak: %s\n' "$*" >&2; }

e2e_topology_gateway
for gw in gwA gwB; do
    if [ $gw = gwA ]; then
        local_addr=192.0.2.1 remote_addr=192.0.2.2 lts=10.1.0.0/24 rts=10.2.0.0/24 start=start
    else
        local_addr=192.0.2.2 remote_addr=192.0.2.1 lts=10.2.0.0/24 rts=10.1.0.0/24 start=none
    fi
    cat >"$W/$gw.conf" <<EOF
# flowsec soak: $gw
connections {
    soak {
        local_addrs = $local_addr
        remote_addrs = $remote_addr
        proposals = aes128gcm16-prfsha256-ecp256
        rekey_time = 60s
        local { auth = psk
                id = $local_addr }
        remote { auth = psk
                 id = $remote_addr }
        children {
            net {
                local_ts = $lts
                remote_ts = $rts
                esp_proposals = aes128gcm16-ecp256
                rekey_time = 10s
                start_action = $start
            }
        }
    }
}
secrets {
    ike-soak { id = $remote_addr
               secret = "soak test pre-shared key, long enough" }
}
EOF
    # Only gwA initiates rekeys (gwB's rekey_time is longer): one rekey
    # every 10 s rather than two racing ones.
    [ $gw = gwB ] && sed -i 's/rekey_time = 10s/rekey_time = 1h/; s/rekey_time = 60s/rekey_time = 4h/' "$W/$gw.conf"
done

declare -A PID
for gw in gwB gwA; do
    start_bg "$gw" "$W/$gw.log" "$FLOWSEC_BIN" up -c "$W/$gw.conf" --tun fsoak0 --socket "$W/$gw.sock"
    PID[$gw]=$E2E_LAST_PID
    wait_for_log "$W/$gw.log" 'flowsec: up' 10 "${PID[$gw]}" || { show_log "$W/$gw.log"; exit 1; }
done
fctl() { timeout 10 "$FLOWSEC_BIN" ctl --socket "$W/$1.sock" "${@:2}"; }
child_spis() {  # child_spis GW: "in out" of the installed CHILD_SA
    fctl "$1" sas --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
for ike in d["ike_sas"]:
    for c in ike["child_sas"]:
        if c.get("state") == "INSTALLED":
            print(c["spi_in"], c["spi_out"]); sys.exit(0)
sys.exit(1)'
}
for _ in $(seq 100); do child_spis gwA >/dev/null 2>&1 && break; sleep 0.1; done
child_spis gwA >/dev/null || { log "no CHILD_SA came up"; show_log "$W/gwA.log"; exit 1; }
log "tunnel up: CHILD_SA $(child_spis gwA)"

start_bg hostB "$W/perf-server.log" "$FLOWSEC_BIN" perf server
start_bg hostA "$W/iperf-server.log" iperf3 -s
sleep 0.5
log "measuring the loss-free rate (flowsec perf MAXRATE, 1000-byte datagrams)"
ns_exec hostA "$FLOWSEC_BIN" perf client -H 10.2.0.2 -t MAXRATE -m 1000 -l 2 --step 10M --max-rate 4G --json \
    >"$OUT/maxrate.json"
MAXRATE=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(int(r["max_rate_bps"]))' "$OUT/maxrate.json")
RATE=$((MAXRATE * 8 / 10))
TCP_RATE=$((MAXRATE / 10))
log "loss-free rate $((MAXRATE / 1000000)) Mbit/s: UDP at $((RATE / 1000000)), TCP (iperf3) at $((TCP_RATE / 1000000)) Mbit/s for $MINUTES min"

SECS=$((MINUTES * 60))
T0=$(date +%s)
start_bg hostA "$W/cbr.log" "$FLOWSEC_BIN" perf client -H 10.2.0.2 -t CBR --rate "$RATE" -m 1000 -l "$SECS" --json
CBR_PID=$E2E_LAST_PID
start_bg hostB "$W/iperf.log" iperf3 -c 10.1.0.2 -t "$SECS" -b "$TCP_RATE" -J
IPERF_PID=$E2E_LAST_PID

echo "t_s,daemon,rss_kb,fds" >"$OUT/samples.csv"
echo "t_s,spi_in,spi_out" >"$OUT/children.csv"
: >"$OUT/ike.csv"
died=""
next_sample=0 next_hostile=30
while pid_alive "$CBR_PID"; do
    t=$(( $(date +%s) - T0 ))
    for gw in gwA gwB; do
        if ! pid_alive "${PID[$gw]}"; then died="$died $gw"; fi
    done
    [ -n "$died" ] && break
    if spis=$(child_spis gwA 2>/dev/null); then echo "$t,${spis// /,}" >>"$OUT/children.csv"; fi
    fctl gwA sas --json 2>/dev/null | python3 -c '
import json, sys
for s in json.load(sys.stdin)["ike_sas"]: print(sys.argv[1], s["initiator_spi"], s["responder_spi"])' "$t" >>"$OUT/ike.csv" 2>/dev/null || true
    if [ "$t" -ge "$next_sample" ]; then
        for gw in gwA gwB; do
            rss=$(awk '/^VmRSS:/ {print $2}' "/proc/${PID[$gw]}/status")
            fds=$(ls "/proc/${PID[$gw]}/fd" | wc -l)
            echo "$t,$gw,$rss,$fds" >>"$OUT/samples.csv"
        done
        next_sample=$((next_sample + 10))
    fi
    if [ "$t" -ge "$next_hostile" ]; then
        for gw in gwA gwB; do
            other=$([ $gw = gwA ] && echo gwB || echo gwA)
            addr=$([ $gw = gwA ] && echo 192.0.2.1 || echo 192.0.2.2)
            spi=$(child_spis "$gw" 2>/dev/null | awk '{print $1}') || spi=""
            [ -n "$spi" ] && ns_exec "$other" python3 "$E2E_TOOLS" hostile "$addr" --spi "$spi" --count 20 >/dev/null 2>&1 || true
            # Junk at the IKE port.
            ns_exec "$other" python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for n in (0, 3, 28, 200, 1500):
    s.sendto(os.urandom(n), (sys.argv[1], 500))' "$addr" || true
        done
        next_hostile=$((next_hostile + 30))
    fi
    sleep 1
done
wait "$CBR_PID" 2>/dev/null || true
stop_bg "$IPERF_PID" 5
for gw in gwA gwB; do fctl "$gw" stats >"$OUT/$gw-stats.txt" 2>&1 || true; done
cp "$W/cbr.log" "$OUT/cbr.json"
cp "$W/iperf.log" "$OUT/iperf3.json" 2>/dev/null || true
for gw in gwA gwB; do
    if pid_alive "${PID[$gw]}"; then stop_bg "${PID[$gw]}" 10; else died="$died $gw"; fi
    cp "$W/$gw.log" "$OUT/$gw.log"
done

python3 - "$OUT" "$MINUTES" "$MAXRATE" "$RATE" "$TCP_RATE" "${died:-}" <<'PY'
import csv, json, sys
out, minutes, maxrate, rate, tcp_rate, died = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6].split()
fail = []
try:
    cbr = json.load(open(f"{out}/cbr.json"))
except Exception as e:
    cbr = {"lost": None, "packets_sent": 0, "packets_received": 0, "per_second": []}
    fail.append(f"no CBR result: {e}")
per = cbr.get("per_second", [])
# Rekeys: the seconds at which gwA's CHILD_SA changed.
rekeys, last = [], None
for row in csv.DictReader(open(f"{out}/children.csv")):
    spis = (row["spi_in"], row["spi_out"])
    if last is not None and spis != last:
        rekeys.append(int(row["t_s"]))
    last = spis
ike_rekeys, last = 0, None
for line in open(f"{out}/ike.csv"):
    parts = line.split()
    if len(parts) == 3:
        if last is not None and parts[1:] != last:
            ike_rekeys += 1
        last = parts[1:]
lost_at = lambda t: sum(p["lost"] for p in per[max(0, t - 2):t + 2])
per_rekey = [lost_at(t) for t in rekeys]
lost = cbr.get("lost")
if lost is None or lost > 0:
    fail.append(f"{lost} datagrams lost")
samples = {}
for row in csv.DictReader(open(f"{out}/samples.csv")):
    samples.setdefault(row["daemon"], []).append((int(row["t_s"]), int(row["rss_kb"]), int(row["fds"])))
growth = {}
for d, rows in samples.items():
    base = [r for r in rows if r[0] >= 60][:1] or rows[:1]
    if not base:
        continue
    b = base[0]
    later = [r for r in rows if r[0] >= b[0]]
    rss_max, fd_max = max(r[1] for r in later), max(r[2] for r in later)
    growth[d] = (b[1], rss_max, b[2], fd_max)
    if rss_max > b[1] * 1.10:
        fail.append(f"{d}: RSS {b[1]} -> {rss_max} kB (> 10%)")
    if fd_max > b[2] * 1.10:
        fail.append(f"{d}: open descriptors {b[2]} -> {fd_max} (> 10%)")
for d in died:
    fail.append(f"{d} died")
if len(rekeys) < max(1, minutes * 60 // 10 // 2):
    fail.append(f"only {len(rekeys)} CHILD_SA rekeys seen")
try:
    ip = json.load(open(f"{out}/iperf3.json"))
    tcp = ip["end"]["sum_received"]["bits_per_second"] / 1e6
except Exception:
    tcp = float("nan")
md = [
    f"| soak, {minutes} min | value |",
    "|---|---|",
    f"| loss-free rate (flowsec perf MAXRATE, 1000 B) | {maxrate/1e6:.0f} Mbit/s |",
    f"| UDP CBR (80%) sent / received / lost | {cbr.get('packets_sent')} / {cbr.get('packets_received')} / {lost} |",
    f"| TCP hostB -> hostA (iperf3, paced at 10%) | {tcp:.1f} Mbit/s |",
    f"| CHILD_SA rekeys (PFS, ECP-256) / IKE SA rekeys | {len(rekeys)} / {ike_rekeys} |",
    f"| datagrams lost within 2 s of a CHILD_SA rekey (max, sum) | {max(per_rekey, default=0)}, {sum(per_rekey)} |",
]
for d, (r0, r1, f0, f1) in sorted(growth.items()):
    md.append(f"| {d}: RSS after 1 min -> max after | {r0} -> {r1} kB ({(r1-r0)*100/max(r0,1):+.1f}%) |")
    md.append(f"| {d}: open descriptors after 1 min -> max after | {f0} -> {f1} |")
md.append(f"| verdict | {'FAIL: ' + '; '.join(fail) if fail else 'pass'} |")
open(f"{out}/summary.md", "w").write("\n".join(md) + "\n")
print("\n".join(md))
sys.exit(1 if fail else 0)
PY
