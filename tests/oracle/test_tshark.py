"""flowsec -> tshark: packets sealed by flowsec, decrypted and ICV-checked by
Wireshark's ESP dissector (tshark's `esp_sa` table).

tshark cannot seal, so this oracle runs one way only. For every ESP
(encryption, integrity) pair tshark can decrypt and flowsec implements, and
every layout (tunnel 4-in-4, 6-in-4, 4-in-6, 6-in-6, transport v4 and v6;
raw and UDP-encapsulated on port 4500), flowsec-oracle seals one UDP packet
with a distinct payload. All packets go into one pcap (raw-IP link type)
with one `esp_sa` entry per SPI, and one tshark run reports, per frame:
ICV good (when there is an ICV to check), the decrypted inner packet's
destination and UDP port, and its payload bytes, which must equal what was
sealed; and no IP or UDP checksum reported bad. A tampered copy of one packet per ICV-checked suite must come out
"ICV bad", so a tshark that silently checks nothing cannot pass.

tshark does not check AH ICVs, nor (before 4.2) ESN; those are left to the
scapy suite. AES-CMAC-96 and AES-XCBC-96 are run with tshark's
"ANY 96 bit authentication [no checking]": decryption is checked, the ICV
is not.
"""

import hashlib
import os
import random
import shutil
import struct
import subprocess
from dataclasses import dataclass

import pytest

from conftest import (ENCRS, INTEGS, encrs, esp_suites, integs, layouts, sa_dict, suite_id,
                      udp_ip_packet)

TSHARK = shutil.which("tshark")
if TSHARK is None:
    pytest.skip("tshark is not installed (apt-get install tshark)", allow_module_level=True)

INNER_SPORT, INNER_DPORT = 40000, 40001  # no dissector claims these


# The suites (conftest.py's table) tshark runs: each cipher with every
# integrity algorithm tshark checks (and none), other key sizes with
# HMAC-SHA2-256-128, AES-CBC-128 with the 96-bit MACs tshark only decrypts
# under ("ANY 96 bit authentication [no checking]"), and AES-GCM (tshark
# 4.0 names each ICV length as its own encryption algorithm, with NULL
# authentication).
CIPHERS = encrs("NULL", "AES-CBC-128", "AES-CTR-128", "DES", "3DES", "CAST-128", "BLOWFISH-128",
                "TWOFISH-128")
CIPHER_KEY_SIZES = encrs("AES-CBC-192", "AES-CBC-256", "AES-CTR-192", "AES-CTR-256", "TWOFISH-256")
INTEGRITY = integs("HMAC-MD5-96", "HMAC-SHA1-96", "HMAC-SHA2-256-128", "HMAC-SHA2-384-192",
               "HMAC-SHA2-512-256")
UNCHECKED_96 = [(ENCRS["AES-CBC-128"], INTEGS[label]) for label in ("AES-XCBC-96", "AES-CMAC-96")]
AEADS = encrs("AES-GCM-8-128", "AES-GCM-8-256", "AES-GCM-12-128", "AES-GCM-12-256",
              "AES-GCM-16-128", "AES-GCM-16-256")


def icv_checked(suite):
    """tshark verifies the suite's ICV: an AEAD's, or an integrity algorithm it checks."""
    e, i = suite
    return e.aead or i.tshark_checks


SUITES = (esp_suites(CIPHERS, CIPHER_KEY_SIZES, [], INTEGRITY) + UNCHECKED_96
          + esp_suites([], [], AEADS, []))
LAYOUTS = layouts(udp=True)
CASES = [(s, l) for s in SUITES for l in LAYOUTS]


def _case_id(case):
    return "%s-%s" % (suite_id(case[0]), case[1].id)


@dataclass
class Sealed:
    spi: int
    inner_dst: str
    payload: bytes
    wire: bytes = None
    error: str = None


def _write_pcap(path, packets):
    with open(path, "wb") as f:
        # pcap, linktype 101 (LINKTYPE_RAW: bare IPv4/IPv6)
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101))
        for n, p in enumerate(packets):
            f.write(struct.pack("<IIII", n, 0, len(p), len(p)) + p)


def _uat_line(layout, spi, encr, ekey, integ, ikey):
    src, dst = layout.outer_addrs

    def key(k):
        return "0x" + k.hex() if k else ""

    return '"%s","%s","%s","0x%08x","%s","%s","%s","%s"' % (
        "IPv4" if layout.outer == 4 else "IPv6", src, dst, spi,
        encr.tshark, key(ekey), integ.tshark, key(ikey))


FIELDS = ["frame.number", "esp.spi", "esp.icv_good", "esp.icv_bad", "ip.dst", "ipv6.dst",
          "udp.dstport", "data.data", "ip.checksum.status", "udp.checksum.status"]
# Wireshark's checksum status values.
CHECKSUM_BAD = "0"


@pytest.fixture(scope="module")
def tshark_run(oracle, tmp_path_factory):
    """Seal every case, run tshark once, return {case id: (Sealed, fields)}
    and the tamper-control frames."""
    tmp = tmp_path_factory.mktemp("tshark")
    sealed, frames, uat = {}, [], []
    tamper = {}  # suite id -> frame index of a tampered copy
    for n, (suite, layout) in enumerate(CASES):
        encr, integ = suite
        rng = random.Random(hashlib.sha256(_case_id((suite, layout)).encode()).digest())
        spi = 0x10000 + n
        ekey = bytes(rng.getrandbits(8) for _ in range(encr.encr_key_len))
        ikey = bytes(rng.getrandbits(8) for _ in range(integ.integ_key_len))
        payload = b"%05d:" % n + bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 64)))
        src, dst = layout.inner_addrs
        inner = udp_ip_packet(layout.inner, src, dst, INNER_SPORT, INNER_DPORT, payload)
        sa = sa_dict("esp", spi, layout, encr.iana, ekey, integ.iana, ikey,
                     seq=rng.randrange(1, 2**32 - 1))
        s = Sealed(spi, dst, payload)
        ok, out = oracle.call("seal", sa, inner)
        if ok:
            s.wire = out
            frames.append(out)
            uat.append(_uat_line(layout, spi, encr, ekey, integ, ikey))
            sid = suite_id(suite)
            if icv_checked(suite) and sid not in tamper:
                bad = bytearray(out)
                bad[-1] ^= 0x80  # last ICV byte
                tamper[sid] = len(frames)
                frames.append(bytes(bad))
        else:
            s.error = out
        sealed[_case_id((suite, layout))] = s

    conf = tmp / "conf"
    conf.mkdir()
    (conf / "esp_sa").write_text("\n".join(uat) + "\n")
    (conf / "preferences").write_text(
        "esp.enable_encryption_decode: TRUE\n"
        "esp.enable_authentication_check: TRUE\n"
        "esp.do_esp_sequence_analysis: FALSE\n"
        "ip.check_checksum: TRUE\n"
        "udp.check_checksum: TRUE\n"
    )
    pcap = tmp / "flowsec.pcap"
    _write_pcap(pcap, frames)
    cmd = [TSHARK, "-n", "-r", str(pcap), "-T", "fields", "-E", "separator=|",
           "-E", "occurrence=a", "-E", "aggregator=,"]
    for f in FIELDS:
        cmd += ["-e", f]
    env = dict(os.environ, WIRESHARK_CONFIG_DIR=str(conf))
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    # A bad esp_sa line is only a warning to tshark, and drops the SAs after it.
    assert "Error" not in res.stderr, res.stderr
    rows = {}
    for line in res.stdout.splitlines():
        cols = line.split("|")
        rows[int(cols[0]) - 1] = dict(zip(FIELDS, cols))
    by_case = {}
    index = {id(f): i for i, f in enumerate(frames)}
    for cid, s in sealed.items():
        by_case[cid] = (s, rows.get(index[id(s.wire)]) if s.wire is not None else None)
    return by_case, {sid: rows.get(i) for sid, i in tamper.items()}


def _last(value):
    return value.split(",")[-1] if value else ""


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_flowsec_to_tshark(tshark_run, case):
    suite, layout = case
    s, row = tshark_run[0][_case_id(case)]
    assert s.error is None, "flowsec-oracle seal failed: %s" % s.error
    assert row is not None, "tshark printed no row for this frame"
    assert row["esp.spi"] == "0x%08x" % s.spi
    if icv_checked(suite):
        assert row["esp.icv_good"] == "1" and row["esp.icv_bad"] == "0", row
    dst = _last(row["ip.dst"] if layout.inner == 4 else row["ipv6.dst"])
    assert dst == s.inner_dst, row
    assert _last(row["udp.dstport"]) == str(INNER_DPORT), row
    assert bytes.fromhex(_last(row["data.data"])) == s.payload, row
    # Outer and inner IPv4 header checksums, the outer UDP checksum (zero is
    # allowed over IPv4 only, RFC 3948 §2.1) and the inner UDP checksum.
    for field in ("ip.checksum.status", "udp.checksum.status"):
        assert CHECKSUM_BAD not in row[field].split(","), (field, row)


@pytest.mark.parametrize(
    "suite", [s for s in SUITES if icv_checked(s)], ids=suite_id)
def test_tshark_sees_tampering(tshark_run, suite):
    """Control: a flipped ICV bit is reported bad, so 'good' above means
    tshark really checked."""
    row = tshark_run[1].get(suite_id(suite))
    assert row is not None
    assert row["esp.icv_bad"] == "1" and row["esp.icv_good"] == "0", row
