"""Shared fixtures for the oracle tests: the `flowsec-oracle` process, the
packet layouts every oracle is run over, and the one table of algorithms
(their ids, key lengths and each oracle's names for them).

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


# --- Algorithms ---------------------------------------------------------------
# One table for both oracles: what flowsec-oracle is given for each algorithm
# (its IKEv2 transform id and key material) and what scapy and tshark call
# it. Each test file picks the suites it runs from it (esp_suites).

@dataclass(frozen=True)
class Encr:
    """An ESP encryption algorithm (IKEv2 Transform Type 1) at one key size."""

    label: str
    iana: int            # IKEv2 Transform Type 1 id
    encr_key_len: int    # bytes of key material flowsec takes: the cipher key, then the salt
    salt_len: int = 0    # the salt/nonce at the end of that material (RFC 4106 §8.1,
                         # 4309 §7.1, 3686 §5.1, 4543 §3.2, 7634 §2)
    icv_len: int = 0     # a combined-mode (AEAD) algorithm's ICV; 0: not AEAD
    scapy: str = None    # scapy's crypt_algo; None: scapy lacks it
    tshark: str = None   # tshark's esp_sa encryption name; None: tshark lacks it or is not run on it

    @property
    def aead(self):
        return self.icv_len > 0

    @property
    def cipher_key_len(self):
        """The cipher's own key: the material without the salt."""
        return self.encr_key_len - self.salt_len


@dataclass(frozen=True)
class Integ:
    """An integrity algorithm (IKEv2 Transform Type 3), for ESP and AH."""

    label: str
    iana: int            # IKEv2 Transform Type 3 id
    integ_key_len: int   # bytes of key flowsec takes
    icv_len: int         # bytes of ICV it appends
    scapy: str = None    # scapy's auth_algo; None: scapy lacks it
    tshark: str = None   # tshark's esp_sa authentication name

    @property
    def tshark_checks(self):
        """tshark verifies this ICV (it only decrypts under "ANY 96 bit")."""
        return self.tshark not in (None, "NULL", TSHARK_ANY_96)


TSHARK_ANY_96 = "ANY 96 bit authentication [no checking]"


def _gcm(icv, bits):
    return Encr("AES-GCM-%d-%d" % (icv, bits), {8: 18, 12: 19, 16: 20}[icv], bits // 8 + 4, 4, icv,
                "AES-GCM", "AES-GCM with %d octet ICV [RFC4106]" % icv)


ENCRS = {e.label: e for e in [
    Encr("NULL", 11, 0, scapy="NULL", tshark="NULL"),
    Encr("AES-CBC-128", 12, 16, scapy="AES-CBC", tshark="AES-CBC [RFC3602]"),
    Encr("AES-CBC-192", 12, 24, scapy="AES-CBC", tshark="AES-CBC [RFC3602]"),
    Encr("AES-CBC-256", 12, 32, scapy="AES-CBC", tshark="AES-CBC [RFC3602]"),
    Encr("AES-CTR-128", 13, 20, 4, scapy="AES-CTR", tshark="AES-CTR [RFC3686]"),
    Encr("AES-CTR-192", 13, 28, 4, scapy="AES-CTR", tshark="AES-CTR [RFC3686]"),
    Encr("AES-CTR-256", 13, 36, 4, scapy="AES-CTR", tshark="AES-CTR [RFC3686]"),
    Encr("DES", 2, 8, scapy="DES", tshark="DES-CBC [RFC2405]"),
    Encr("3DES", 3, 24, scapy="3DES", tshark="TripleDES-CBC [RFC2451]"),
    Encr("CAST-128", 6, 16, scapy="CAST", tshark="CAST5-CBC [RFC2144]"),
    # RFC 2144 §2.5: keys of 80 bits or less use 12 rounds, not 16.
    Encr("CAST-80", 6, 10, scapy="CAST"),
    Encr("BLOWFISH-128", 7, 16, scapy="Blowfish", tshark="BLOWFISH-CBC [RFC2451]"),
    Encr("BLOWFISH-448", 7, 56, scapy="Blowfish"),
    Encr("TWOFISH-128", 1027, 16, tshark="TWOFISH-CBC"),
    Encr("TWOFISH-256", 1027, 32, tshark="TWOFISH-CBC"),
    # scapy's AES-GCM always emits a 16-byte tag: GCM-8 and GCM-12 are
    # sealed as GCM-16 and cut (test_scapy.py's truncated-ICV test).
    _gcm(8, 128), _gcm(8, 256), _gcm(12, 128), _gcm(12, 256),
    _gcm(16, 128), _gcm(16, 192), _gcm(16, 256),
    Encr("AES-CCM-8-128", 14, 19, 3, 8, scapy="AES-CCM"),
    Encr("AES-CCM-12-128", 15, 19, 3, 12, scapy="AES-CCM"),
    Encr("AES-CCM-16-128", 16, 19, 3, 16, scapy="AES-CCM"),
    Encr("AES-CCM-16-256", 16, 35, 3, 16, scapy="AES-CCM"),
    Encr("CHACHA20-POLY1305", 28, 36, 4, 16, scapy="CHACHA20-POLY1305"),
    Encr("AES-GMAC-128", 21, 20, 4, 16, scapy="AES-NULL-GMAC"),
    Encr("AES-GMAC-256", 21, 36, 4, 16, scapy="AES-NULL-GMAC"),
]}

NO_INTEG = Integ("NONE", 0, 0, 0, scapy="NULL", tshark="NULL")
INTEGS = {i.label: i for i in [
    NO_INTEG,
    Integ("HMAC-MD5-96", 1, 16, 12, scapy="HMAC-MD5-96", tshark="HMAC-MD5-96 [RFC2403]"),
    Integ("HMAC-SHA1-96", 2, 20, 12, scapy="HMAC-SHA1-96", tshark="HMAC-SHA-1-96 [RFC2404]"),
    Integ("HMAC-SHA2-256-128", 12, 32, 16, scapy="SHA2-256-128", tshark="HMAC-SHA-256-128 [RFC4868]"),
    Integ("HMAC-SHA2-384-192", 13, 48, 24, scapy="SHA2-384-192", tshark="HMAC-SHA-384-192 [RFC4868]"),
    Integ("HMAC-SHA2-512-256", 14, 64, 32, scapy="SHA2-512-256", tshark="HMAC-SHA-512-256 [RFC4868]"),
    Integ("AES-XCBC-96", 5, 16, 12, tshark=TSHARK_ANY_96),
    Integ("AES-CMAC-96", 8, 16, 12, scapy="AES-CMAC-96", tshark=TSHARK_ANY_96),
]}
SHA256 = INTEGS["HMAC-SHA2-256-128"]


def encrs(*labels):
    return [ENCRS[label] for label in labels]


def integs(*labels):
    return [INTEGS[label] for label in labels]


def esp_suites(ciphers, key_sizes, aeads, integrity):
    """The (Encr, Integ) pairs an oracle runs: each of `ciphers` with no
    integrity and with each of `integrity` (but NULL with neither: RFC 4303
    §3.2), each of `key_sizes` with HMAC-SHA2-256-128, each AEAD alone."""
    out = []
    for e in ciphers:
        for i in [NO_INTEG] + integrity:
            if not (e.label == "NULL" and i is NO_INTEG):
                out.append((e, i))
    out += [(e, SHA256) for e in key_sizes]
    out += [(e, NO_INTEG) for e in aeads]
    return out


def suite_id(suite):
    e, i = suite
    return e.label if i is NO_INTEG else "%s+%s" % (e.label, i.label)


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
