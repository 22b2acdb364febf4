#!/usr/bin/env python3
"""Writes DIR/report.md for a run of tests/bench/fleet_scale.sh from its raw files.

Reads (each optional; a missing one makes its rows "not measured"): run.txt, proc.csv,
metrics.csv, ctl.csv, streams.csv, faults.csv, db_counts.csv, db_jobs.csv, acked.csv and
sim_summary.json (tests/bench/fleet_sim's --summary_json). Writes report.md: the issue's
targets against the measured median / p99 / max, pass or miss each, then benchd's and the
simulator's CPU and memory over time, the fault windows and the stored-row check.
Python 3 standard library only. Usage: fleet_report.py DIR --nodes N --duration S ...
"""
import argparse
import collections
import csv
import json
import math
import os
import statistics


def pct(values, p):
    """Nearest-rank percentile of a list (None when empty)."""
    if not values:
        return None
    v = sorted(values)
    return v[max(0, min(len(v) - 1, math.ceil(p / 100 * len(v)) - 1))]


def fmt(x, unit="", digits=3):
    if x is None:
        return "–"
    if isinstance(x, float):
        x = f"{x:.{digits}g}"
    return f"{x}{unit}"


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


class Report:
    def __init__(self, d, args):
        self.d, self.a = d, args
        self.rows = []  # (target, bound, median, p99, max, verdict, where)
        self.lines = []

    def target(self, name, bound, values=None, med=None, p99=None, mx=None, ok=None, unit="s",
               where=""):
        if values is not None:
            med, p99, mx = pct(values, 50), pct(values, 99), max(values) if values else None
        if ok is None:
            ok = None if p99 is None else p99 < bound
        verdict = "not measured" if ok is None else ("pass" if ok else "**miss**")
        self.rows.append((name, f"< {bound} {unit}".strip(), fmt(med), fmt(p99), fmt(mx), verdict,
                          where))

    def out(self, line=""):
        self.lines.append(line)


def sim_summary(d):
    p = os.path.join(d, "sim_summary.json")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f)


def latency_of(obj):
    """(p50, p99, max) in seconds from a {p50_ms|p50_s|p50_us, ...} dict, else None."""
    if not isinstance(obj, dict):
        return None
    for suffix, scale in (("_s", 1.0), ("_ms", 1e-3), ("_us", 1e-6)):
        if "p99" + suffix in obj:
            return tuple(num(obj.get(k + suffix)) * scale if num(obj.get(k + suffix)) is not None
                         else None for k in ("p50", "p99", "max"))
    return None


def find(obj, *names):
    """The first value under any of `names`, searched depth first through dicts."""
    if isinstance(obj, dict):
        for n in names:
            if n in obj:
                return obj[n]
        for v in obj.values():
            r = find(v, *names)
            if r is not None:
                return r
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--duration", type=float, required=True)
    ap.add_argument("--scale", default="1")
    ap.add_argument("--faults", default="")
    ap.add_argument("--db", default="", help="the run's SQLite file (default DIR/bench.db)")
    a = ap.parse_args()
    d = a.dir
    r = Report(d, a)

    # --- the simulator's RPCs -------------------------------------------------------
    s = sim_summary(d)
    methods = find(s, "rpcs", "methods") if s else None
    agent_methods = ("Register", "Heartbeat", "ReportStatus", "UploadSamples")
    for m in agent_methods:
        lat = latency_of(find(methods, m)) if isinstance(methods, dict) else None
        if lat:
            r.target(f"agent RPC {m} p99", 0.1, med=lat[0], p99=lat[1], mx=lat[2],
                     where="fleet_sim, client side")
        else:
            r.target(f"agent RPC {m} p99", 0.1, where="fleet_sim summary lacks it")
    lat = latency_of(find(methods, "SubmitJob")) if isinstance(methods, dict) else None
    lat = lat or latency_of(find(s, "submit")) if s else lat
    r.target("submit p99", 0.1, med=lat and lat[0], p99=lat and lat[1], mx=lat and lat[2],
             where="fleet_sim's submitter")
    lat = latency_of(find(s, "submit_to_assignment", "submit_to_assigned")) if s else None
    r.target("submit → every rank's assignment p99", 1, med=lat and lat[0], p99=lat and lat[1],
             mx=lat and lat[2], where="fleet_sim (both sides)")
    lat = latency_of(find(s, "commit_latency", "sample_latency", "ack_latency")) if s else None
    where = "fleet_sim"
    if lat is None and isinstance(methods, dict):
        lat = latency_of(methods.get("UploadSamples"))
        where = "UploadSamples' answer: benchd acknowledges a batch after its SQLite commit"
    r.target("commit latency p99", 1, med=lat and lat[0], p99=lat and lat[1], mx=lat and lat[2],
             where=where)

    # --- the load itself ------------------------------------------------------------
    scale = num(a.scale) or 1.0
    sim_s = num(find(s, "duration_s")) if s else None
    samples = find(s, "samples") if s else None
    jobs_s = find(s, "jobs") if s else None
    want = 10.0 * 8 * a.nodes * scale  # 10 it/s (and 10 Hz) per GPU
    if isinstance(samples, dict) and sim_s:
        for kind, key in (("iterations", "iterations_acked"), ("readings", "readings_acked")):
            rate = (num(samples.get(key)) or 0) / sim_s
            r.rows.append((f"{kind} acknowledged per second", f"≈ {want:.0f}/s", f"{rate:.0f}/s",
                           "", "", "pass" if rate >= 0.9 * want else "**miss**",
                           f"{samples.get(key)} over {sim_s:.0f} s (mean, warm-up and drain "
                           "included; 10 per GPU per s × 8 GPUs × nodes × scale)"))
    if isinstance(jobs_s, dict) and sim_s:
        churn = (num(jobs_s.get("submitted")) or 0) / sim_s
        bound = 10 * scale * a.nodes / 1024
        r.rows.append(("job churn (submits/s)", f"≥ {bound:.2g}/s", f"{churn:.1f}/s", "", "",
                       "pass" if churn >= bound else "**miss**",
                       f"{jobs_s.get('submitted')} submitted, {jobs_s.get('finished')} finished "
                       f"(the issue's 10/s at 1,024 nodes, scaled by nodes and --scale)"))

    # --- /metrics, benchctl ---------------------------------------------------------
    met = read_csv(os.path.join(d, "metrics.csv"))
    good = [m for m in met if m["status"] == "200"]
    r.target("GET /metrics", 1, [num(m["seconds"]) for m in good] or None,
             where=f"fleet_watch, {len(good)} of {len(met)} answered 200; "
             f"{fmt(max((int(m['bytes']) for m in good), default=None))} bytes, "
             f"{fmt(max((int(m['series']) for m in good), default=None))} series at most")
    ctl = read_csv(os.path.join(d, "ctl.csv"))
    for cmd in ("results", "gpus --outliers", "queue"):
        calls = [c for c in ctl if c["command"] == cmd]
        failed = [c for c in calls if c["rc"] != "0"]
        r.target(f"benchctl {cmd}", 0.5, [num(c["seconds"]) for c in calls] or None,
                 where=f"{len(calls)} calls, {len(failed)} exit ≠ 0 (process start included)")

    # --- memory, fds, threads -------------------------------------------------------
    proc = read_csv(os.path.join(d, "proc.csv"))
    by = {"benchd": [p for p in proc if p["process"] == "benchd"],
          "sim": [p for p in proc if p["process"] == "sim"]}
    bd = by["benchd"]
    t_from = 300 if a.duration >= 600 else a.duration / 2  # minute 5, or half a short run
    if bd:
        base = [p for p in bd if num(p["t_s"]) >= t_from]
        pid0 = base[0]["pid"] if base else None
        same = [p for p in base if p["pid"] == pid0]  # across a kill -9 the process is new
        if len(same) >= 2:
            # The RSS swings with the load's bursts and the allocator's returns (about
            # ±10 % within a minute under jemalloc's decay), so a sample at each end is
            # noise: the growth compares the median of the first minute from t_from with
            # that of the last minute (a tenth of the span in a short run).
            t0, t1 = num(same[0]["t_s"]), num(same[-1]["t_s"])
            window = 60 if a.duration >= 600 else max((t1 - t0) / 10, 1)
            first = [int(p["rss_kib"]) for p in same if num(p["t_s"]) < t0 + window]
            last = [int(p["rss_kib"]) for p in same if num(p["t_s"]) > t1 - window]
            r0, r1 = statistics.median(first), statistics.median(last)
            growth = 100.0 * (r1 - r0) / r0
            r.target(f"benchd RSS growth ({t_from:.0f} s → end)", 10, med=None, p99=growth, mx=None,
                     ok=growth < 10, unit="%",
                     where=f"median of {window:.0f} s: {r0 / 1024:.0f} MiB from {t0:.0f} s → "
                     f"{r1 / 1024:.0f} MiB to {t1:.0f} s (samples {int(same[0]['rss_kib']) / 1024:.0f} "
                     f"→ {int(same[-1]['rss_kib']) / 1024:.0f} MiB; max "
                     f"{max(int(p['rss_kib']) for p in same) / 1024:.0f})")
            for k in ("fds", "threads"):
                vals = [int(p[k]) for p in same]
                r.rows.append((f"benchd {k} flat", "flat", fmt(pct(vals, 50)), "", fmt(max(vals)),
                               "pass" if max(vals) <= 1.1 * vals[0] + 16 else "**miss**",
                               f"{vals[0]} → {vals[-1]} (min {min(vals)})"))

    # --- Prometheus ----------------------------------------------------------------
    def prom_value(name):
        try:
            res = json.load(open(os.path.join(d, name)))["data"]["result"]
            return num(res[0]["value"][1]) if res else None
        except (OSError, ValueError, KeyError, IndexError):
            return None
    up_n, up_sum = prom_value("prom_up_count.json"), prom_value("prom_up_sum.json")
    scrape_max = prom_value("prom_scrape_max.json")
    if up_n is not None:
        r.rows.append(("Prometheus scrapes every 15 s, target up", "all up", "", "",
                       fmt(scrape_max), "pass" if up_sum == up_n else "**miss**",
                       f"{up_sum:.0f} of {up_n:.0f} scrapes up; max = slowest scrape (s)"))

    # --- kill -9 --------------------------------------------------------------------
    faults = read_csv(os.path.join(d, "faults.csv"))
    ready = [num(f["seconds"]) for f in faults if f["event"].startswith("ready #")]
    back = [num(f["seconds"]) for f in faults if f["event"].startswith("agents back #")]
    if "kill9" in a.faults:
        r.target("kill -9: restart → /readyz 200", 5,
                 med=pct([x for x in ready if x is not None], 50),
                 p99=max(ready) if ready and None not in ready else None,
                 mx=max(ready) if ready and None not in ready else None,
                 ok=bool(ready) and None not in ready and max(ready) < 5,
                 where=f"{len(ready)} restarts")
        outs = [o for o in (find(s, "outages") or []) if isinstance(o, dict)] if s else []
        up = [num(o.get("all_uploading_after_s")) for o in outs]
        if outs:
            ok = all(u is not None and 0 <= u < 30 for u in up)
            r.rows.append(("kill -9: running jobs' ranks uploading again", "< 30 s",
                           fmt(pct([u for u in up if u is not None and u >= 0], 50)), "",
                           fmt(max(up) if up else None), "pass" if ok else "**miss**",
                           f"fleet_sim's outages (from the first failure; -1: not reached): "
                           f"{', '.join(fmt(u) for u in up)}"))
        r.target("kill -9: restart → every agent connected", 30,
                 med=pct([x for x in back if x is not None], 50),
                 p99=max(back) if back and None not in back else None,
                 mx=max(back) if back and None not in back else None,
                 ok=bool(back) and None not in back and max(back) < 30,
                 where=f"{len(back)} restarts, /api/v1/agents polled every 0.5 s")

    # --- nothing lost ---------------------------------------------------------------
    stored = {}
    for row in read_csv(os.path.join(d, "db_counts.csv")):
        stored[(row["job_id"], row["attempt"], row["rank"], row["kind"])] = int(row["rows"])
    # fleet_sim's acked.csv: per job/attempt/rank, the acknowledged samples benchd took
    # (stored, or stored before) and those it refused (a fenced node's, a requeued job's
    # stale attempt, a rank not placed on the sender: docs/limits.md), never stored.
    acked, refused = {}, {}
    per_key_refusals = False
    for row in read_csv(os.path.join(d, "acked.csv")):
        for kind in ("iterations", "readings"):
            key = (row["job_id"], row["attempt"], row["rank"], kind)
            if kind in row and row[kind] not in ("", None):
                acked[key] = int(row[kind])
            if row.get("refused_" + kind) not in ("", None):
                per_key_refusals = True
                refused[key] = int(row["refused_" + kind])
    lost = {k: (v, stored.get(k, 0)) for k, v in acked.items() if stored.get(k, 0) < v}
    extra = {k: (acked.get(k, 0) + refused.get(k, 0), v) for k, v in stored.items()
             if v > acked.get(k, 0) + refused.get(k, 0)}
    n_acked = sum(acked.values())
    n_refused = sum(refused.values())
    n_stored = sum(stored.values())
    short = sum(v - st for v, st in lost.values())
    if acked and per_key_refusals:
        # Key by key: every sample benchd took is stored; none is stored that it neither
        # took nor refused (a refused one may have been stored by an earlier delivery).
        unattributed = int(num(samples.get("unattributed")) or 0) if isinstance(samples, dict) else 0
        ok = not lost
        r.rows.append(("nothing lost: stored ≥ taken, per job/attempt/rank/kind",
                       "0 lost", "", "", "", "pass" if ok else "**miss**",
                       f"{n_acked + n_refused} acknowledged: {n_acked} taken, {n_refused} refused "
                       f"by benchd (fenced, stale attempt or not placed there), {unattributed} "
                       f"not told per rank; {n_stored} stored; {len(lost)} keys short by {short} "
                       f"in all; {len(extra)} keys with more stored than acknowledged"))
    elif acked:
        # An acked.csv without per-rank refusals (fleet_sim before they were counted): the
        # refusals are known in total only (its summary's samples.rejected).
        rejected = int(num(samples.get("rejected")) or 0) if isinstance(samples, dict) else 0
        ok = not lost or short <= rejected
        r.rows.append(("nothing lost: stored ≥ acknowledged − refused, in total (no per-rank "
                       "refusals)", "0 lost", "", "", "", "pass" if ok else "**miss**",
                       f"{n_acked} acknowledged, {n_stored} stored; {len(lost)} keys short by "
                       f"{short} in all, benchd refused {rejected} (fenced or stale attempt); "
                       f"{len(extra)} keys with more stored than acknowledged"))
    else:
        r.rows.append(("nothing lost", "0 lost", "", "", "", "not measured", "no acked.csv"))

    # --- write ----------------------------------------------------------------------
    o = r.out
    o(f"# Fleet scale run: {a.nodes} nodes × 8 GPUs, scale {a.scale}, {a.duration:.0f} s"
      + (f", faults {a.faults}" if a.faults else ""))
    o()
    if os.path.exists(os.path.join(d, "run.txt")):
        o("```")
        o(open(os.path.join(d, "run.txt")).read().rstrip())
        o("```")
    o()
    o("## Targets (issue 27)")
    o()
    o("| target | bound | median | p99 | max | verdict | where / note |")
    o("|---|---|---|---|---|---|---|")
    for row in r.rows:
        o("| " + " | ".join(str(x) for x in row) + " |")
    o()
    o("Times in seconds unless a unit is given. benchctl's times include starting the "
      "process and its TLS handshake, as an operator's call does.")
    o()
    o("## benchd and the simulator over time (from /proc every 5 s)")
    o()
    o("| t (s) | benchd CPU (cores) | benchd RSS (MiB) | fds | threads | sim CPU (cores) | "
      "sim RSS (MiB) | load1 |")
    o("|---|---|---|---|---|---|---|---|")
    step = max(60.0, a.duration / 15)

    def at_times(series):
        """Rows every `step` s: (t, cores since the previous chosen row, row)."""
        chosen, prev, next_t = [], None, 0.0
        for p in series:
            t = num(p["t_s"])
            if t < next_t:
                continue
            cores = None
            if prev and prev["pid"] == p["pid"] and t > num(prev["t_s"]):
                cores = (num(p["cpu_s"]) - num(prev["cpu_s"])) / (t - num(prev["t_s"]))
            chosen.append((t, cores, p))
            prev, next_t = p, t + step
        return chosen

    sim_rows = at_times(by["sim"])
    for t, cores, p in at_times(bd):
        near = min(sim_rows, key=lambda x: abs(x[0] - t)) if sim_rows else None
        sim = (f"{fmt(near[1], digits=2)} | {int(near[2]['rss_kib']) / 1024:.0f}"
               if near and abs(near[0] - t) < 5 else "– | –")
        o(f"| {t:.0f} | {fmt(cores, digits=2)} | {int(p['rss_kib']) / 1024:.0f} | {p['fds']} | "
          f"{p['threads']} | {sim} | {p['load1']} |")
    for name, series in by.items():
        pids = {}
        for p in series:
            pids.setdefault(p["pid"], []).append(p)
        cpu = sum(num(v[-1]["cpu_s"]) for v in pids.values())
        if series:
            span = num(series[-1]["t_s"]) - num(series[0]["t_s"])
            o()
            o(f"{name}: {cpu:.0f} CPU s in all ({len(pids)} process(es)), about "
              f"{cpu / span if span > 0 else 0:.2f} cores over {span:.0f} s; RSS max "
              f"{max(int(p['rss_kib']) for p in series) / 1024:.0f} MiB")
    if isinstance(samples, dict):
        o()
        o("Samples (fleet_sim): " + ", ".join(f"{k} {v}" for k, v in samples.items()))
    if os.path.exists(os.path.join(d, "sim.log")):
        # Its interval table apart from its messages (a failed call each: thousands while
        # benchd is down), which are counted by kind.
        lines = open(os.path.join(d, "sim.log")).read().splitlines()
        table = [line for line in lines if not line.startswith("fleet_sim: ")]
        messages = collections.Counter(
            line[len("fleet_sim: "):][:120] for line in lines
            if line.startswith("fleet_sim: ") and not line.startswith("fleet_sim: {"))
        o()
        o("## The simulator's interval lines (last 40)")
        o()
        o("```")
        o("\n".join(table[-40:]))
        o("```")
        if messages:
            o()
            o(f"Its other lines ({sum(messages.values())}), by kind (first 120 characters):")
            o()
            for message, count in messages.most_common(10):
                o(f"- {count} × `{message}`")
    if s:
        o()
        o("## The simulator's summary")
        o()
        o("```json")
        o(json.dumps(s, indent=1)[:6000])
        o("```")

    streams = read_csv(os.path.join(d, "streams.csv"))
    if streams:
        o()
        o("## Live event streams")
        o()
        ends = {}
        for st in streams:
            ends[st["end"]] = ends.get(st["end"], 0) + 1
        fleet = [st for st in streams if "fleet" in st["path"]]
        jobs = [st for st in streams if "fleet" not in st["path"]]
        firsts = [num(st["first_event_s"]) for st in streams if num(st["first_event_s"]) is not None]
        o(f"{len(streams)} connections ({len(fleet)} fleet, {len(jobs)} job); "
          f"{sum(int(st['events']) for st in fleet)} fleet events, "
          f"{sum(int(st['events']) for st in jobs)} job events, "
          f"{sum(int(st['bytes']) for st in streams) / 1e6:.1f} MB; first event after "
          f"median {fmt(pct(firsts, 50))} s, max {fmt(max(firsts) if firsts else None)} s; "
          f"ends: {ends}")

    if faults:
        o()
        o("## Faults")
        o()
        o("| t (s) | fault | event | seconds | detail |")
        o("|---|---|---|---|---|")
        for f in faults:
            o(f"| {f['t_s']} | {f['fault']} | {f['event']} | {f['seconds']} | {f['detail']} |")
        # benchctl and /metrics times outside vs inside each fault's window
        starts = [(num(f["t_s"]), f["fault"]) for f in faults
                  if f["event"] in ("start", "hold", "fill") or f["event"].startswith("kill -9")]
        if starts and ctl:
            o()
            o("benchctl results before vs during each fault (60 s windows):")
            o()
            for t, name in starts:
                before = [num(c["seconds"]) for c in ctl
                          if c["command"] == "results" and t - 60 <= num(c["t_s"]) < t]
                during = [num(c["seconds"]) for c in ctl
                          if c["command"] == "results" and t <= num(c["t_s"]) < t + 60]
                o(f"- {name} at {t:.0f} s: before median {fmt(pct(before, 50))} p99 "
                  f"{fmt(pct(before, 99))}; during median {fmt(pct(during, 50))} p99 "
                  f"{fmt(pct(during, 99))} ({sum(1 for c in ctl if c['command'] == 'results' and t <= num(c['t_s']) < t + 60 and c['rc'] != '0')} failed)")

    jobs = read_csv(os.path.join(d, "db_jobs.csv"))
    if jobs or stored:
        o()
        o("## Stored")
        o()
        o("jobs by state: " + ", ".join(f"{j['state']} {j['jobs']}" for j in jobs))
        o()
        kinds = {}
        for (_, _, _, kind), v in stored.items():
            kinds[kind] = kinds.get(kind, 0) + v
        o(f"rows: {kinds}; database {fmt(num(open(os.path.join(d, 'db_bytes.txt')).read()) / 1e6 if os.path.exists(os.path.join(d, 'db_bytes.txt')) else None)} MB")
        if lost:
            o()
            o("Short (acknowledged, stored) for the first 20 keys:")
            for k, v in list(lost.items())[:20]:
                o(f"- {k}: {v}")
    db = a.db or os.path.join(d, "bench.db")
    if os.path.exists(db):
        import sqlite3
        try:
            c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            o()
            o("Jobs by state and attempt (a requeued job's attempt is above 1):")
            o()
            for state, attempt, n in c.execute(
                    "SELECT state, attempt, count(*) FROM jobs GROUP BY 1, 2 ORDER BY 1, 2"):
                o(f"- {state}, attempt {attempt}: {n}")
            rows = list(c.execute(
                "SELECT state, reason, count(*) FROM jobs WHERE state NOT IN ('SUCCEEDED', "
                "'RUNNING', 'QUEUED') OR attempt > 1 GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 10"))
            if rows:
                o()
                o("Jobs that failed, were cancelled or requeued, by reason:")
                o()
                for state, reason, n in rows:
                    o(f"- {state} ({n}): {reason}")
            c.close()
        except sqlite3.Error as e:
            o(f"(the database could not be read: {e})")
    with open(os.path.join(d, "report.md"), "w") as f:
        f.write("\n".join(r.lines) + "\n")


if __name__ == "__main__":
    main()
