"""Shared fixtures for the oracle tests: the `flowsec-oracle` process and
the packet layouts every oracle is run over.

`flowsec-oracle` (tools/oracle) is built once per session with
`cargo build -p flowsec-oracle` (set FLOWSEC_ORACLE to use a prebuilt
binary instead) and driven over one pipe: a JSON request per line in, a
JSON response per line out.
"""

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


class Oracle:
    """One long-lived flowsec-oracle process."""

    def __init__(self, binary):
        self.proc = subprocess.Popen(
            [str(binary)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    def call(self, op, sa, packet, backend=None):
        """Send one request; returns (ok, packet bytes or error string)."""
        req = {"op": op, "sa": sa, "packet": bytes(packet).hex()}
        if backend:
            req["backend"] = backend
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("flowsec-oracle exited (rc=%s)" % self.proc.poll())
        resp = json.loads(line)
        if resp["ok"]:
            return True, bytes.fromhex(resp["packet"])
        return False, resp["error"]

    def seal(self, sa, packet, **kw):
        ok, out = self.call("seal", sa, packet, **kw)
        assert ok, "flowsec-oracle seal failed: %s" % out
        return out

    def open(self, sa, packet, **kw):
        ok, out = self.call("open", sa, packet, **kw)
        assert ok, "flowsec-oracle open failed: %s" % out
        return out

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def _oracle_binary():
    explicit = os.environ.get("FLOWSEC_ORACLE")
    if explicit:
        return Path(explicit)
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.skip("cargo not found: cannot build flowsec-oracle (set FLOWSEC_ORACLE)")
    subprocess.run(
        [cargo, "build", "--quiet", "-p", "flowsec-oracle"], cwd=ROOT, check=True
    )
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "debug" / "flowsec-oracle"


@pytest.fixture(scope="session")
def oracle():
    o = Oracle(_oracle_binary())
    yield o
    o.close()


# --- Packet layouts ---------------------------------------------------------

ADDR = {
    4: ("192.0.2.1", "198.51.100.2"),
    6: ("2001:db8::1", "2001:db8:ffff::2"),
}
INNER_ADDR = {
    4: ("10.1.0.1", "10.2.0.1"),
    6: ("fd00:1::1", "fd00:2::1"),
}
NAT_T_PORTS = (4500, 4500)


@dataclass(frozen=True)
class Layout:
    """Mode, outer family, inner family (== outer in transport), encap."""

    mode: str
    outer: int
    inner: int
    udp: bool

    @property
    def id(self):
        fam = "v%d" % self.outer if self.mode == "transport" else "v%din%d" % (
            self.inner,
            self.outer,
        )
        return "%s-%s-%s" % (self.mode, fam, "udp" if self.udp else "raw")

    @property
    def outer_addrs(self):
        return ADDR[self.outer]

    @property
    def inner_addrs(self):
        return ADDR[self.outer] if self.mode == "transport" else INNER_ADDR[self.inner]


def layouts(udp=True):
    out = []
    for encap in ([False, True] if udp else [False]):
        for outer in (4, 6):
            out.append(Layout("transport", outer, outer, encap))
            for inner in (4, 6):
                out.append(Layout("tunnel", outer, inner, encap))
    return out


def sa_dict(proto, spi, layout, encr=11, encr_key=b"", integ=0, integ_key=b"",
            seq=1, esn=False):
    src, dst = layout.outer_addrs
    return {
        "protocol": proto,
        "spi": spi,
        "mode": layout.mode,
        "src": src,
        "dst": dst,
        "encap": {"sport": NAT_T_PORTS[0], "dport": NAT_T_PORTS[1]} if layout.udp else None,
        "encr": encr,
        "encr_key": encr_key.hex(),
        "integ": integ,
        "integ_key": integ_key.hex(),
        "esn": esn,
        "seq": seq,
        "replay_window": 64,
    }


def udp_ip_packet(family, src, dst, sport, dport, payload):
    """A plain IP/UDP packet (bytes) with correct checksums, built by hand so
    that the tshark suite does not need scapy."""
    import struct

    length = 8 + len(payload)
    if family == 4:
        pseudo = _ip4(src) + _ip4(dst) + struct.pack("!BBH", 0, 17, length)
    else:
        pseudo = _ip6(src) + _ip6(dst) + struct.pack("!IxxxB", length, 17)
    udp = struct.pack("!HHHH", sport, dport, length, 0) + payload
    csum = _csum(pseudo + udp) or 0xFFFF
    udp = udp[:6] + struct.pack("!H", csum) + udp[8:]
    if family == 4:
        hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + length, 0x1234, 0x4000, 64, 17,
                          0, _ip4(src), _ip4(dst))
        hdr = hdr[:10] + struct.pack("!H", _csum(hdr)) + hdr[12:]
    else:
        hdr = struct.pack("!IHBB16s16s", 0x60000000, length, 17, 64, _ip6(src), _ip6(dst))
    return hdr + udp


def _ip4(a):
    import ipaddress
    return ipaddress.IPv4Address(a).packed


def _ip6(a):
    import ipaddress
    return ipaddress.IPv6Address(a).packed


def _csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF
