#!/usr/bin/env bash
# Oracle tests: flowsec against scapy (ESP and AH, both ways) and tshark's ESP
# dissector (flowsec -> tshark). Creates .venv at the repository root if
# needed, installs tests/oracle/requirements.txt into it, and runs pytest.
# tshark comes from the system (apt-get install tshark); without it those
# tests are skipped. Extra arguments go to pytest (e.g. -k gcm).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

venv="${FLOWSEC_VENV:-$root/.venv}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r tests/oracle/requirements.txt

exec "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/oracle "$@"
