#!/usr/bin/python3
"""A loopback TCP proxy that a control file can hold, resume or cut (issue 27's faults).

    tcp_proxy.py --listen 127.0.0.1:PORT --target 127.0.0.1:PORT --control FILE

Forwards the bytes of every accepted connection both ways to a connection of its own to
--target. FILE's content (read every --poll seconds; missing or empty: pass) sets the state:

  pass  forward (bytes held back while in hold then flow, in order);
  hold  forward nothing, close nothing: every connection stays open and silent (no FIN, no
        RST) with what it sent kept in the proxy and the kernel's buffers; a connection
        accepted while held is kept too and dialled onwards only on pass — a network
        partition as agents behind it see it, until their keepalives give up;
  cut   close every connection (both sides, FIN); while cut, new connections are accepted
        and closed at once.

Prints "listening on HOST:PORT" once (PORT 0: the port picked) and then one line per
change of state ("hold (N connections)"), flushed, after the change has taken effect: a
test may wait for the line instead of for time. Debian's python3 only (asyncio).
"""
import argparse
import asyncio
import sys

STATES = ("pass", "hold", "cut")


def parse_address(text):
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"want HOST:PORT, got {text!r}")
    return host, int(port)


def say(line):
    print(line, flush=True)


class Proxy:
    def __init__(self, target, control):
        self.target = target
        self.control = control
        self.state = "pass"
        self.flowing = asyncio.Event()
        self.flowing.set()
        self.connections = set()  # (client writer, tasks list)

    def read_control(self):
        try:
            with open(self.control, encoding="utf-8") as f:
                text = f.read().strip()
        except FileNotFoundError:
            return "pass"
        except OSError as e:
            say(f"cannot read {self.control}: {e}")
            return self.state
        return text or "pass"

    async def watch(self, poll):
        bad = None
        while True:
            wanted = self.read_control()
            if wanted not in STATES:
                if wanted != bad:
                    say(f"{self.control}: unknown state {wanted!r} (want pass, hold or cut); "
                        f"staying in {self.state}")
                bad = wanted
            elif wanted != self.state:
                bad = None
                count = len(self.connections)
                self.apply(wanted)
                say(f"{wanted} ({count} connections)")
            await asyncio.sleep(poll)

    def apply(self, state):
        self.state = state
        if state == "pass":
            self.flowing.set()
            return
        self.flowing.clear()
        if state == "cut":
            for connection in list(self.connections):
                connection.close()
            self.connections.clear()

    async def handle(self, reader, writer):
        if self.state == "cut":
            writer.close()
            return
        connection = Connection(self, writer)
        self.connections.add(connection)
        try:
            await connection.run(reader)
        except asyncio.CancelledError:
            pass
        finally:
            self.connections.discard(connection)
            connection.close()


class Connection:
    def __init__(self, proxy, client_writer):
        self.proxy = proxy
        self.writers = [client_writer]
        self.tasks = []
        self.handler = asyncio.current_task()
        self.closed = False

    def close(self):
        if self.closed:
            return
        self.closed = True
        for task in self.tasks:
            task.cancel()
        for writer in self.writers:
            writer.close()
        if not self.tasks and self.handler is not asyncio.current_task():
            self.handler.cancel()  # still waiting to dial onwards

    async def run(self, client_reader):
        await self.proxy.flowing.wait()  # dial onwards only while passing
        if self.closed:
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.proxy.target)
        except OSError as e:
            say(f"cannot reach {self.proxy.target[0]}:{self.proxy.target[1]}: {e}")
            return
        if self.closed:
            up_writer.close()
            return
        self.writers.append(up_writer)
        self.tasks = [asyncio.ensure_future(self.pump(client_reader, up_writer)),
                      asyncio.ensure_future(self.pump(up_reader, self.writers[0]))]
        # Either side's end (or a cut) ends the connection; the other pump is cancelled.
        await asyncio.wait(self.tasks, return_when=asyncio.FIRST_COMPLETED)

    async def pump(self, reader, writer):
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    return
                await self.proxy.flowing.wait()
                if self.proxy.state == "cut":
                    return
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            return


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", type=parse_address, required=True, help="HOST:PORT")
    parser.add_argument("--target", type=parse_address, required=True, help="HOST:PORT")
    parser.add_argument("--control", required=True, help="file holding pass, hold or cut")
    parser.add_argument("--poll", type=float, default=0.05, help="seconds between reads")
    args = parser.parse_args()
    proxy = Proxy(args.target, args.control)
    initial = proxy.read_control()
    if initial in STATES and initial != "pass":
        proxy.apply(initial)
    server = await asyncio.start_server(proxy.handle, *args.listen)
    host, port = server.sockets[0].getsockname()[:2]
    say(f"listening on {host}:{port}, forwarding to {args.target[0]}:{args.target[1]}, "
        f"{proxy.state}")
    async with server:
        await proxy.watch(args.poll)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
