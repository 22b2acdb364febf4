#!/usr/bin/python3
"""ctest bench.tcp_proxy: tcp_proxy.py between a real client socket and a real server
socket on loopback passes bytes both ways, holds them (the connection stays open and
silent, a new connection is accepted but not dialled onwards), lets them through after
pass, and closes every connection on cut.

Timing-free: every wait is for a condition (the proxy's state line, bytes arriving) with a
generous deadline. The one negative check ("nothing arrives while held") waits
HELD_WAIT_S after the proxy printed that it holds, so it can only grow weaker on a slow
machine, never fail falsely.
"""
import os
import select
import socket
import subprocess
import sys
import tempfile

PROXY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tcp_proxy.py")
DEADLINE_S = 60  # for anything that must happen
HELD_WAIT_S = 2  # for what must not


def fail(message):
    print(f"FAIL: {message}", flush=True)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def readable(sock, timeout):
    return bool(select.select([sock], [], [], timeout)[0])


def receive_exactly(sock, n, what):
    data = b""
    while len(data) < n:
        check(readable(sock, DEADLINE_S), f"{what}: nothing within {DEADLINE_S} s "
              f"(have {data!r})")
        chunk = sock.recv(n - len(data))
        check(chunk, f"{what}: the connection closed (have {data!r})")
        data += chunk
    return data


class ProxyProcess:
    def __init__(self, target_port, control):
        self.control = control
        self.process = subprocess.Popen(
            [sys.executable, PROXY, "--listen", "127.0.0.1:0", "--target",
             f"127.0.0.1:{target_port}", "--control", control],
            stdout=subprocess.PIPE, text=True)
        first = self.line()
        check(first.startswith("listening on 127.0.0.1:"), f"first line: {first!r}")
        self.port = int(first.split(":")[1].split(",")[0])

    def line(self):
        check(readable(self.process.stdout, DEADLINE_S), "the proxy printed nothing")
        line = self.process.stdout.readline()
        check(line, f"the proxy exited ({self.process.poll()})")
        return line.strip()

    def set(self, state):
        with open(self.control + ".new", "w") as f:
            f.write(state + "\n")
        os.replace(self.control + ".new", self.control)
        line = self.line()
        check(line.startswith(state + " ("), f"after writing {state}: {line!r}")
        print(f"proxy: {line}", flush=True)

    def stop(self):
        self.process.terminate()
        self.process.wait(DEADLINE_S)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        control = os.path.join(tmp, "control")
        with open(control, "w") as f:
            f.write("pass\n")
        server = socket.create_server(("127.0.0.1", 0))
        proxy = ProxyProcess(server.getsockname()[1], control)
        try:
            run(server, proxy)
        finally:
            proxy.stop()
    print("PASS", flush=True)


def accept(server, what):
    check(readable(server, DEADLINE_S), f"{what}: not dialled onwards within {DEADLINE_S} s")
    return server.accept()[0]


def run(server, proxy):
    # pass: both ways.
    client = socket.create_connection(("127.0.0.1", proxy.port))
    upstream = accept(server, "first connection")
    client.sendall(b"hello")
    check(receive_exactly(upstream, 5, "client to server") == b"hello", "client to server")
    upstream.sendall(b"world!")
    check(receive_exactly(client, 6, "server to client") == b"world!", "server to client")

    # hold: nothing flows either way, nothing is closed, a new connection is not dialled.
    proxy.set("hold")
    client.sendall(b"sent while held")
    upstream.sendall(b"answered while held")
    late = socket.create_connection(("127.0.0.1", proxy.port))  # accepted by the proxy
    late.sendall(b"late")
    check(not readable(upstream, HELD_WAIT_S), "bytes reached the server while held")
    check(not readable(client, 0), "bytes (or a close) reached the client while held")
    check(not readable(late, 0), "the connection made while held was closed")
    check(not readable(server, 0), "a connection made while held was dialled onwards")

    # pass: what was held flows, in order; the late connection is dialled and forwarded.
    proxy.set("pass")
    got = receive_exactly(upstream, len(b"sent while held"), "held bytes to server")
    check(got == b"sent while held", f"held bytes to server: {got!r}")
    got = receive_exactly(client, len(b"answered while held"), "held bytes to client")
    check(got == b"answered while held", f"held bytes to client: {got!r}")
    late_upstream = accept(server, "connection made while held")
    check(receive_exactly(late_upstream, 4, "late connection") == b"late", "late connection")
    client.sendall(b"after")
    check(receive_exactly(upstream, 5, "after pass") == b"after", "after pass")

    # cut: every connection is closed, on both sides.
    proxy.set("cut")
    for sock, what in ((client, "client"), (late, "late client"), (upstream, "server side"),
                       (late_upstream, "late server side")):
        check(readable(sock, DEADLINE_S), f"{what} not closed within {DEADLINE_S} s")
        try:
            data = sock.recv(100)
        except ConnectionResetError:
            data = b""
        check(data == b"", f"{what}: bytes instead of a close: {data!r}")
    # While cut, a new connection is closed at once; after pass, one is forwarded again.
    refused = socket.create_connection(("127.0.0.1", proxy.port))
    check(readable(refused, DEADLINE_S) and refused.recv(10) == b"",
          "a connection made while cut stays open")
    check(not readable(server, 0), "a connection made while cut was dialled onwards")
    proxy.set("pass")
    again = socket.create_connection(("127.0.0.1", proxy.port))
    again_upstream = accept(server, "connection after cut and pass")
    again.sendall(b"back")
    check(receive_exactly(again_upstream, 4, "after cut") == b"back", "after cut")
    for sock in (client, late, upstream, late_upstream, refused, again, again_upstream):
        sock.close()


if __name__ == "__main__":
    main()
