#!/usr/bin/env bash
# The flowsec stand-in of tests/e2e/ike.sh (FLOWSEC_IKE_STANDIN=1):
# strongSwan behind flowsec's IKE CLI, to test the harness's flowsec code
# path itself. `up -c FILE --socket PATH` execs charon (so that SIGKILL
# hits the IKE daemon itself; its strongswan.conf is PATH.strongswan.conf,
# its vici socket PATH.vici) after starting a loader that waits for the
# vici socket, loads FILE and says "flowsec: up"; `ctl sas --json`,
# `initiate --child`, `rekey --child|--ike` and `terminate --ike` go to
# swanctl.
set -eu
what="$1"; shift
sock="${FLOWSEC_SOCKET:-}" conf="" args=()
while [ $# -gt 0 ]; do
    case "$1" in
        -c) conf="$2"; shift 2 ;;
        --socket) sock="$2"; shift 2 ;;
        --tun|--workers) shift 2 ;;
        --json) shift ;;
        *) args+=("$1"); shift ;;
    esac
done
uri="unix://$sock.vici"
case "$what" in
    up)
        [ -n "$conf" ] && [ -f "$sock.strongswan.conf" ] || { echo "stand-in: up -c FILE --socket PATH" >&2; exit 2; }
        rm -f "$sock.vici"
        (
            for _ in $(seq 100); do [ -S "$sock.vici" ] && break; sleep 0.1; done
            swanctl --load-all --noprompt --file "$conf" --uri "$uri" >"$sock.load.log" 2>&1 && echo "flowsec: up" >&2
        ) &
        STRONGSWAN_CONF="$sock.strongswan.conf" exec /usr/sbin/charon-systemd ;;
    ctl)
        set -- "${args[@]}"
        case "$1 ${2:-}" in
            "sas "*) swanctl --list-sas --raw --uri "$uri" | python3 "$(dirname "$0")/tools.py" sas strongswan ;;
            "initiate --child") swanctl --initiate --child "$3" --uri "$uri" ;;
            "rekey --child") swanctl --rekey --child "$3" --uri "$uri" ;;
            "rekey --ike") swanctl --rekey --ike "$3" --uri "$uri" ;;
            "terminate --ike") swanctl --terminate --ike "$3" --uri "$uri" ;;
            *) echo "stand-in: ctl $*?" >&2; exit 2 ;;
        esac ;;
    *) echo "stand-in: $what?" >&2; exit 2 ;;
esac
