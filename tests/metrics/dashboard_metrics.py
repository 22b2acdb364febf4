#!/usr/bin/python3
"""Checks a Grafana dashboard against a Prometheus text exposition.

Usage:
  dashboard_metrics.py [--allow-absent REGEX]... DASHBOARD_JSON METRICS

METRICS is a file holding Prometheus text exposition (what benchd serves at /metrics),
'-' for standard input, or an http:// URL to fetch (e.g. http://127.0.0.1:7601/metrics).

Every metric name that the dashboard's PromQL names (panel targets' expr, including
panels inside collapsed rows, and template variable queries such as
label_values(metric{...}, label)) -- identifiers bench_[a-z0-9_]+ that are not label
names, variables or strings -- must appear in the exposition, as a '# TYPE' / '# HELP'
line or as a sample. A counter declared as '# TYPE x counter' (OpenMetrics style)
also provides x_total; a histogram or summary x provides x_bucket, x_sum and x_count.

--allow-absent REGEX (full match, repeatable) lets the named metrics be missing, for a
live exposition taken when they cannot exist (prometheus-cpp leaves out a labelled
family that has no series, e.g. the per-GPU gauges when no rank runs on a GPU).

Structural checks: the dashboard's uid is "benchfleet-overview"; it has the template
variables node, gpu and model; every panel other than a row has a datasource and at
least one target with a non-empty expr.

Exit status: 0 when everything checks (prints how many metrics were checked); 1 when a
metric is missing or a structural check fails (prints each problem); 2 when a file
cannot be read or parsed, or the dashboard names no bench_ metric at all.
Standard library only.
"""

import argparse
import json
import re
import sys
import urllib.request

EXPECTED_UID = "benchfleet-overview"
REQUIRED_VARIABLES = ("node", "gpu", "model")

METRIC_RE = re.compile(r"(?<![A-Za-z0-9_:$])bench_[a-z0-9_]+(?![A-Za-z0-9_:])")
# Label lists of aggregations and vector matching: sum by (a, b), on (x), group_left (y).
LABEL_LIST_RE = re.compile(
    r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", re.IGNORECASE)
STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
MATCHERS_RE = re.compile(r"\{[^{}]*\}")
# Grafana variables: $var, ${var}, ${var:fmt}, [[var]].
VARIABLE_RE = re.compile(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\[\[[^\]]*\]\]")
LABEL_VALUES_RE = re.compile(r"\blabel_values\s*\(")


class InputError(Exception):
    pass


def strip_label_values(query):
    """label_values(expr, label) -> expr; label_values(label) -> ''."""
    out = []
    pos = 0
    while True:
        m = LABEL_VALUES_RE.search(query, pos)
        if not m:
            out.append(query[pos:])
            return "".join(out)
        out.append(query[pos:m.start()])
        depth = 1
        i = m.end()
        args_start = i
        last_comma = None
        while i < len(query) and depth:
            c = query[i]
            if c in "({[":
                depth += 1
            elif c in ")}]":
                depth -= 1
            elif c == "," and depth == 1:
                last_comma = i
            i += 1
        if last_comma is not None:
            out.append(" " + query[args_start:last_comma] + " ")
        # else a lone argument: a label name, not a metric.
        pos = i


def metric_names(promql):
    """Metric names that a PromQL expression (or a Grafana variable query) names."""
    q = STRING_RE.sub(" ", promql)          # strings first: they may hold braces
    q = strip_label_values(q)
    q = MATCHERS_RE.sub(" ", q)             # {label="..."} matchers
    q = LABEL_LIST_RE.sub(" ", q)           # by (...), on (...), ...
    q = VARIABLE_RE.sub(" ", q)             # $node, ${bench_job}, [[x]]
    return set(METRIC_RE.findall(q))


def iter_panels(panels):
    for p in panels or []:
        if not isinstance(p, dict):
            continue
        yield p
        yield from iter_panels(p.get("panels"))


def variable_query(var):
    q = var.get("query")
    if isinstance(q, dict):
        q = q.get("query") or q.get("expr") or ""
    if not isinstance(q, str) or not q:
        q = var.get("definition") or ""
    return q if isinstance(q, str) else ""


def dashboard_queries(dash):
    """(where, promql) for every PromQL string of the dashboard."""
    queries = []
    for p in iter_panels(dash.get("panels")):
        title = p.get("title") or "panel %s" % p.get("id")
        for t in p.get("targets") or []:
            if isinstance(t, dict) and isinstance(t.get("expr"), str):
                queries.append(("panel '%s' target %s" % (title, t.get("refId", "?")), t["expr"]))
    for v in (dash.get("templating") or {}).get("list") or []:
        if isinstance(v, dict) and v.get("type") == "query":
            queries.append(("variable '%s'" % v.get("name"), variable_query(v)))
    return queries


def structural_problems(dash):
    problems = []
    if dash.get("uid") != EXPECTED_UID:
        problems.append("dashboard uid is %r, expected %r" % (dash.get("uid"), EXPECTED_UID))
    names = {v.get("name") for v in (dash.get("templating") or {}).get("list") or []
             if isinstance(v, dict)}
    for want in REQUIRED_VARIABLES:
        if want not in names:
            problems.append("dashboard has no template variable %r" % want)
    panels = [p for p in iter_panels(dash.get("panels")) if p.get("type") != "row"]
    if not panels:
        problems.append("dashboard has no panels")
    for p in panels:
        title = p.get("title") or "panel %s" % p.get("id")
        if not p.get("datasource"):
            problems.append("panel '%s' has no datasource" % title)
        targets = [t for t in p.get("targets") or []
                   if isinstance(t, dict) and str(t.get("expr") or "").strip()]
        if not targets:
            problems.append("panel '%s' has no target with a query" % title)
    return problems


def exposition_names(text):
    """Names a Prometheus / OpenMetrics text exposition provides."""
    names = set()
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("TYPE", "HELP", "UNIT"):
                name = parts[2]
                names.add(name)
                if parts[1] == "TYPE" and len(parts) >= 4:
                    kind = parts[3].strip()
                    if kind == "counter" and not name.endswith("_total"):
                        names.add(name + "_total")
                    elif kind in ("histogram", "gaugehistogram", "summary"):
                        names.update(name + s for s in ("_bucket", "_sum", "_count"))
            continue
        m = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*(\{|\s)", line + " ")
        if not m:
            raise InputError("line %d is not a sample: %r" % (lineno, raw[:80]))
        names.add(m.group(1))
    return names


def read_metrics(source):
    try:
        if source == "-":
            return sys.stdin.read()
        if source.startswith(("http://", "https://")):
            with urllib.request.urlopen(source, timeout=10) as r:
                return r.read().decode("utf-8")
        with open(source, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError("cannot read metrics %s: %s" % (source, e))


def main(argv):
    ap = argparse.ArgumentParser(
        description="Check that every bench_ metric a Grafana dashboard queries is exported.")
    ap.add_argument("dashboard", help="dashboard JSON file")
    ap.add_argument("metrics", help="Prometheus text exposition: a file, '-' or an http:// URL")
    ap.add_argument("--allow-absent", action="append", default=[], metavar="REGEX",
                    help="metric names (full match) that may be missing from the exposition")
    args = ap.parse_args(argv)

    try:
        try:
            with open(args.dashboard, encoding="utf-8") as f:
                dash = json.load(f)
        except (OSError, UnicodeDecodeError) as e:
            raise InputError("cannot read dashboard %s: %s" % (args.dashboard, e))
        except json.JSONDecodeError as e:
            raise InputError("dashboard %s is not JSON: %s" % (args.dashboard, e))
        if not isinstance(dash, dict):
            raise InputError("dashboard %s is not a JSON object" % args.dashboard)
        # A dashboard exported "for sharing externally" or wrapped by the HTTP API.
        if "dashboard" in dash and isinstance(dash["dashboard"], dict) and "panels" not in dash:
            dash = dash["dashboard"]
        try:
            allowed = [re.compile(p) for p in args.allow_absent]
        except re.error as e:
            raise InputError("bad --allow-absent pattern: %s" % e)

        wanted = {}  # metric -> first place that names it
        for where, promql in dashboard_queries(dash):
            for name in sorted(metric_names(promql)):
                wanted.setdefault(name, where)
        if not wanted:
            raise InputError("dashboard %s names no bench_ metric in any query" % args.dashboard)

        exported = exposition_names(read_metrics(args.metrics))
    except InputError as e:
        print("dashboard_metrics: error: %s" % e, file=sys.stderr)
        return 2

    problems = structural_problems(dash)
    missing = []
    allowed_absent = []
    for name in sorted(wanted):
        if name in exported:
            continue
        if any(p.fullmatch(name) for p in allowed):
            allowed_absent.append(name)
        else:
            missing.append(name)

    for p in problems:
        print("dashboard_metrics: %s" % p)
    for name in missing:
        print("dashboard_metrics: missing metric %s (named by %s)" % (name, wanted[name]))
    if allowed_absent:
        print("dashboard_metrics: absent but allowed: %s" % " ".join(allowed_absent))
    if problems or missing:
        print("dashboard_metrics: FAIL: %d of %d metrics missing, %d structural problems"
              % (len(missing), len(wanted), len(problems)))
        return 1
    print("dashboard_metrics: OK: %d metrics checked (%d present, %d absent but allowed), "
          "uid %s, variables %s"
          % (len(wanted), len(wanted) - len(allowed_absent), len(allowed_absent),
             dash.get("uid"), ", ".join(REQUIRED_VARIABLES)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
