#!/usr/bin/env python3
"""fleet_report.py's verdicts on made-up runs (bench.fleet_report): the stored rows checked
per job/attempt/rank/kind against the simulator's acknowledged counts, taken and refused per
rank (one short key is a miss naming the key, whatever other keys' refusals; more stored than
acknowledged is not a loss), a slow /metrics and a
benchctl call that failed are misses, RSS growth past 10 % is a miss, a missing simulator
summary is "not measured" (never a pass), kill -9 timings against 5 s / 30 s."""
import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPORT = os.path.join(HERE, "fleet_report.py")
failures = []


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def make_run(d, *, stored_short=False, slow_metrics=False, rss_growth=False, rss_sawtooth=False,
             summary=True,
             kill9_slow=False, rejected=0, refused_columns=True, refused_short_key=False):
    header = ["job_id", "attempt", "rank", "iterations", "readings"]
    acked = [["job-000001", 1, 0, 100, 1000], ["job-000001", 1, 1, 100, 1000],
             ["job-000002", 1, 0, 50, 500]]
    if refused_columns:
        header += ["refused_iterations", "refused_readings"]
        # job-000003's attempt 1 ran on a node benchd no longer placed it on: all refused.
        acked = [row + [0, 0] for row in acked] + [["job-000003", 1, 0, 0, 0, 56, 59]]
        if refused_short_key:
            # One reading of job-000002 taken, yet another key's refusal cannot cover it.
            acked[2][4] = 499
            acked[2][6] = 1
    write_csv(os.path.join(d, "acked.csv"), header, acked)
    rows = [["job-000001", 1, 0, "iterations", 100], ["job-000001", 1, 0, "readings", 1000],
            ["job-000001", 1, 1, "iterations", 100], ["job-000001", 1, 1, "readings", 1000],
            ["job-000002", 1, 0, "iterations", 51],  # one more stored than acknowledged
            ["job-000002", 1, 0, "readings", 499 if stored_short else 500]]
    write_csv(os.path.join(d, "db_counts.csv"), ["job_id", "attempt", "rank", "kind", "rows"], rows)
    write_csv(os.path.join(d, "metrics.csv"), ["t_s", "status", "bytes", "series", "seconds", "load1"],
              [[15 * i, 200, 900000, 9000, 1.5 if slow_metrics and i == 3 else 0.2, 1.0]
               for i in range(10)])
    write_csv(os.path.join(d, "ctl.csv"), ["t_s", "command", "seconds", "rc"],
              [[i, c, 0.1, 1 if (c == "queue" and i == 5) else 0]
               for i in range(100) for c in ("results", "gpus --outliers", "queue")])
    proc = []
    for i in range(200):
        rss = 100000 + (i * 100 if rss_growth else i % 3)
        if rss_sawtooth and i % 4 == 3:  # every fourth sample 25 % up, the last one among them
            rss = 125000
        proc.append([5 * i, "benchd", 42, i * 2.0, rss, 60, 80, 1.0, 1.0, 1.0])
        proc.append([5 * i, "sim", 43, i * 1.0, 50000, 40, 20, 1.0, 1.0, 1.0])
    write_csv(os.path.join(d, "proc.csv"), ["t_s", "process", "pid", "cpu_s", "rss_kib", "fds",
                                             "threads", "load1", "load5", "load15"], proc)
    write_csv(os.path.join(d, "faults.csv"), ["t_s", "fault", "event", "seconds", "detail"],
              [[100, "kill9", "kill -9 #1", "", "pid 42"],
               [101, "kill9", "ready #1", 7.5 if kill9_slow else 1.2, ""],
               [110, "kill9", "agents back #1", 12.0, "4 of 4"]])
    with open(os.path.join(d, "sim.log"), "w") as f:
        f.write("fleet_sim: 4 nodes x 8 GPUs\n"
                "     t_s agents  ranks\n"
                "    60.0      4     32\n"
                + "fleet_sim: SubmitJob: Socket closed\n" * 3 +
                "   120.0      4     32\n"
                + "fleet_sim: SubmitJob: failed to connect to all addresses\n" * 50)
    if summary:
        lat = {"p50_ms": 2.0, "p99_ms": 20.0, "max_ms": 90.0}
        with open(os.path.join(d, "sim_summary.json"), "w") as f:
            json.dump({"rpcs": {m: dict(lat, count=10) for m in
                                ("Register", "Heartbeat", "ReportStatus", "UploadSamples",
                                 "SubmitJob")},
                       "submit_to_assignment": {"p50_ms": 50, "p99_ms": 400, "max_ms": 900},
                       "commit_latency": {"p50_ms": 60, "p99_ms": 300, "max_ms": 800},
                       "samples": {"rejected": rejected}}, f)


def report(**kw):
    with tempfile.TemporaryDirectory() as d:
        make_run(d, **kw)
        subprocess.run([sys.executable, REPORT, d, "--nodes", "4", "--duration", "1000",
                        "--faults", "kill9"], check=True)
        text = open(os.path.join(d, "report.md")).read()
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 7:
            rows[cells[0]] = cells
    return text, rows


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    else:
        print("PASS:", what)


def verdict(rows, prefix):
    for name, cells in rows.items():
        if name.startswith(prefix):
            return cells[5]
    return None


text, rows = report()
expect(verdict(rows, "nothing lost") == "pass", "a clean run: nothing lost passes")
expect("1 keys with more stored than acknowledged" in text,
       "more stored than acknowledged is counted, not called a loss")
expect(verdict(rows, "GET /metrics") == "pass", "a clean run: /metrics passes")
expect(verdict(rows, "benchctl results") == "pass", "a clean run: benchctl results passes")
expect(verdict(rows, "agent RPC Heartbeat") == "pass", "a clean run: Heartbeat p99 20 ms passes")
expect(verdict(rows, "submit → every rank") == "pass", "a clean run: submit→assignment passes")
expect(verdict(rows, "benchd RSS growth") == "pass", "flat RSS passes")
expect(verdict(rows, "kill -9: restart → /readyz") == "pass", "ready in 1.2 s passes")
expect("1 exit ≠ 0" in rows.get("benchctl queue", [""] * 7)[6],
       "a failed benchctl call is counted")

interval = text.split("## The simulator's interval lines (last 40)")[1].split("```")[1]
expect("   120.0      4     32" in interval and "fleet_sim:" not in interval,
       "the simulator's interval table is shown without its messages")
expect("- 50 × `SubmitJob: failed to connect to all addresses`" in text and
       "- 3 × `SubmitJob: Socket closed`" in text, "its messages are counted by kind")

expect("115 refused by benchd" in text,
       "refusals are counted per rank and summed")

text, rows = report(stored_short=True)
expect(verdict(rows, "nothing lost") == "**miss**", "one reading short is a miss")
expect("('job-000002', '1', '0', 'readings'): (500, 499)" in text, "the short key is named")

# Refusals elsewhere (job-000003's 115, the summary's total) do not excuse a short key.
text, rows = report(stored_short=True, rejected=116)
expect(verdict(rows, "nothing lost") == "**miss**",
       "a short key is a miss even when other keys' refusals would cover it in total")

_, rows = report(stored_short=True, refused_short_key=True)
expect(verdict(rows, "nothing lost") == "pass",
       "a reading benchd refused (counted on its own key) is not a loss")

# An acked.csv of fleet_sim before per-rank refusals: the total rule.
_, rows = report(stored_short=True, rejected=1, refused_columns=False)
expect(verdict(rows, "nothing lost") == "pass",
       "old acked.csv: one reading short that benchd refused in total is not a loss")
_, rows = report(stored_short=True, rejected=0, refused_columns=False)
expect(verdict(rows, "nothing lost") == "**miss**", "old acked.csv: unrefused short is a miss")

_, rows = report(slow_metrics=True)
expect(verdict(rows, "GET /metrics") == "**miss**", "a 1.5 s /metrics answer is a miss")

_, rows = report(rss_growth=True)
expect(verdict(rows, "benchd RSS growth") == "**miss**", "RSS growing 20 % is a miss")

# A sample at each end would say +25 %; the minutes around them are flat.
_, rows = report(rss_sawtooth=True)
expect(verdict(rows, "benchd RSS growth") == "pass", "a flat RSS with peaks passes")
expect("(samples 98 → 122 MiB; max 122)" in rows.get("benchd RSS growth (300 s → end)", [""] * 7)[6],
       "the end samples and the peak are shown beside the medians")

_, rows = report(summary=False)
expect(verdict(rows, "agent RPC Heartbeat") == "not measured",
       "no simulator summary: not measured, not a pass")

_, rows = report(kill9_slow=True)
expect(verdict(rows, "kill -9: restart → /readyz") == "**miss**", "ready in 7.5 s is a miss")

sys.exit(1 if failures else 0)
