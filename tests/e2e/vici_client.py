#!/usr/bin/env python3
"""A vici client no one here wrote: strongSwan's `vici` package (PyPI), for
tests/e2e/vici.sh against flowsec's vici socket.

  vici_client.py events SOCKET OUT SECONDS   ike-updown/child-updown/ike-rekey/
                                             child-rekey to OUT (a JSON line each)
  vici_client.py counters SOCKET             get-counters and list-sas as JSON
  vici_client.py command SOCKET NAME         any command (flowsec-stats …), its
                                             answer as JSON
  vici_client.py hostile SOCKET              an unknown command (CMD_UNKNOWN
                                             expected), then malformed frames
                                             (the connection closed expected)
"""
import json
import socket
import struct
import sys
import time

import vici


def session(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return vici.Session(s)


def text(v):
    """vici values as JSON: bytes decoded, lists and sections kept."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list):
        return [text(i) for i in v]
    if isinstance(v, dict):
        return {k: text(i) for k, i in v.items()}
    return v


def cmd_events(path, out, seconds):
    s = session(path)
    kinds = ["ike-updown", "child-updown", "ike-rekey", "child-rekey"]
    end = time.time() + float(seconds)
    with open(out, "a") as f:
        print("listening", flush=True)
        try:
            for label, event in s.listen(kinds, timeout=1):
                if label is None:
                    if time.time() > end:
                        break
                    continue
                f.write(json.dumps({"event": label.decode(), "body": text(event)}) + "\n")
                f.flush()
                if time.time() > end:
                    break
        except Exception as e:  # the daemon went away: what was seen stays
            print("events: %s" % e, file=sys.stderr)
    return 0


def cmd_counters(path):
    s = session(path)
    counters = text(s.get_counters())
    named = text(s.get_counters({"name": "gw"}))
    sas = [text(sa) for sa in s.list_sas()]
    print(json.dumps({"counters": counters, "named": named, "sas": sas,
                      "version": text(s.version())}))
    return 0


def cmd_command(path, name):
    print(json.dumps(text(session(path).request(name))))
    return 0


def frame(packet):
    return struct.pack(">I", len(packet)) + packet


def closed(sock, seconds=3.0):
    """Whether the server closes `sock` within `seconds`."""
    sock.settimeout(seconds)
    try:
        while True:
            if sock.recv(4096) == b"":
                return True
    except socket.timeout:
        return False
    except OSError:
        return True


def cmd_hostile(path):
    ok = True
    # An unknown command: CMD_UNKNOWN (2), the connection stays usable.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    name = b"no-such-command"
    s.sendall(frame(bytes([0, len(name)]) + name))
    s.settimeout(3)
    head = s.recv(5)
    if len(head) < 5 or head[4] != 2:
        print("unknown command: expected CMD_UNKNOWN, got %r" % head)
        ok = False
    else:
        print("unknown command: CMD_UNKNOWN")
    name = b"version"
    s.sendall(frame(bytes([0, len(name)]) + name))
    head = s.recv(5)
    print("then version: packet type %s" % (head[4] if len(head) == 5 else "none"))
    ok = ok and len(head) == 5 and head[4] == 1
    s.close()
    cases = {
        "an unknown packet type": frame(b"\x99"),
        "an element cut short": frame(bytes([0, 7]) + b"version" + b"\x03\x05ab"),
        "a list item outside a list": frame(bytes([0, 7]) + b"version" + b"\x05\x00\x01x"),
        "a frame over 512 KiB": struct.pack(">I", 512 * 1024 + 1) + b"\x00" * 64,
        "a response from the client": frame(b"\x01"),
    }
    for what, data in cases.items():
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(path)
        c.sendall(data)
        shut = closed(c)
        print("%s: %s" % (what, "closed" if shut else "NOT closed"))
        ok = ok and shut
        c.close()
    # The daemon answers the next client as before.
    v = text(session(path).version())
    print("then a new client: version %s %s" % (v.get("daemon"), v.get("version")))
    return 0 if ok and v.get("daemon") else 1


def main():
    a = sys.argv[1:]
    if a[:1] == ["events"] and len(a) == 4:
        return cmd_events(a[1], a[2], a[3])
    if a[:1] == ["counters"] and len(a) == 2:
        return cmd_counters(a[1])
    if a[:1] == ["command"] and len(a) == 3:
        return cmd_command(a[1], a[2])
    if a[:1] == ["hostile"] and len(a) == 2:
        return cmd_hostile(a[1])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
