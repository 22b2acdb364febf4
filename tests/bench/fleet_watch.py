#!/usr/bin/env python3
"""The observers of the scale run (tests/bench/fleet_scale.sh), in one process.

While OUT/stop does not exist it:
  - samples benchd's and the simulator's CPU time, RSS, open fds and threads from /proc
    every --proc_every s (pids read from OUT/benchd.pid and OUT/sim.pid each time, so a
    restarted benchd is followed): OUT/proc.csv;
  - times GET /metrics every --metrics_every s (status, bytes, series, seconds):
    OUT/metrics.csv;
  - calls `benchctl results`, `benchctl gpus --outliers` and `benchctl queue` once a second
    each, timing each call's wall time and exit code: OUT/ctl.csv;
  - keeps --web_clients clients on the live event streams (half on /api/v1/fleet/events,
    half on /api/v1/jobs/{id}/events of a running job, a new one when it ends):
    OUT/streams.csv, one row per connection.
Every request carries the view/admin client certificate (--cert/--key) and trusts --ca.
Python 3 standard library only (Debian's python3).
"""
import argparse
import csv
import http.client
import json
import os
import random
import ssl
import subprocess
import threading
import time

T0 = time.time()


def now():
    return time.time() - T0


class CsvOut:
    """A CSV file written by several threads, flushed row by row."""

    def __init__(self, path, header):
        self.lock = threading.Lock()
        self.f = open(path, "w", newline="")
        self.w = csv.writer(self.f, lineterminator="\n")
        self.w.writerow(header)
        self.f.flush()

    def row(self, *values):
        with self.lock:
            self.w.writerow(values)
            self.f.flush()


class Watch:
    def __init__(self, a):
        self.a = a
        self.stop_file = os.path.join(a.out, "stop")
        self.ctx = ssl.create_default_context(cafile=a.ca)
        self.ctx.load_cert_chain(a.cert, a.key)
        self.ctx.check_hostname = False  # benchd's certificate names 127.0.0.1 as an IP SAN
        host, port = a.http.rsplit(":", 1)
        self.host, self.port = host, int(port)

    def stopped(self):
        return os.path.exists(self.stop_file)

    def wait(self, seconds):
        """Sleeps up to `seconds`, waking early when the run stops; False when stopped."""
        end = time.time() + seconds
        while time.time() < end:
            if self.stopped():
                return False
            time.sleep(min(0.2, max(0.0, end - time.time())))
        return not self.stopped()

    def conn(self, timeout):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    # --- /proc -----------------------------------------------------------------------
    def proc_loop(self):
        out = CsvOut(os.path.join(self.a.out, "proc.csv"),
                     ["t_s", "process", "pid", "cpu_s", "rss_kib", "fds", "threads",
                      "load1", "load5", "load15"])
        tck = os.sysconf("SC_CLK_TCK")
        while True:
            load = open("/proc/loadavg").read().split()[:3]
            for name in ("benchd", "sim"):
                try:
                    pid = int(open(os.path.join(self.a.out, name + ".pid")).read().strip())
                    stat = open(f"/proc/{pid}/stat").read()
                    fields = stat[stat.rindex(")") + 2:].split()
                    cpu = (int(fields[11]) + int(fields[12])) / tck
                    rss = threads = 0
                    for line in open(f"/proc/{pid}/status"):
                        if line.startswith("VmRSS:"):
                            rss = int(line.split()[1])
                        elif line.startswith("Threads:"):
                            threads = int(line.split()[1])
                    fds = len(os.listdir(f"/proc/{pid}/fd"))
                except (OSError, ValueError):
                    continue  # not started yet, or between a kill and its restart
                out.row(f"{now():.1f}", name, pid, f"{cpu:.2f}", rss, fds, threads, *load)
            if not self.wait(self.a.proc_every):
                return

    # --- /metrics --------------------------------------------------------------------
    def metrics_loop(self):
        out = CsvOut(os.path.join(self.a.out, "metrics.csv"),
                     ["t_s", "status", "bytes", "series", "seconds", "load1"])
        while True:
            t = now()
            start = time.monotonic()
            status, size, series = "error", 0, 0
            try:
                c = self.conn(30)
                c.request("GET", "/metrics")
                r = c.getresponse()
                body = r.read()
                status, size = r.status, len(body)
                series = sum(1 for line in body.split(b"\n") if line and not line.startswith(b"#"))
                c.close()
            except (OSError, http.client.HTTPException) as e:
                status = type(e).__name__
            seconds = time.monotonic() - start
            out.row(f"{t:.1f}", status, size, series, f"{seconds:.4f}",
                    open("/proc/loadavg").read().split()[0])
            if not self.wait(max(0.0, self.a.metrics_every - seconds)):
                return

    # --- benchctl --------------------------------------------------------------------
    def ctl_loop(self, out, name, args):
        base = [self.a.benchctl, "--server", self.a.grpc, "--tls-ca", self.a.ca,
                "--tls-cert", self.a.cert, "--tls-key", self.a.key]
        next_at = time.monotonic()
        while not self.stopped():
            t = now()
            start = time.monotonic()
            try:
                rc = subprocess.run(base + args, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, timeout=60).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
            seconds = time.monotonic() - start
            out.row(f"{t:.1f}", name, f"{seconds:.4f}", rc)
            next_at += 1.0
            delay = next_at - time.monotonic()
            if delay < 0:
                next_at = time.monotonic()  # late: the next call goes at once, no catching up
            elif not self.wait(delay):
                return

    # --- live event streams ----------------------------------------------------------
    def running_job(self):
        try:
            c = self.conn(30)
            c.request("GET", "/api/v1/jobs?state=RUNNING&page_size=100")
            r = c.getresponse()
            body = r.read()
            c.close()
            if r.status != 200:
                return None
            jobs = json.loads(body).get("jobs", [])
            return random.choice(jobs)["id"] if jobs else None
        except (OSError, http.client.HTTPException, ValueError):
            return None

    def stream_loop(self, out, client):
        fleet = client % 2 == 0
        while not self.stopped():
            path = "/api/v1/fleet/events"
            if not fleet:
                job = self.running_job()
                if job is None:
                    if not self.wait(2):
                        return
                    continue
                path = f"/api/v1/jobs/{job}/events"
            opened = now()
            first, events, size, end = "", 0, 0, "stopped"
            try:
                c = self.conn(60)
                c.request("GET", path, headers={"Accept": "text/event-stream"})
                r = c.getresponse()
                if r.status != 200:
                    end = f"http {r.status}"
                    r.read()
                else:
                    while not self.stopped():
                        line = r.readline()
                        if not line:
                            end = "closed by benchd"
                            break
                        size += len(line)
                        if line.startswith(b"event:"):
                            events += 1
                            if not first:
                                first = f"{now() - opened:.3f}"
                c.close()
            except (OSError, http.client.HTTPException) as e:
                end = type(e).__name__
            out.row(client, path, f"{opened:.1f}", first, f"{now():.1f}", events, size, end)
            if end not in ("stopped", "closed by benchd") and not self.wait(1):
                return

    def run(self):
        ctl = CsvOut(os.path.join(self.a.out, "ctl.csv"), ["t_s", "command", "seconds", "rc"])
        streams = CsvOut(os.path.join(self.a.out, "streams.csv"),
                         ["client", "path", "opened_s", "first_event_s", "closed_s", "events",
                          "bytes", "end"])
        threads = [threading.Thread(target=self.proc_loop),
                   threading.Thread(target=self.metrics_loop)]
        for name, args in (("results", ["results"]), ("gpus --outliers", ["gpus", "--outliers"]),
                           ("queue", ["queue"])):
            threads.append(threading.Thread(target=self.ctl_loop, args=(ctl, name, args)))
        for i in range(self.a.web_clients):
            threads.append(threading.Thread(target=self.stream_loop, args=(streams, i)))
        for t in threads:
            t.daemon = True
            t.start()
        while not self.stopped():
            time.sleep(0.5)
        for t in threads:
            t.join(timeout=70)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--grpc", required=True, help="benchd's gRPC HOST:PORT")
    p.add_argument("--http", required=True, help="benchd's web HOST:PORT (HTTPS)")
    p.add_argument("--ca", required=True)
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--benchctl", required=True)
    p.add_argument("--web_clients", type=int, default=20)
    p.add_argument("--proc_every", type=float, default=5)
    p.add_argument("--metrics_every", type=float, default=15)
    p.add_argument("--ctl", type=int, default=1, help="0: no benchctl calls")
    a = p.parse_args()
    w = Watch(a)
    if not a.ctl:
        w.ctl_loop = lambda *args: None
    w.run()


if __name__ == "__main__":
    main()
