"""flowsec against scapy's `scapy.layers.ipsec` (ESP and AH), both ways.

For every (encryption, integrity) pair both support, and every packet
layout (tunnel 4-in-4, 6-in-4, 4-in-6, 6-in-6 and transport v4, v6; raw
and UDP-encapsulated on port 4500):

  to_flowsec:   scapy seals an inner packet -> flowsec-oracle opens it ->
                must equal the inner packet byte for byte; the same packet
                with one ciphertext bit flipped must be refused.
  from_flowsec: flowsec-oracle seals -> scapy `decrypt()` (which verifies the
                ICV) -> must equal the inner packet byte for byte.

AH (RFC 4302) runs over every integrity algorithm, tunnel and transport,
v4 and v6 (UDP encapsulation is ESP-only). Each suite also runs once with
Extended Sequence Numbers (high half 1) in both directions.

Not covered here because scapy lacks them: AES-GCM-8/12 (scapy's AESGCM
always emits a 16-byte tag; tshark covers them), AES-XCBC-96, Camellia,
Twofish.
"""

import dataclasses
import hashlib
import random
from dataclasses import dataclass

import pytest

from conftest import (NAT_T_PORTS, NO_INTEG, SHA256, encrs, esp_suites, integs, layouts,
                      sa_dict, suite_id)

scapy_all = pytest.importorskip("scapy.all", reason="scapy is not installed")
ipsec = pytest.importorskip("scapy.layers.ipsec", reason="scapy is not installed")
if not scapy_all.conf.crypto_valid:
    pytest.skip("scapy has no usable 'cryptography' package", allow_module_level=True)

from scapy.all import IP, UDP, IPv6, Raw, raw  # noqa: E402
from scapy.layers.ipsec import AH, ESP, SecurityAssociation  # noqa: E402


# The suites (conftest.py's table) scapy runs.
# Non-AEAD ciphers: each is paired with every integrity algorithm (and none).
CIPHERS = encrs("NULL", "AES-CBC-128", "AES-CTR-128", "DES", "3DES", "CAST-128", "BLOWFISH-128")
# Other key sizes: paired with HMAC-SHA2-256-128 only.
CIPHER_KEY_SIZES = encrs("AES-CBC-192", "AES-CBC-256", "AES-CTR-256", "CAST-80", "BLOWFISH-448")
AEADS = encrs("AES-GCM-16-128", "AES-GCM-16-192", "AES-GCM-16-256", "AES-CCM-8-128",
              "AES-CCM-12-128", "AES-CCM-16-128", "AES-CCM-16-256", "CHACHA20-POLY1305",
              "AES-GMAC-128", "AES-GMAC-256")
INTEGRITY = integs("HMAC-MD5-96", "HMAC-SHA1-96", "HMAC-SHA2-256-128", "HMAC-SHA2-384-192",
                "HMAC-SHA2-512-256", "AES-CMAC-96")
ESP_SUITES = esp_suites(CIPHERS, CIPHER_KEY_SIZES, AEADS, INTEGRITY)
LAYOUTS = layouts(udp=True)
AH_LAYOUTS = layouts(udp=False)


def _rng(*parts):
    seed = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return random.Random(seed)


@dataclass
class Case:
    """One SA's keys and a plaintext packet, reproducible from the test id."""

    flowsec_sa: dict
    scapy_sa: SecurityAssociation
    inner: bytes
    ip_cls: type
    seq: int


def _inner_packet(rng, layout):
    cls = IP if layout.inner == 4 else IPv6
    src, dst = layout.inner_addrs
    # Payload lengths that land on every padding length of an 8/16-byte block.
    payload = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 80)))
    pkt = cls(src=src, dst=dst) / UDP(sport=rng.randrange(1024, 65536), dport=5678) / Raw(payload)
    if cls is IP:
        pkt[IP].flags = "DF"
        pkt[IP].id = rng.randrange(65536)
    return raw(pkt)


def _tunnel_header(layout):
    if layout.mode != "tunnel":
        return None
    src, dst = layout.outer_addrs
    return (IP if layout.outer == 4 else IPv6)(src=src, dst=dst)


def _sa_numbers(rng, encr_key_len, integ_key_len, esn):
    """An SA's SPI, keys and sequence number (its high half 1 with ESN),
    drawn from rng in this order."""
    spi = rng.randrange(256, 2**32)
    ekey = bytes(rng.getrandbits(8) for _ in range(encr_key_len))
    ikey = bytes(rng.getrandbits(8) for _ in range(integ_key_len))
    seq_low = rng.randrange(1, 2**32 - 1)
    return spi, ekey, ikey, (1 << 32) | seq_low if esn else seq_low


def _case(rng, layout, flowsec_sa, scapy_sa):
    return Case(flowsec_sa, scapy_sa, _inner_packet(rng, layout),
                IP if layout.outer == 4 else IPv6, flowsec_sa["seq"])


def esp_case(encr, integ, layout, tag, esn=False):
    rng = _rng("esp", encr.label, integ.label, layout.id, tag)
    spi, ekey, ikey, seq = _sa_numbers(rng, encr.encr_key_len, integ.integ_key_len, esn)
    scapy_sa = SecurityAssociation(
        ESP,
        spi=spi,
        crypt_algo=encr.scapy,
        crypt_key=ekey or None,
        crypt_icv_size=encr.icv_len or None,
        auth_algo=integ.scapy,
        auth_key=ikey or None,
        tunnel_header=_tunnel_header(layout),
        nat_t_header=UDP(sport=NAT_T_PORTS[0], dport=NAT_T_PORTS[1]) if layout.udp else None,
        esn_en=esn,
        esn=seq >> 32,
    )
    return _case(rng, layout, sa_dict("esp", spi, layout, encr.iana, ekey, integ.iana, ikey,
                                      seq=seq, esn=esn), scapy_sa)


def ah_case(integ, layout, tag, esn=False):
    rng = _rng("ah", integ.label, layout.id, tag)
    spi, _, ikey, seq = _sa_numbers(rng, 0, integ.integ_key_len, esn)
    scapy_sa = SecurityAssociation(
        AH, spi=spi, auth_algo=integ.scapy, auth_key=ikey,
        tunnel_header=_tunnel_header(layout), esn_en=esn, esn=seq >> 32,
    )
    return _case(rng, layout, sa_dict("ah", spi, layout, 11, b"", integ.iana, ikey, seq=seq, esn=esn),
                 scapy_sa)


def scapy_seal(case):
    inner_cls = IP if case.inner[0] >> 4 == 4 else IPv6
    return raw(case.scapy_sa.encrypt(inner_cls(case.inner), seq_num=case.seq & 0xFFFFFFFF))


def scapy_open(case, wire):
    return raw(case.scapy_sa.decrypt(case.ip_cls(wire)))


def assert_same_inner(case, got):
    """The inner packet came back byte for byte; but in transport mode in
    UDP, the IP header is the one a UDP socket writes (sending) or the one
    rebuilt from what a socket reports (receiving), in flowsec as in any
    stack that leaves the UDP to its sockets: there the addresses, protocol,
    TOS, length and every byte after the header must match, and the fields
    the stack sets (IPv4 ID, flags, TTL, checksum; IPv6 flow label, hop
    limit) are its own."""
    want = case.inner
    if not (case.flowsec_sa["encap"] and case.flowsec_sa["mode"] == "transport"):
        assert got == want
        return
    cls = IP if want[0] >> 4 == 4 else IPv6
    g, w = cls(got), cls(want)
    keys = ("src", "dst", "proto", "tos", "len") if cls is IP else ("src", "dst", "nh", "tc", "plen")
    assert [getattr(g, k) for k in keys] == [getattr(w, k) for k in keys]
    assert raw(g.payload) == raw(w.payload)


def check_to_flowsec(oracle, case, tamper):
    wire = scapy_seal(case)
    assert_same_inner(case, oracle.open(case.flowsec_sa, wire))
    if tamper:
        # Flip a bit of the last byte before the ICV (ESP) or of the payload
        # (AH): the ICV must no longer verify.
        bad = bytearray(wire)
        bad[-1 - tamper] ^= 0x01
        ok, err = oracle.call("open", case.flowsec_sa, bytes(bad))
        assert not ok and err == "auth_failed", (ok, err)


def check_from_flowsec(oracle, case, proto):
    wire = oracle.seal(case.flowsec_sa, case.inner)
    parsed = case.ip_cls(wire)
    hdr = parsed[proto]
    assert hdr.spi == case.flowsec_sa["spi"]
    assert hdr.seq == case.seq & 0xFFFFFFFF
    if case.flowsec_sa["encap"]:
        assert (parsed[UDP].sport, parsed[UDP].dport) == NAT_T_PORTS
    assert_same_inner(case, scapy_open(case, wire))


# --- ESP ---------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda l: l.id)
@pytest.mark.parametrize("suite", ESP_SUITES, ids=suite_id)
def test_esp_scapy_to_flowsec(oracle, suite, layout):
    encr, integ = suite
    case = esp_case(encr, integ, layout, "to")
    check_to_flowsec(oracle, case, tamper=encr.icv_len if encr.aead else integ.icv_len)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda l: l.id)
@pytest.mark.parametrize("suite", ESP_SUITES, ids=suite_id)
def test_esp_flowsec_to_scapy(oracle, suite, layout):
    encr, integ = suite
    check_from_flowsec(oracle, esp_case(encr, integ, layout, "from"), ESP)


ESN_LAYOUTS = [LAYOUTS[1], LAYOUTS[9]]  # tunnel v4-in-4 raw, transport v6 UDP


@pytest.mark.parametrize("layout", ESN_LAYOUTS, ids=lambda l: l.id)
@pytest.mark.parametrize("suite", ESP_SUITES, ids=suite_id)
def test_esp_esn_both_ways(oracle, suite, layout):
    encr, integ = suite
    check_to_flowsec(oracle, esp_case(encr, integ, layout, "esn-to", esn=True), tamper=0)
    check_from_flowsec(oracle, esp_case(encr, integ, layout, "esn-from", esn=True), ESP)


# --- AH ----------------------------------------------------------------------

@pytest.mark.parametrize("layout", AH_LAYOUTS, ids=lambda l: l.id)
@pytest.mark.parametrize("integ", INTEGRITY, ids=lambda i: i.label)
def test_ah_scapy_to_flowsec(oracle, integ, layout):
    case = ah_case(integ, layout, "to")
    check_to_flowsec(oracle, case, tamper=0)
    # The last payload byte is covered by the AH ICV.
    bad = bytearray(scapy_seal(case))
    bad[-1] ^= 0x01
    ok, err = oracle.call("open", case.flowsec_sa, bytes(bad))
    assert not ok and err == "auth_failed", (ok, err)


@pytest.mark.parametrize("layout", AH_LAYOUTS, ids=lambda l: l.id)
@pytest.mark.parametrize("integ", INTEGRITY, ids=lambda i: i.label)
def test_ah_flowsec_to_scapy(oracle, integ, layout):
    check_from_flowsec(oracle, ah_case(integ, layout, "from"), AH)


@pytest.mark.parametrize("layout", AH_LAYOUTS[:2], ids=lambda l: l.id)
@pytest.mark.parametrize("integ", INTEGRITY, ids=lambda i: i.label)
def test_ah_esn_both_ways(oracle, integ, layout):
    check_to_flowsec(oracle, ah_case(integ, layout, "esn-to", esn=True), tamper=0)
    check_from_flowsec(oracle, ah_case(integ, layout, "esn-from", esn=True), AH)


# --- Backends ----------------------------------------------------------------

@pytest.mark.parametrize("backend", ["aws-lc", "rustcrypto"])
@pytest.mark.parametrize(
    "suite",
    [(CIPHERS[1], SHA256), (AEADS[0], NO_INTEG), (AEADS[7], NO_INTEG), (CIPHERS[4], INTEGRITY[1])],
    ids=suite_id,
)
def test_esp_each_backend(oracle, suite, backend):
    """The default provider mixes backends; pin each one in turn."""
    encr, integ = suite
    case = esp_case(encr, integ, LAYOUTS[1], "backend-" + backend)
    ok, out = oracle.call("open", case.flowsec_sa, scapy_seal(case), backend=backend)
    if not ok and out.startswith("bad request: unsupported"):
        pytest.skip("%s does not implement %s" % (backend, encr.label))
    assert ok and out == case.inner, out
    ok, wire = oracle.call("seal", case.flowsec_sa, case.inner, backend=backend)
    assert ok, wire
    assert_same_inner(case, scapy_open(case, wire))


# --- Controls and truncated GCM ICVs -------------------------------------------

@pytest.mark.parametrize(
    "suite", [s for s in ESP_SUITES if s[0].aead or s[1] is not NO_INTEG], ids=suite_id)
def test_scapy_sees_tampering(oracle, suite):
    """Control: scapy refuses a flowsec packet with one ICV bit flipped, so
    its `decrypt()` above really verified."""
    encr, integ = suite
    case = esp_case(encr, integ, LAYOUTS[1], "control")
    wire = bytearray(oracle.seal(case.flowsec_sa, case.inner))
    wire[-1] ^= 0x01
    with pytest.raises(ipsec.IPSecIntegrityError):
        scapy_open(case, bytes(wire))


GCM_TRUNCATED = encrs("AES-GCM-8-128", "AES-GCM-12-256")
TUNNEL_LAYOUTS = [l for l in LAYOUTS if l.mode == "tunnel"]


def _gcm16_case(encr, layout, tag):
    """The same SA as `encr` but with a 16-byte ICV, for scapy to seal."""
    full = dataclasses.replace(encr, iana=20, icv_len=16)
    case = esp_case(full, NO_INTEG, layout, tag)
    case.flowsec_sa["encr"] = encr.iana
    return case


@pytest.mark.parametrize("layout", TUNNEL_LAYOUTS, ids=lambda l: l.id)
@pytest.mark.parametrize("encr", GCM_TRUNCATED, ids=lambda e: e.label)
def test_esp_gcm_truncated_icv_both_ways(oracle, encr, layout):
    """scapy cannot make GCM-8/12 itself (its AESGCM always emits 16 bytes),
    but a GCM tag of t bytes is the first t bytes of the full tag (NIST
    SP 800-38D §7.1, RFC 4106 §6): scapy seals with GCM-16 and the tag is
    cut. The other way, `cryptography`'s GCM mode checks the short tag."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    cut = 16 - encr.icv_len
    # scapy -> flowsec
    case = _gcm16_case(encr, layout, "to")
    pkt = case.ip_cls(scapy_seal(case))
    pkt[ESP].data = pkt[ESP].data[:-cut]
    for layer, fields in ((IP, ("len", "chksum")), (IPv6, ("plen",)), (UDP, ("len", "chksum"))):
        if layer in pkt:
            for f in fields:
                delattr(pkt[layer], f)
    if UDP in pkt:
        pkt[UDP].chksum = 0
    assert oracle.open(case.flowsec_sa, raw(pkt)) == case.inner

    # flowsec -> cryptography (tunnel mode: the ESP payload is the inner packet)
    case = _gcm16_case(encr, layout, "from")
    esp = case.ip_cls(oracle.seal(case.flowsec_sa, case.inner))[ESP]
    key = bytes.fromhex(case.flowsec_sa["encr_key"])
    data = esp.data
    iv, ct, icv = data[:8], data[8:-encr.icv_len], data[-encr.icv_len:]
    salt = encr.salt_len
    dec = Cipher(algorithms.AES(key[:-salt]),
                 modes.GCM(key[-salt:] + iv, icv, min_tag_length=encr.icv_len)).decryptor()
    dec.authenticate_additional_data(esp.spi.to_bytes(4, "big") + esp.seq.to_bytes(4, "big"))
    pt = dec.update(ct) + dec.finalize()
    assert pt[-1] == (4 if layout.inner == 4 else 41)
    assert pt[:len(pt) - 2 - pt[-2]] == case.inner
