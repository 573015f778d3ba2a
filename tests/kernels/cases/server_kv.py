#!/usr/bin/python3
"""A key-value client for the guest's real-server cases (redis, memcached):
loads known data, writes until the server is frozen and reconnects once told
to, and checks every key against what the writes that were acknowledged make
of it. Plain sockets, the servers' own protocols (RESP, memcached's text
protocol): nothing to install.

  server_kv.py PROTO load ADDR KEYS HOT SIZE [LAST]
      keys key:0 .. key:KEYS-1, SIZE bytes each, as the writer's first LAST
      writes leave them (default 0: as loaded); prints "loaded N keys"
  server_kv.py PROTO writer ADDRS KEYS HOT SIZE LOG GO
      write seq 1, 2, ... to HOT of the keys, spread through them, one
      request at a time, until killed; the Kth lost connection: "lost K
      after N acknowledged" in LOG; once the file GO.K exists, connect again
      to the first of ADDRS (a,b,...) that answers, "reconnected K to ADDR",
      and go on: "acknowledged N, 50 after reconnecting K" after 50 more
  server_kv.py PROTO verify ADDR KEYS HOT SIZE ACKED
      every key must be as ACKED writes left it; the one write in flight at
      the freeze (ACKED + 1) may or may not have been applied. Prints
      "verified N keys, last write W" (W: ACKED or ACKED + 1) or the keys
      that differ, and exits 1 then
PROTO: redis or memcached; ADDR: HOST:PORT.
"""
import os
import socket
import sys
import time


def value(i, s, size):
    head = b"%d:%d:" % (i, s)
    return head + b"v" * (size - len(head))


def hot_key(s, keys, hot):
    """the key write s goes to: HOT keys spread evenly over all of them"""
    return ((s % hot) * keys) // hot


def state_at(keys, hot, last):
    """{key index: seq of the write that last set it} for writes 1..last
    (keys not in it are as loaded)"""
    st = {}
    if last <= 0:
        return st
    for j in range(hot):
        # the last s <= last with s % hot == j, s >= 1
        s = last - ((last - j) % hot)
        if s >= 1:
            st[(j * keys) // hot] = s
    return st


class Conn:
    def __init__(self, addr, timeout=None):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=10)
        self.s.settimeout(timeout)
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def _fill(self):
        d = self.s.recv(1 << 20)
        if not d:
            raise ConnectionError("closed by the server")
        self.buf += d

    def line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        l, self.buf = self.buf.split(b"\r\n", 1)
        return l

    def exact(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        d, self.buf = self.buf[:n], self.buf[n + 2:]
        return d


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Redis:
    def __init__(self, addr, timeout=None):
        self.c = Conn(addr, timeout)

    def reply(self):
        l = self.c.line()
        t = l[:1]
        if t == b"+" or t == b":":
            return l[1:]
        if t == b"-":
            raise RuntimeError(l.decode(errors="replace"))
        if t == b"$":
            n = int(l[1:])
            return None if n < 0 else self.c.exact(n)
        raise RuntimeError("unexpected reply %r" % l[:80])

    def set_many(self, items):
        self.c.send(b"".join(resp(b"SET", k, v) for k, v in items))
        for _ in items:
            self.reply()

    def get_many(self, ks):
        self.c.send(b"".join(resp(b"GET", k) for k in ks))
        return [self.reply() for _ in ks]


class Memcached:
    def __init__(self, addr, timeout=None):
        self.c = Conn(addr, timeout)

    def set_many(self, items):
        self.c.send(b"".join(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v) for k, v in items))
        for _ in items:
            r = self.c.line()
            if r != b"STORED":
                raise RuntimeError("set: %r" % r[:80])

    def get_many(self, ks):
        self.c.send(b"get " + b" ".join(ks) + b"\r\n")
        got = {}
        while True:
            l = self.c.line()
            if l == b"END":
                break
            _, k, _, n = l.split()[:4]
            got[k] = self.c.exact(int(n))
        return [got.get(k) for k in ks]


def client(proto, addr, timeout=None):
    return (Redis if proto == "redis" else Memcached)(addr, timeout)


def key(i):
    return b"key:%d" % i


def load(proto, addr, keys, hot, size, last=0):
    c = client(proto, addr)
    st = state_at(keys, hot, last)
    for a in range(0, keys, 500):
        c.set_many([(key(i), value(i, st.get(i, 0), size)) for i in range(a, min(a + 500, keys))])
    print("loaded %d keys" % keys, flush=True)


def writer(proto, addrs, keys, hot, size, log, go):
    out = open(log, "a", buffering=1)
    addrs = addrs.split(",")
    c = client(proto, addrs[0])
    out.write("writing\n")
    s = losses = since = 0
    while True:
        i = hot_key(s + 1, keys, hot)
        try:
            c.set_many([(key(i), value(i, s + 1, size))])
        except (OSError, ConnectionError, RuntimeError) as e:
            losses += 1
            out.write("lost %d after %d acknowledged (%s)\n" % (losses, s, e))
            # the write that was in flight is sent again: the same value
            while not os.path.exists("%s.%d" % (go, losses)):
                time.sleep(0.2)
            end = time.time() + 120
            c = None
            while c is None and time.time() < end:
                for a in addrs:
                    try:
                        c = client(proto, a, timeout=60)
                        out.write("reconnected %d to %s\n" % (losses, a))
                        break
                    except OSError:
                        pass
                else:
                    time.sleep(0.5)
            if c is None:
                out.write("cannot reconnect to %s\n" % ",".join(addrs))
                return 1
            since = 0
            continue
        s += 1
        since += 1
        if losses and since == 50:
            out.write("acknowledged %d, 50 after reconnecting %d\n" % (s, losses))
        if s % 1000 == 0:
            out.write("acknowledged %d\n" % s)


def verify(proto, addr, keys, hot, size, acked):
    c = client(proto, addr, timeout=60)
    nxt = hot_key(acked + 1, keys, hot)
    got_next = c.get_many([key(nxt)])[0]
    last = acked + 1 if got_next == value(nxt, acked + 1, size) else acked
    st = state_at(keys, hot, last)
    bad = []
    for a in range(0, keys, 200):
        ks = list(range(a, min(a + 200, keys)))
        for i, v in zip(ks, c.get_many([key(i) for i in ks])):
            if v != value(i, st.get(i, 0), size):
                bad.append("key:%d %s" % (i, "missing" if v is None else repr(v[:24])))
    if bad:
        print("%d of %d keys differ: %s" % (len(bad), keys, ", ".join(bad[:5])))
        return 1
    print("verified %d keys, last write %d" % (keys, last))
    return 0


def main(a):
    proto, cmd = a[0], a[1]
    if cmd == "load":
        load(proto, a[2], int(a[3]), int(a[4]), int(a[5]), int(a[6]) if len(a) > 6 else 0)
        return 0
    if cmd == "writer":
        return writer(proto, a[2], int(a[3]), int(a[4]), int(a[5]), a[6], a[7])
    if cmd == "verify":
        return verify(proto, a[2], int(a[3]), int(a[4]), int(a[5]), int(a[6]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
