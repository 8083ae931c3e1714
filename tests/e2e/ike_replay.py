#!/usr/bin/env python3
"""Replay an IKE request from a forged source, and count the answers:
tests/e2e/ike_replay.sh's helper (standard library only; no scapy).

    ike_replay.py extract PCAP FROM OUT
        The first IKE request of exchange type 35 (IKE_AUTH: the header's
        exchange type 35, its response flag clear) that FROM sent in PCAP
        (tcpdump -w, IPv4 over Ethernet or Linux cooked capture), written
        to OUT as JSON: {"sport", "dport", "dst", "spi_i", "spi_r",
        "message_id", "udp" (the UDP payload in hex, with the non-ESP
        marker on port 4500)}. Prints what it found; status 1 without one.

    ike_replay.py inject REQUEST SRC COUNT SECONDS
        COUNT copies of REQUEST's datagram (to its dst and ports), from the
        forged source address SRC, spread evenly over SECONDS, over a raw
        socket (IP_HDRINCL; root, in the sender's namespace). Prints
        "burst START END COUNT": the epoch times of its first and last copy.

    ike_replay.py answers PCAP REQUEST FROM TO START END
        How many IKE responses to REQUEST's exchange (the same SPIs, message
        ID and exchange type, the response flag set) FROM sent TO in PCAP
        between the epoch times START and END (seconds, inclusive); prints
        that number.
"""
import json
import socket
import struct
import sys
import time

IKE_AUTH = 35
NON_ESP_MARKER = b"\0\0\0\0"


def frames(path):
    """(epoch seconds, IPv4 packet) for each IPv4 frame of a pcap file."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return
    magic = data[:4]
    formats = {
        b"\xd4\xc3\xb2\xa1": ("<", 1e-6), b"\xa1\xb2\xc3\xd4": (">", 1e-6),
        b"\x4d\x3c\xb2\xa1": ("<", 1e-9), b"\xa1\xb2\x3c\x4d": (">", 1e-9),
    }
    if magic not in formats:
        raise SystemExit("%s: not a pcap file (pcapng? tcpdump -w writes pcap)" % path)
    endian, unit = formats[magic]
    linktype = struct.unpack(endian + "I", data[20:24])[0] & 0x0FFFFFFF
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl, _orig = struct.unpack(endian + "IIII", data[off:off + 16])
        frame = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if len(frame) < incl:   # the last record, still being written
            break
        if linktype == 1:        # Ethernet (a veth), one 802.1Q tag at most
            ethertype, l2 = struct.unpack("!H", frame[12:14])[0], 14
            if ethertype == 0x8100:
                ethertype, l2 = struct.unpack("!H", frame[16:18])[0], 18
        elif linktype == 113:    # Linux cooked capture (-i any)
            ethertype, l2 = struct.unpack("!H", frame[14:16])[0], 16
        elif linktype == 276:    # Linux cooked capture v2
            ethertype, l2 = struct.unpack("!H", frame[0:2])[0], 20
        elif linktype == 101:    # raw IP
            ethertype, l2 = 0x0800, 0
        else:
            raise SystemExit("%s: link type %d not handled" % (path, linktype))
        if ethertype == 0x0800:
            yield sec + frac * unit, frame[l2:]


def ike_datagrams(path):
    """(time, src, dst, sport, dport, UDP payload, IKE message) of every
    UDP datagram to or from port 500/4500 that holds an IKE header (on
    4500, behind the non-ESP marker); fragments of IP datagrams skipped."""
    for t, ip in frames(path):
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 17:
            continue
        if struct.unpack("!H", ip[6:8])[0] & 0x3FFF:   # MF or an offset
            continue
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack("!H", ip[2:4])[0]
        udp = ip[ihl:total]
        if len(udp) < 8:
            continue
        sport, dport, ulen = struct.unpack("!HHH", udp[:6])
        payload = udp[8:ulen]
        if 500 in (sport, dport):
            ike = payload
        elif 4500 in (sport, dport) and payload[:4] == NON_ESP_MARKER:
            ike = payload[4:]
        else:
            continue
        if len(ike) < 28 or ike[17] >> 4 != 2:   # IKEv2 (major version 2)
            continue
        yield (t, socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20]),
               sport, dport, payload, ike)


def header(ike):
    """(SPIi, SPIr, exchange type, is a response, message ID)."""
    spi_i, spi_r, _next, _ver, exch, flags, mid = struct.unpack("!8s8sBBBBI", ike[:24])
    return spi_i.hex(), spi_r.hex(), exch, bool(flags & 0x20), mid


def extract(pcap, src, out):
    for t, s, d, sport, dport, payload, ike in ike_datagrams(pcap):
        spi_i, spi_r, exch, response, mid = header(ike)
        if s == src and exch == IKE_AUTH and not response:
            req = {"sport": sport, "dport": dport, "dst": d, "spi_i": spi_i, "spi_r": spi_r,
                   "message_id": mid, "udp": payload.hex()}
            with open(out, "w") as f:
                json.dump(req, f)
            print("IKE_AUTH request %s:%d -> %s:%d, SPIs %s/%s, message ID %d, %d bytes of IKE"
                  % (s, sport, d, dport, spi_i, spi_r, mid, len(ike)))
            return 0
    print("no IKE_AUTH request from %s in %s" % (src, pcap))
    return 1


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def ipv4_udp(src, dst, sport, dport, payload):
    """An IPv4 packet (DF, TTL 64) holding one UDP datagram, checksums
    computed for the (forged) source."""
    s, d = socket.inet_aton(src), socket.inet_aton(dst)
    ulen = 8 + len(payload)
    pseudo = s + d + struct.pack("!BBH", 0, 17, ulen)
    csum = checksum(pseudo + struct.pack("!HHHH", sport, dport, ulen, 0) + payload) or 0xFFFF
    udp = struct.pack("!HHHH", sport, dport, ulen, csum) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + ulen, 0, 0x4000, 64, 17, 0, s, d)
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    return ip + udp


def inject(request, src, count, seconds):
    with open(request) as f:
        req = json.load(f)
    packet = ipv4_udp(src, req["dst"], req["sport"], req["dport"], bytes.fromhex(req["udp"]))
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_HDRINCL, 1)
    gap = seconds / max(count - 1, 1)
    start = time.time()
    for i in range(count):
        delay = start + i * gap - time.time()
        if delay > 0:
            time.sleep(delay)
        sock.sendto(packet, (req["dst"], 0))
    end = time.time()
    print("burst %.6f %.6f %d" % (start, end, count))
    return 0


def answers(pcap, request, src, dst, start, end):
    with open(request) as f:
        req = json.load(f)
    n = 0
    for t, s, d, _sport, _dport, _payload, ike in ike_datagrams(pcap):
        spi_i, spi_r, exch, response, mid = header(ike)
        if (s == src and d == dst and start <= t <= end and response and exch == IKE_AUTH
                and (spi_i, spi_r, mid) == (req["spi_i"], req["spi_r"], req["message_id"])):
            n += 1
    print(n)
    return 0


def main(argv):
    if len(argv) == 4 and argv[0] == "extract":
        return extract(*argv[1:])
    if len(argv) == 5 and argv[0] == "inject":
        return inject(argv[1], argv[2], int(argv[3]), float(argv[4]))
    if len(argv) == 7 and argv[0] == "answers":
        return answers(argv[1], argv[2], argv[3], argv[4], float(argv[5]), float(argv[6]))
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
