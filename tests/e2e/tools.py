#!/usr/bin/env python3
"""Small traffic tools for the namespace end-to-end tests (tests/e2e/*.sh).

Standard library only, so they run wherever python3 does; lib.sh calls them
inside a namespace with `ip netns exec`. Subcommands:

  ping DST [--count N] [--interval S] [--timeout S]
      ICMP echo over a raw socket (needs root; stands in for ping(8), which
      this project's machines lack). Exit 0 only if every echo is answered.
  recv --bind ADDR --port P --result FILE [--timeout S] [--no-hash]
      Accept one TCP connection, read to EOF, write {"bytes", "sha256",
      "seconds"} as JSON to FILE, then close. Prints "recv: listening" when
      ready. --no-hash: count only (sha256 null), for throughput runs.
  send --to ADDR --port P (--bytes N | --seconds S) [--timeout S]
      Connect, send N pseudo-random bytes that start with MARKER, half-close,
      wait for the receiver to close, print {"bytes", "sha256", "seconds",
      "mbit_s"}. --seconds S instead: send for S seconds, repeating one
      pseudo-random 256 KiB block (no hashing, so Python stays out of the
      way of the measurement; sha256 null), then the same half-close.
  sniff --iface IF --out FILE --stop FILE
      AF_PACKET capture of every frame on IF (both directions) until FILE
      --stop exists; writes a JSON summary: ESP flows by (src, dst, spi),
      non-ESP IP packets, and packets carrying plaintext (inner addresses in
      the outer header, or MARKER anywhere in the frame). Prints
      "sniff: ready" when capturing.
  standin
      Print "flowsec: up" on stderr and sleep until SIGTERM/SIGINT (exit 0):
      the daemon's place in FLOWSEC_E2E_STANDIN=1 runs.
  trickle --to ADDR --port P [--every S] [--seconds S] [--reconnect]
      A slow client: connect and send a request head that never ends, one
      byte every S (0.15) seconds, until the server hangs up (then connect
      again, with --reconnect) or --seconds (30) pass; a JSON line per
      connection: {"connection", "bytes", "hung_up_after"} (seconds; null
      if it did not). "trickle: connected" on stderr at each connect.
  drops [--stats FILE]
      This namespace's drop counters as "key value" lines: UDP's and IP's
      error counters (/proc/net/snmp) and every link's rx/tx_dropped; with
      --stats, also the nonzero drops of a `flowsec ctl stats --json` saved
      in FILE. Two snapshots diffed (lib.sh drops_between) say where packets
      a check lost went.
  sas strongswan|flowsec [EXPR] [--conn NAME] [--child NAME] [--gw GW] [--show]
      One gateway's IKE SAs, from `swanctl --list-sas --raw` or `flowsec
      ctl sas --json` on stdin, in one form (flowsec's names); printed, or
      EXPR evaluated over them (cmd_sas): tests/e2e/ike_lib.sh's sas and q.
"""
import argparse
import hashlib
import ipaddress
import json
import os
import random
import re
import signal
import socket
import struct
import sys
import time

MARKER = b"FLOWSEC-E2E-PLAINTEXT-MARKER"
# Inner (protected) prefixes of the gateway topology: seeing these in an
# outer header on the transit link means a packet left unprotected.
INNER_NETS = [ipaddress.ip_network(n) for n in
              ("10.1.0.0/16", "10.2.0.0/16", "2001:db8:1::/64", "2001:db8:2::/64")]


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def cmd_ping(a) -> int:
    info = socket.getaddrinfo(a.dst, None, type=socket.SOCK_RAW)[0]
    fam, dst = info[0], info[4][0]
    if fam == socket.AF_INET6:
        # The kernel fills in the ICMPv6 checksum on raw ICMPv6 sockets and
        # hands us no IPv6 header on receive.
        s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
        req, rep = 128, 129
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        req, rep = 8, 0
    ident = os.getpid() & 0xFFFF
    got = 0
    for seq in range(1, a.count + 1):
        payload = MARKER + struct.pack("!d", time.time()) + bytes(range(20))
        hdr = struct.pack("!BBHHH", req, 0, 0, ident, seq)
        ck = checksum(hdr + payload) if fam == socket.AF_INET else 0
        pkt = struct.pack("!BBHHH", req, 0, ck, ident, seq) + payload
        t0 = time.monotonic()
        s.sendto(pkt, (dst, 0))
        ok = False
        while not ok:
            left = a.timeout - (time.monotonic() - t0)
            if left <= 0:
                break
            s.settimeout(left)
            try:
                data, addr = s.recvfrom(65535)
            except socket.timeout:
                break
            icmp = data[(data[0] & 0x0F) * 4:] if fam == socket.AF_INET else data
            if ipaddress.ip_address(addr[0].split("%")[0]) != ipaddress.ip_address(dst) \
                    or len(icmp) < 8:
                continue
            typ, _code, _ck, rid, rseq = struct.unpack("!BBHHH", icmp[:8])
            if typ == rep and rid == ident and rseq == seq:
                ok = True
                got += 1
                print("%d bytes from %s: icmp_seq=%d time=%.2f ms" % (
                    len(icmp), dst, seq, (time.monotonic() - t0) * 1000))
        if not ok:
            print("no reply from %s: icmp_seq=%d" % (dst, seq))
        if seq < a.count:
            time.sleep(a.interval)
    print("%d packets transmitted, %d received" % (a.count, got))
    return 0 if got == a.count else 1


def cmd_recv(a) -> int:
    srv = socket.socket(socket.AF_INET6 if ":" in a.bind else socket.AF_INET)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((a.bind, a.port))
    srv.listen(1)
    srv.settimeout(a.timeout)
    print("recv: listening on %s:%d" % (a.bind, a.port), flush=True)
    conn, peer = srv.accept()
    conn.settimeout(a.timeout)
    h = None if a.no_hash else hashlib.sha256()
    n = 0
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    t0 = time.monotonic()
    while True:
        k = conn.recv_into(buf)
        if k == 0:
            break
        if h is not None:
            h.update(view[:k])
        n += k
    res = {"bytes": n, "sha256": h.hexdigest() if h is not None else None,
           "seconds": round(time.monotonic() - t0, 3), "peer": peer[0]}
    with open(a.result + ".tmp", "w") as f:
        json.dump(res, f)
    os.rename(a.result + ".tmp", a.result)
    print("recv: " + json.dumps(res), flush=True)
    conn.close()
    return 0


def cmd_send(a) -> int:
    if a.seconds is not None:
        return send_timed(a)
    rng = random.Random(a.seed)
    s = socket.create_connection((a.to, a.port), timeout=a.timeout)
    s.settimeout(a.timeout)
    h = hashlib.sha256()
    left = a.bytes
    first = (MARKER + b"-") * 64
    t0 = time.monotonic()
    while left > 0:
        chunk = first if first else rng.randbytes(256 * 1024)
        first = b""
        chunk = chunk[:left]
        s.sendall(chunk)
        h.update(chunk)
        left -= len(chunk)
    s.shutdown(socket.SHUT_WR)
    while s.recv(4096):  # the receiver closes once it has hashed everything
        pass
    secs = time.monotonic() - t0
    s.close()
    print(json.dumps({"bytes": a.bytes, "sha256": h.hexdigest(),
                      "seconds": round(secs, 3),
                      "mbit_s": round(a.bytes * 8 / secs / 1e6, 1)}))
    return 0


def send_timed(a) -> int:
    block = (MARKER + b"-") * 64
    block += random.Random(a.seed).randbytes(256 * 1024 - len(block))
    view = memoryview(block)
    s = socket.create_connection((a.to, a.port), timeout=a.timeout)
    s.settimeout(a.timeout)
    sent = 0
    t0 = time.monotonic()
    end = t0 + a.seconds
    while time.monotonic() < end:
        s.sendall(view)
        sent += len(view)
    s.shutdown(socket.SHUT_WR)
    while s.recv(4096):  # the receiver closes once it has read everything
        pass
    secs = time.monotonic() - t0
    s.close()
    print(json.dumps({"bytes": sent, "sha256": None, "seconds": round(secs, 3),
                      "mbit_s": round(sent * 8 / secs / 1e6, 1)}))
    return 0


def cmd_sniff(a) -> int:
    ETH_P_ALL = 0x0003
    SOL_PACKET, PACKET_STATISTICS = 263, 6
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    try:
        s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
    s.bind((a.iface, 0))
    s.settimeout(0.2)
    s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)  # reset counters
    esp = {}        # "src>dst spi" -> count
    other = {}      # "v4 src>dst proto N" -> count
    leaks = []      # first few plaintext sightings
    nleaks = 0
    frames = 0
    non_ip = 0
    buf = bytearray(1 << 17)

    def leak(why):
        nonlocal nleaks
        nleaks += 1
        if len(leaks) < 20:
            leaks.append(why)

    first = {}      # non-ESP key -> when first seen
    t_start = time.monotonic()
    # The first --pcap-max frames go to a pcap (Ethernet link type) for
    # tshark to decrypt.
    pcap = open(a.pcap, "wb") if a.pcap else None
    if pcap:
        pcap.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    print("sniff: ready on %s" % a.iface, flush=True)
    while not os.path.exists(a.stop):
        try:
            n = s.recv_into(buf)
        except socket.timeout:
            continue
        frames += 1
        pkt = bytes(buf[:n])
        if pcap and frames <= a.pcap_max:
            now = time.time()
            pcap.write(struct.pack("<IIII", int(now), int(now % 1 * 1e6), n, n) + pkt)
            if frames == a.pcap_max:
                pcap.close()
                pcap = None
        if MARKER in pkt:
            leak("marker in frame of %d bytes" % n)
        if n < 14:
            continue
        etype = struct.unpack("!H", pkt[12:14])[0]
        ip = pkt[14:]
        if etype == 0x0800 and len(ip) >= 20:
            proto = ip[9]
            ihl = (ip[0] & 0x0F) * 4
            src, dst = ipaddress.ip_address(ip[12:16]), ipaddress.ip_address(ip[16:20])
        elif etype == 0x86DD and len(ip) >= 40:
            proto = ip[6]  # first next header only; enough for this topology
            ihl = 40
            src, dst = ipaddress.ip_address(ip[8:24]), ipaddress.ip_address(ip[24:40])
        else:
            non_ip += 1
            continue
        if any(x in net for x in (src, dst) for net in INNER_NETS
               if x.version == net.version):
            leak("plaintext %s > %s proto %d" % (src, dst, proto))
        if proto == 50 and len(ip) >= ihl + 8:
            spi = struct.unpack("!I", ip[ihl:ihl + 4])[0]
            key = "%s>%s spi=0x%x" % (src, dst, spi)
            esp[key] = esp.get(key, 0) + 1
        elif proto == 51 and len(ip) >= ihl + 8:
            # AH (RFC 4302): the SPI follows next header, length, reserved.
            spi = struct.unpack("!I", ip[ihl + 4:ihl + 8])[0]
            key = "%s>%s spi=0x%x" % (src, dst, spi)
            esp[key] = esp.get(key, 0) + 1
        elif (proto == 17 and len(ip) >= ihl + 16
              and 4500 in struct.unpack("!HH", ip[ihl:ihl + 4])
              and ip[ihl + 8:ihl + 12] != b"\0\0\0\0"):
            # ESP in UDP (RFC 3948): the SPI follows the UDP header.
            spi = struct.unpack("!I", ip[ihl + 8:ihl + 12])[0]
            key = "%s>%s spi=0x%x udp" % (src, dst, spi)
            esp[key] = esp.get(key, 0) + 1
        elif src.version == 6 and (src.is_link_local or src.is_unspecified
                                   or dst.is_link_local or
                                   (dst.is_multicast and (dst.packed[1] & 0x0F) <= 2)
                                   or (proto == 58 and len(ip) > 40
                                       and ip[40] in (130, 131, 132, 133, 134,
                                                      135, 136, 137, 143))):
            # link-scope IPv6 housekeeping (ND incl. unicast NUD probes, MLD,
            # DAD): not site traffic
            other_key = "v6 link-local (nd/mld)"
            other[other_key] = other.get(other_key, 0) + 1
        else:
            key = "%s>%s proto=%d" % (src, dst, proto)
            if proto == 1 and src.version == 4 and len(ip) >= ihl + 8:
                key += " icmp type=%d code=%d" % (ip[ihl], ip[ihl + 1])
                q = ip[ihl + 8:]
                if ip[ihl] in (3, 4, 5, 11, 12) and len(q) >= 20:
                    key += " (about proto=%d %s>%s)" % (
                        q[9], ipaddress.ip_address(q[12:16]), ipaddress.ip_address(q[16:20]))
            other[key] = other.get(key, 0) + 1
            first.setdefault(key, "frame %d at %.3f s" % (frames, time.monotonic() - t_start))
    if pcap:
        pcap.close()
    st = s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
    packets, drops = struct.unpack("II", st)
    res = {"iface": a.iface, "frames": frames, "kernel_packets": packets,
           "kernel_drops": drops, "non_ip": non_ip, "esp": esp, "other": other, "other_first_seen": first,
           "leaks": nleaks, "leak_examples": leaks}
    with open(a.out + ".tmp", "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
    os.rename(a.out + ".tmp", a.out)
    return 0


def cmd_hostile(a) -> int:
    """Send hostile packets at a gateway: each kind the data plane must
    drop by name while carrying on (ARCHITECTURE.md "Counters, not logs":
    every drop has a counter)."""
    import os
    fam = socket.AF_INET6 if ":" in a.dst else socket.AF_INET
    sent = {}
    def raw(proto, payload):
        s = socket.socket(fam, socket.SOCK_RAW, proto)
        if fam == socket.AF_INET6 and proto == socket.IPPROTO_UDP:
            # UDP over IPv6 needs a checksum (the receiver drops zero):
            # IPV6_CHECKSUM (7) has the kernel fill the field at offset 6.
            s.setsockopt(socket.IPPROTO_IPV6, 7, 6)
        s.sendto(payload, (a.dst, 0))
        s.close()
    spi = int(a.spi, 16)
    def udp(payload):
        # ESP in UDP from port 4500 (RFC 3948), the header written here so
        # that the source port is 4500 even though the gateway holds it;
        # checksum 0, as RFC 3948 allows over IPv4 (filled in over IPv6).
        raw(socket.IPPROTO_UDP, struct.pack("!HHHH", 4500, 4500, 8 + len(payload), 0) + payload)
    kinds = {
        # unknown SPI, well-formed length
        "esp_unknown_spi": lambda: raw(50, struct.pack("!II", 0xdead0000 | os.getpid() & 0xffff, 1) + os.urandom(64)),
        # the real SPI with garbage: fails the ICV
        "esp_bad_icv": lambda: raw(50, struct.pack("!II", spi, 0x7fffffff) + os.urandom(80)),
        # shorter than an ESP header
        "esp_truncated": lambda: raw(50, os.urandom(5)),
        "ah_garbage": lambda: raw(51, os.urandom(40)),
        "ah_truncated": lambda: raw(51, b"\x00\x04"),
        # the real SPI under AH, a well-formed header with a forged ICV
        # (HMAC-96: 12 bytes; length field (24 / 4) - 2 = 4)
        "ah_bad_icv": lambda: raw(51, struct.pack("!BBHII", 4, 4, 0, spi, 0x7fffffff) + os.urandom(12 + 40)),
    }
    if a.udp:
        kinds.update({
            "udp_unknown_spi": lambda: udp(struct.pack("!II", 0xdead0000 | os.getpid() & 0xffff, 1) + os.urandom(64)),
            "udp_bad_icv": lambda: udp(struct.pack("!II", spi, 0x7fffffff) + os.urandom(80)),
            # shorter than an ESP header, and not a keepalive
            "udp_truncated": lambda: udp(b"\x12\x34\x56"),
        })
    for _ in range(a.count):
        for name, send in kinds.items():
            send()
            sent[name] = sent.get(name, 0) + 1
    print(json.dumps(sent))
    return 0


def cmd_inject(a) -> int:
    """Put plaintext UDP frames with a forged source straight onto a link
    (AF_PACKET), addressed to the next hop's MAC: traffic that should have
    come through the tunnel and must not get past the gateway."""
    src, dst = ipaddress.ip_address(a.src), ipaddress.ip_address(a.dst)
    mac = bytes.fromhex(a.dst_mac.replace(":", ""))
    own = bytes.fromhex(open("/sys/class/net/%s/address" % a.iface).read().strip().replace(":", ""))
    payload = MARKER + b" injected plaintext"
    udp = struct.pack("!HHHH", 40000, a.port, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0, src.packed, dst.packed)
    csum = sum(struct.unpack("!10H", ip))
    while csum >> 16:
        csum = (csum & 0xFFFF) + (csum >> 16)
    ip = ip[:10] + struct.pack("!H", ~csum & 0xFFFF) + ip[12:]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((a.iface, 0))
    for _ in range(a.count):
        s.send(mac + own + b"\x08\x00" + ip + udp)
    print(json.dumps({"injected": a.count}))
    return 0


def cmd_udp_count(a) -> int:
    """Count UDP datagrams (and their bytes) arriving at --bind:--port for
    --seconds."""
    family = socket.AF_INET6 if ":" in a.bind else socket.AF_INET
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.bind((a.bind, a.port))
    s.settimeout(0.2)
    print("udp-count: listening", file=sys.stderr, flush=True)
    n, total, end = 0, 0, time.monotonic() + a.seconds
    while time.monotonic() < end:
        try:
            total += len(s.recv(65535))
            n += 1
        except socket.timeout:
            pass
    print(json.dumps({"received": n, "bytes": total}))
    return 0


SNMP_DROPS = {
    "Ip": ("InDiscards", "InHdrErrors", "OutDiscards", "OutNoRoutes", "ReasmFails"),
    "Udp": ("InErrors", "RcvbufErrors", "SndbufErrors", "NoPorts"),
}


def cmd_drops(a) -> int:
    """Print this namespace's drop counters, one "key value" per line."""
    rows = {}
    with open("/proc/net/snmp") as f:
        lines = f.read().splitlines()
    for head, vals in zip(lines[::2], lines[1::2]):
        proto, names = head.split(":", 1)
        for name, val in zip(names.split(), vals.split(":", 1)[1].split()):
            if name in SNMP_DROPS.get(proto, ()):
                rows[f"{proto}.{name}"] = int(val)
    for dev in sorted(os.listdir("/sys/class/net")):
        for stat in ("rx_dropped", "tx_dropped"):
            try:
                with open(f"/sys/class/net/{dev}/statistics/{stat}") as f:
                    rows[f"{dev}.{stat}"] = int(f.read())
            except OSError:
                pass
    if a.stats:
        try:
            with open(a.stats) as f:
                total = json.load(f)["total"]
            for name, val in total.get("drops", {}).items():
                rows[f"flowsec.{name}"] = val
        except (OSError, ValueError, KeyError):
            pass
    for key, val in rows.items():
        print(key, val)
    return 0


def cmd_trickle(a) -> int:
    """A slow client: one byte of a never-ending request head every
    --every seconds, until the server hangs up (then again, with
    --reconnect) or --seconds pass; a JSON line per connection."""
    import select
    head = b"GET /metrics HTTP/1.1\r\nHost: " + a.to.encode() + b"\r\nX-Slow: "
    start, k = time.monotonic(), 0
    while time.monotonic() - start < a.seconds:
        k += 1
        s = socket.create_connection((a.to, a.port), timeout=5)
        print("trickle: connected", file=sys.stderr, flush=True)
        t, sent, hung_up = time.monotonic(), 0, None
        while time.monotonic() - start < a.seconds:
            try:
                s.send(head[sent:sent + 1] or b"a")
            except OSError:
                hung_up = time.monotonic() - t
                break
            sent += 1
            readable, _, _ = select.select([s], [], [], a.every)
            if readable:
                try:
                    s.recv(4096)
                except OSError:
                    pass
                hung_up = time.monotonic() - t
                break
        s.close()
        print(json.dumps({"connection": k, "bytes": sent, "hung_up_after": hung_up}), flush=True)
        if hung_up is None or not a.reconnect:
            break
    return 0


def datagram(i: int, size: int) -> bytes:
    """Datagram i of a numbered stream: its number, then a pattern that
    depends on it, so a datagram put together wrongly does not pass."""
    head = struct.pack("!I", i)
    body = bytes((i * 7 + k) & 0xFF for k in range(size - 4))
    return head + body


def cmd_dgram_send(a) -> int:
    """Send --count datagrams of --size bytes to --to:--port, --rate a
    second (large ones leave as IP fragments), --burst at a time back to
    back."""
    family = socket.AF_INET6 if ":" in a.to else socket.AF_INET
    s = socket.socket(family, socket.SOCK_DGRAM)
    for i in range(a.count):
        s.sendto(datagram(i, a.size), (a.to, a.port))
        if (i + 1) % a.burst == 0:
            time.sleep(a.burst / a.rate)
    return 0


def cmd_dgram_recv(a) -> int:
    """Receive the stream cmd_dgram_send sends for --seconds after the first
    datagram (or until --count arrived); print how many arrived whole."""
    family = socket.AF_INET6 if ":" in a.bind else socket.AF_INET
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.bind((a.bind, a.port))
    s.settimeout(0.2)
    print("dgram-recv: listening", file=sys.stderr, flush=True)
    whole, bad, seen = 0, 0, set()
    # The longest silence between two whole datagrams (a tunnel that
    # moves or rekeys shows there), and the last number that arrived.
    last_at, max_gap, last_i = None, 0.0, -1
    end = time.monotonic() + a.seconds
    while time.monotonic() < end and len(seen) < a.count:
        try:
            d = s.recv(65535)
        except socket.timeout:
            continue
        i = struct.unpack("!I", d[:4])[0] if len(d) >= 4 else -1
        if len(d) == a.size and d == datagram(i, a.size) and i not in seen:
            now = time.monotonic()
            if last_at is not None:
                max_gap = max(max_gap, now - last_at)
            last_at, last_i = now, max(last_i, i)
            seen.add(i)
            whole += 1
        else:
            bad += 1
    missing = [i for i in range(a.count) if i not in seen][:10]
    print(json.dumps({"whole": whole, "bad": bad, "missing": missing,
                      "lost": a.count - whole, "max_gap_ms": round(max_gap * 1000, 1),
                      "last": last_i}), flush=True)
    return 0


def cmd_standin(_a) -> int:
    def bye(*_):
        print("flowsec (stand-in): exiting", file=sys.stderr, flush=True)
        sys.exit(0)
    signal.signal(signal.SIGTERM, bye)
    signal.signal(signal.SIGINT, bye)
    print("flowsec: up (stand-in: plain forwarding)", file=sys.stderr, flush=True)
    while True:
        time.sleep(3600)


# --- IKE SAs (tests/e2e/ike_lib.sh's sas and q) ------------------------------

def parse_vici_raw(text):
    """swanctl --list-sas --raw: 'list-sa event {name {k=v sec {..} list [a b]}}'
    a line; the IKE SAs as dicts of vici's names, child-sas a list."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("list-sa event"):
            continue
        toks = re.findall(r"\{|\}|\[|\]|[^\s{}\[\]]+", line[len("list-sa event"):])

        def section(i):
            d = {}
            while i < len(toks):
                t = toks[i]
                if t == "}":
                    return d, i + 1
                if i + 1 < len(toks) and toks[i + 1] == "{":
                    d[t], i = section(i + 2)
                elif i + 1 < len(toks) and toks[i + 1] == "[":
                    # `list [a b]`, or swanctl's `list=[a b]`.
                    j = toks.index("]", i + 2)
                    d[t.rstrip("=")] = toks[i + 2:j]
                    i = j + 1
                elif "=" in t:
                    k, v = t.split("=", 1)
                    i += 1
                    # A value with spaces (a DN identity, "C=CH, O=x,
                    # CN=y") goes on in tokens that are no vici key
                    # (those are lower case with dashes).
                    while (i < len(toks) and toks[i] not in "{}[]"
                           and not re.match(r"[a-z][a-z0-9-]*=", toks[i])
                           and not (i + 1 < len(toks) and toks[i + 1] in ("{", "["))):
                        v += " " + toks[i]
                        i += 1
                    d[k] = v
                else:
                    i += 1
            return d, i

        top, _ = section(1) if toks and toks[0] == "{" else section(0)
        for name, sa in top.items():
            if isinstance(sa, dict):
                sa.setdefault("name", name)
                kids = sa.get("child-sas", {})
                sa["child-sas"] = ([dict(c, name=c.get("name", k)) for k, c in kids.items()]
                                   if isinstance(kids, dict) else [])
                out.append(sa)
    return out


def hexspi(v):
    """An SPI or CPI as lower-case hex without leading zeros ('-' for none)."""
    if v is None:
        return "-"
    if isinstance(v, int):
        return "%x" % v
    s = str(v).lower()
    s = s[2:] if s.startswith("0x") else s
    return s.lstrip("0") or "0"


def num(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def sas_normalised(impl, text):
    """One gateway's IKE SAs, read from `swanctl --list-sas --raw`
    (strongswan) or `flowsec ctl sas --json` (flowsec), with the names of
    flowsec's `ctl sas --json` and the SPIs in one form (hexspi); the
    states upper case; nat_local and nat_remote (strongSwan tells them
    apart) None for flowsec."""
    out = []
    if impl == "strongswan":
        for sa in parse_vici_raw(text):
            nl, nr = sa.get("nat-local") == "yes", sa.get("nat-remote") == "yes"
            out.append({
                "name": sa["name"], "state": sa.get("state", "-").upper(),
                "initiator_spi": hexspi(sa.get("initiator-spi")),
                "responder_spi": hexspi(sa.get("responder-spi")),
                "local_host": sa.get("local-host"), "local_port": num(sa.get("local-port")),
                "remote_host": sa.get("remote-host"), "remote_port": num(sa.get("remote-port")),
                "nat": nl or nr or sa.get("nat-any") == "yes" or sa.get("nat-fake") == "yes",
                "nat_local": nl, "nat_remote": nr,
                "local_id": sa.get("local-id"), "remote_id": sa.get("remote-id"),
                "local_vips": sa.get("local-vips") or [],
                "child_sas": [{
                    "name": c["name"], "state": c.get("state", "-").upper(),
                    "spi_in": hexspi(c.get("spi-in")), "spi_out": hexspi(c.get("spi-out")),
                    "cpi_in": c.get("cpi-in"), "cpi_out": c.get("cpi-out"),
                    "encap": c.get("encap") == "yes", "dh_group": c.get("dh-group"),
                    "bytes_in": num(c.get("bytes-in")), "packets_in": num(c.get("packets-in")),
                    "bytes_out": num(c.get("bytes-out")), "packets_out": num(c.get("packets-out")),
                } for c in sa["child-sas"]],
            })
        return out
    for sa in json.loads(text)["ike_sas"]:
        out.append({
            "name": sa["name"], "state": str(sa["state"]).upper(),
            "initiator_spi": hexspi(sa["initiator_spi"]), "responder_spi": hexspi(sa["responder_spi"]),
            "local_host": sa["local_host"], "local_port": sa["local_port"],
            "remote_host": sa["remote_host"], "remote_port": sa["remote_port"],
            "nat": sa["nat"] is True, "nat_local": sa.get("nat_local"), "nat_remote": sa.get("nat_remote"),
            "local_id": (sa.get("local_id") or "").lstrip("@") or None,
            "remote_id": (sa.get("remote_id") or "").lstrip("@") or None,
            "local_vips": sa.get("local_vips") or [],
            "child_sas": [{
                "name": c["name"], "state": str(c["state"]).upper(),
                "spi_in": hexspi(c["spi_in"]), "spi_out": hexspi(c["spi_out"]),
                "cpi_in": c.get("cpi_in"), "cpi_out": c.get("cpi_out"),
                "encap": c["encap"] is True, "dh_group": c.get("dh_group"),
                "bytes_in": c["bytes_in"], "packets_in": c["packets_in"],
                "bytes_out": c["bytes_out"], "packets_out": c["packets_out"],
            } for c in sa["child_sas"]],
        })
    return out


def cmd_sas(a) -> int:
    """Read one gateway's SAs on stdin (sas_normalised). With --show,
    print a line an SA. Without EXPR, print them as `flowsec ctl sas
    --json` would (the IKE stand-in's `ctl sas --json`). With EXPR, a Python expression over sas (all IKE
    SAs), ikes (the ESTABLISHED ones named --conn), ike (that one when
    there is exactly one, else None), child (its INSTALLED Child SA named
    --child when there is exactly one, else None) and gw (--gw): print its
    value (nothing for True); status 1 when it is False or None or
    raises."""
    sas = sas_normalised(a.impl, sys.stdin.read())
    if a.show:
        for s in sas:
            print("IKE %s %s %s %s %s:%s -> %s:%s%s" % (
                s["name"], s["state"], s["initiator_spi"], s["responder_spi"], s["local_host"],
                s["local_port"], s["remote_host"], s["remote_port"], " nat" if s["nat"] else ""))
            for c in s["child_sas"]:
                print("  CHILD %s %s in %s out %s%s, bytes in/out %s/%s, packets in/out %s/%s, dh %s" % (
                    c["name"], c["state"], c["spi_in"], c["spi_out"], " encap" if c["encap"] else "",
                    c["bytes_in"], c["bytes_out"], c["packets_in"], c["packets_out"], c["dh_group"] or "-"))
        return 0
    if a.expr is None:
        print(json.dumps({"ike_sas": sas}))
        return 0
    ikes = [s for s in sas if s["name"] == a.conn and s["state"] == "ESTABLISHED"]
    ike = ikes[0] if len(ikes) == 1 else None
    kids = [c for c in (ike["child_sas"] if ike else [])
            if c["name"] == a.child and c["state"] == "INSTALLED"]
    child = kids[0] if len(kids) == 1 else None
    env = {"sas": sas, "ikes": ikes, "ike": ike, "child": child, "gw": a.gw}
    try:
        v = eval(a.expr, env)
    except Exception as e:  # no such SA (ike or child None), a missing field
        print("sas: %s: %s: %s" % (a.expr, type(e).__name__, e), file=sys.stderr)
        return 1
    if v is None or v is False:
        return 1
    if v is not True:
        print(v)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("ping")
    q.add_argument("dst")
    q.add_argument("--count", type=int, default=3)
    q.add_argument("--interval", type=float, default=0.2)
    q.add_argument("--timeout", type=float, default=2.0)
    q = sub.add_parser("recv")
    q.add_argument("--bind", required=True)
    q.add_argument("--port", type=int, required=True)
    q.add_argument("--result", required=True)
    q.add_argument("--timeout", type=float, default=60.0)
    q.add_argument("--no-hash", action="store_true")
    q = sub.add_parser("send")
    q.add_argument("--to", required=True)
    q.add_argument("--port", type=int, required=True)
    g = q.add_mutually_exclusive_group(required=True)
    g.add_argument("--bytes", type=int)
    g.add_argument("--seconds", type=float)
    q.add_argument("--seed", type=int, default=4301)
    q.add_argument("--timeout", type=float, default=30.0)
    q = sub.add_parser("sniff")
    q.add_argument("--iface", required=True)
    q.add_argument("--out", required=True)
    q.add_argument("--stop", required=True)
    q.add_argument("--pcap", help="write the first --pcap-max frames here")
    q.add_argument("--pcap-max", type=int, default=2000)
    q = sub.add_parser("hostile")
    q.add_argument("dst")
    q.add_argument("--spi", required=True, help="a real SPI at dst, hex")
    q.add_argument("--count", type=int, default=20)
    q.add_argument("--udp", action="store_true", help="ESP in UDP to port 4500 instead of raw ESP/AH")
    q = sub.add_parser("inject")
    q.add_argument("--iface", required=True)
    q.add_argument("--dst-mac", required=True)
    q.add_argument("--src", required=True)
    q.add_argument("--dst", required=True)
    q.add_argument("--port", type=int, default=5002)
    q.add_argument("--count", type=int, default=10)
    q = sub.add_parser("udp-count")
    q.add_argument("--bind", required=True)
    q.add_argument("--port", type=int, default=5002)
    q.add_argument("--seconds", type=float, default=2.0)
    q = sub.add_parser("dgram-send")
    q.add_argument("--to", required=True)
    q.add_argument("--port", type=int, required=True)
    q.add_argument("--size", type=int, default=4000)
    q.add_argument("--count", type=int, default=100)
    q.add_argument("--rate", type=float, default=100.0)
    q.add_argument("--burst", type=int, default=1)
    q = sub.add_parser("dgram-recv")
    q.add_argument("--bind", required=True)
    q.add_argument("--port", type=int, required=True)
    q.add_argument("--size", type=int, default=4000)
    q.add_argument("--count", type=int, default=100)
    q.add_argument("--seconds", type=float, default=10.0)
    q = sub.add_parser("drops")
    q.add_argument("--stats")
    q = sub.add_parser("trickle")
    q.add_argument("--to", required=True)
    q.add_argument("--port", type=int, required=True)
    q.add_argument("--every", type=float, default=0.15)
    q.add_argument("--seconds", type=float, default=30.0)
    q.add_argument("--reconnect", action="store_true")
    sub.add_parser("standin")
    q = sub.add_parser("sas")
    q.add_argument("impl", choices=["strongswan", "flowsec"])
    q.add_argument("expr", nargs="?")
    q.add_argument("--conn", default="gw")
    q.add_argument("--child", default="net")
    q.add_argument("--gw", default="")
    q.add_argument("--show", action="store_true", help="one line an SA, for people")
    a = p.parse_args()
    return {"ping": cmd_ping, "recv": cmd_recv, "send": cmd_send,
            "sniff": cmd_sniff, "hostile": cmd_hostile, "inject": cmd_inject,
            "udp-count": cmd_udp_count, "standin": cmd_standin,
            "dgram-send": cmd_dgram_send, "dgram-recv": cmd_dgram_recv,
            "trickle": cmd_trickle, "drops": cmd_drops, "sas": cmd_sas}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
