#!/usr/bin/python3
"""e2e.probes: issue 15's probes, tried by a client written apart from the project.

Python with Debian's python3-grpcio and python3-protobuf; no generated stubs: the
messages are built at run time from the v1 API's FileDescriptorSet, made by the
project's own protoc (proto/CMakeLists.txt, benchfleet_v1.desc). A PKI is made with the
operators' scripts (deploy/pki/); a real benchd (TLS, client CA, hashed tokens) and two
real bench-agents, node-a and node-b, run a real 4-rank job of alice's. Beside it an
intruder holding a valid agent certificate for a third node, node-x, a caller with no
credential, a view token and another submitter, bob, try every probe of the issue that
applies. Each must be refused with the right code, nothing bogus may be stored, and the
real job must still succeed with its own figures.

Usage (ctest e2e.probes passes these): probes_test.py --benchd PATH --bench-agent PATH
  --bench-train PATH --descriptor-set PATH --source-dir DIR
Exits 0 when every check passed, 1 otherwise (the failures and the processes' logs are
printed). BENCH_KEEP_TMP=1 keeps the temporary directory.
"""

import argparse
import math
import os
import queue
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request

try:
    import grpc
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
except ImportError as error:  # the system interpreter with Debian's packages is needed
    sys.exit(f"probes_test.py: {error}: install python3-grpcio and python3-protobuf "
             "(deploy/install-deps.sh) and run with Debian's /usr/bin/python3")

C = grpc.StatusCode
ITERATIONS = 30  # the real job's
BATCH = 2        # per rank
INT32_MAX = 2**31 - 1
FAILURES = []
# The /metrics counters the probes move (docs/observability.md), by (name, reason).
COUNTED = [("bench_ingest_errors_total", reason) for reason in (
    "rank_not_on_agent", "bad_time", "bad_images", "bad_iteration", "gpu_on_cpu_rank")] + [
    ("bench_rank_reports_rejected_total", reason) for reason in ("rank_not_on_agent",
                                                                 "bad_summary")]


def check(condition, what):
    """Records a failed check (the test goes on, to show every finding at once)."""
    if condition:
        print(f"  ok    {what}")
    else:
        print(f"  FAIL  {what}")
        FAILURES.append(what)
    return condition


def expect_code(got, want, what):
    code, details = got[0], got[1]
    return check(code == want, f"{what}: {want.name} (got {code.name}"
                 f"{': ' + short(details) if code != want and details else ''})")


def short(text, n=160):
    text = text or ""
    return text if len(text) <= n else f"{text[:n]}... ({len(text)} chars)"


# ---- The v1 API, from its descriptor set -----------------------------------------------

class Api:
    """Message classes and method types of the v1 API, from benchfleet_v1.desc."""

    def __init__(self, descriptor_set_path):
        files = descriptor_pb2.FileDescriptorSet()
        with open(descriptor_set_path, "rb") as f:
            files.ParseFromString(f.read())
        self.pool = descriptor_pool.DescriptorPool()
        for file in files.file:
            self.pool.Add(file)
        self.factory = message_factory.MessageFactory(self.pool)

    def cls(self, name):
        return self.factory.GetPrototype(self.pool.FindMessageTypeByName(f"benchfleet.v1.{name}"))

    def msg(self, type_name, **fields):
        return self.cls(type_name)(**fields)

    def method(self, path):
        """'/benchfleet.v1.Service/Method' -> (request class, response class)."""
        service, method = path.strip("/").split("/")
        m = self.pool.FindServiceByName(service).FindMethodByName(method)
        return (self.factory.GetPrototype(m.input_type), self.factory.GetPrototype(m.output_type))

    def enum(self, enum_name, value_name):
        return self.pool.FindEnumTypeByName(f"benchfleet.v1.{enum_name}").values_by_name[
            value_name].number


AGENT = "/benchfleet.v1.AgentService/"
CTL = "/benchfleet.v1.Controller/"


class Caller:
    """One identity on one channel. call() answers (code, details, response): the
    response is None unless the code is OK. A request given as bytes is sent as it is."""

    def __init__(self, api, target, ca, cert=None, key=None, token=None, name="?"):
        self.api, self.name = api, name
        creds = grpc.ssl_channel_credentials(
            root_certificates=ca, private_key=key, certificate_chain=cert)
        self.channel = grpc.secure_channel(target, creds)
        self.metadata = (("authorization", f"Bearer {token}"),) if token else ()

    def _stub(self, path, raw, kind):
        request_cls, response_cls = self.api.method(path) if path.startswith(
            "/benchfleet.") else (None, None)
        serialize = (lambda b: b) if raw else request_cls.SerializeToString
        deserialize = (lambda b: b) if response_cls is None else response_cls.FromString
        return getattr(self.channel, kind)(path, request_serializer=serialize,
                                           response_deserializer=deserialize)

    def call(self, path, request=b"", timeout=30):
        stub = self._stub(path, isinstance(request, bytes), "unary_unary")
        try:
            response = stub(request, metadata=self.metadata, timeout=timeout)
            return (C.OK, "", response)
        except grpc.RpcError as error:
            return (error.code(), error.details() or "", None)

    def first_of_stream(self, path, request, timeout=10):
        """A server stream's first message (or its refusal)."""
        stub = self._stub(path, isinstance(request, bytes), "unary_stream")
        try:
            return (C.OK, "", next(stub(request, metadata=self.metadata, timeout=timeout)))
        except grpc.RpcError as error:
            return (error.code(), error.details() or "", None)

    def stream(self, path, request):
        """A server stream read on a thread: .next(timeout) -> message or None; .cancel()."""
        stub = self._stub(path, False, "unary_stream")
        return Stream(stub(request, metadata=self.metadata))

    def bidi_first(self, path, request, timeout=10):
        stub = self._stub(path, True, "stream_stream")
        try:
            return (C.OK, "", next(stub(iter([request]), metadata=self.metadata,
                                        timeout=timeout)))
        except grpc.RpcError as error:
            return (error.code(), error.details() or "", None)

    def ok(self, path, request=b"", timeout=30):
        code, details, response = self.call(path, request, timeout)
        if code != C.OK:
            raise RuntimeError(f"{self.name} {path}: {code.name}: {short(details, 400)}")
        return response

    def close(self):
        self.channel.close()


class Stream:
    def __init__(self, call):
        self.call, self.messages = call, queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for message in self.call:
                self.messages.put(message)
        except grpc.RpcError:
            pass

    def next(self, timeout):
        try:
            return self.messages.get(timeout=timeout)
        except queue.Empty:
            return None

    def cancel(self):
        self.call.cancel()


# ---- Processes --------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def descendants(pid):
    """Every process below `pid` (ranks lead process groups of their own)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


class Cluster:
    def __init__(self, args, tmp):
        self.args, self.tmp = args, tmp
        self.pki = os.path.join(tmp, "pki")
        self.grpc_port, self.http_port = free_port(), free_port()
        self.target = f"127.0.0.1:{self.grpc_port}"
        self.procs = {}  # name -> Popen
        self.tokens = {}

    def log_path(self, name):
        return os.path.join(self.tmp, f"{name}.log")

    def pki_script(self, script, *args):
        out = subprocess.run(
            ["bash", os.path.join(self.args.source_dir, "deploy", "pki", script), *args],
            env={**os.environ, "BENCH_PKI_DAYS": "2"}, check=True, capture_output=True,
            text=True)
        return out.stdout.strip()

    def make_pki(self):
        p = self.pki
        self.pki_script("make-ca.sh", p)
        self.pki_script("make-server-cert.sh", p, "server", "DNS:localhost,IP:127.0.0.1")
        for node in ("node-a", "node-b", "node-x"):
            self.pki_script("make-client-cert.sh", p, "agent", node)
        tokens = os.path.join(p, "tokens")
        for role, name in (("submit", "alice"), ("submit", "bob"), ("view", "grafana")):
            self.tokens[name] = self.pki_script("new-token.sh", role, name, tokens)

    def read(self, name):
        with open(os.path.join(self.pki, name), "rb") as f:
            return f.read()

    def start(self, name, argv):
        log = open(self.log_path(name), "ab")
        # Its own session, hence process group: teardown kills the group.
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()

    def start_benchd(self):
        p = self.pki
        self.start("benchd", [
            self.args.benchd, "--listen", self.target, "--http",
            f"127.0.0.1:{self.http_port}", "--db", os.path.join(self.tmp, "bench.db"),
            "--tls-cert", f"{p}/server.pem", "--tls-key", f"{p}/server.key",
            "--client-ca", f"{p}/ca.pem", "--tokens", f"{p}/tokens", "--cert-refresh", "1s"])

    def start_agent(self, node):
        p = self.pki
        state = os.path.join(self.tmp, f"state-{node}")
        os.makedirs(state, exist_ok=True)
        self.start(f"agent-{node}", [
            self.args.bench_agent, "--controller", self.target, "--name", node, "--address",
            "127.0.0.1", "--bench-train", self.args.bench_train, "--cpu-slots", "2",
            "--state-dir", state, "--tls-ca", f"{p}/ca.pem", "--tls-cert", f"{p}/{node}.pem",
            "--tls-key", f"{p}/{node}.key"])

    def stop(self, name, sig=signal.SIGTERM, wait_s=10):
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        below = descendants(proc.pid)
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=wait_s)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        for pid in [proc.pid] + below:  # what is left of it, ranks' groups included
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        proc.wait()

    def stop_all(self):
        for name in [n for n in self.procs if n.startswith("agent-")] + ["benchd"]:
            self.stop(name)

    def print_logs(self, lines=150):
        for name in sorted(os.listdir(self.tmp)):
            if name.endswith(".log"):
                with open(os.path.join(self.tmp, name), errors="replace") as f:
                    tail = f.read().splitlines()[-lines:]
                print(f"\n----- {name} (last {len(tail)} lines) -----")
                print("\n".join(tail))

    def metrics(self, token):
        """benchd's /metrics over HTTPS (same certificate) with a view token."""
        context = ssl.create_default_context(cafile=os.path.join(self.pki, "ca.pem"))
        request = urllib.request.Request(f"https://127.0.0.1:{self.http_port}/metrics",
                                         headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            text = response.read().decode()
        counters = {}
        for name, labels, value in re.findall(
                r'^(bench_(?:ingest_errors|rank_reports_rejected)_total)\{([^}]*)\}\s+(\S+)$',
                text, re.M):
            reason = re.search(r'reason="([^"]*)"', labels).group(1)
            counters[(name, reason)] = float(value)
        return counters


def wait_for(what, predicate, timeout_s, every_s=0.2):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every_s)
    raise TimeoutError(f"timed out after {timeout_s} s waiting for {what}")


# ---- The probes --------------------------------------------------------------------------
# Each function quotes the issue's probe it tries.

class Probes:
    """What the probes share: the API, the cluster, one Caller per identity (alice, bob,
    view, nobody, forged_token, node_x, node_a) and `expected`, how much each counter
    of COUNTED must have grown."""


def job_spec(api, **fields):
    spec = dict(model="resnet18", devices=1, batch_size=BATCH, iterations=3,
                warmup_iterations=1, image_size=32,
                precision=api.enum("Precision", "PRECISION_FP32"))
    spec.update(fields)
    return api.msg("JobSpec", **spec)


def submit(caller, api, **fields):
    return caller.call(CTL + "SubmitJob", api.msg("SubmitJobRequest", spec=job_spec(api, **fields)))


def inventory(api, name, **fields):
    inv = dict(name=name, address="127.0.0.1", hostname="intruder")
    inv.update(fields)
    return api.msg("RegisterRequest", inventory=api.msg("AgentInventory", **inv))


def probe_no_credential(t):
    """'today's benchd lets anyone who reaches its port do anything'; 'neither
    grpc.health.v1.Health nor server reflection is served'."""
    print("no credential, health, reflection")
    api = t.api
    expect_code(t.nobody.call(CTL + "ListJobs", api.msg("ListJobsRequest")), C.UNAUTHENTICATED,
                "ListJobs without a credential")
    expect_code(submit(t.nobody, api, name="anonymous"), C.UNAUTHENTICATED,
                "SubmitJob without a credential")
    expect_code(t.nobody.call(AGENT + "Register", inventory(api, "node-x", cpu_slots=1)),
                C.UNAUTHENTICATED, "Register without a credential")
    expect_code(t.forged_token.call(CTL + "ListJobs", api.msg("ListJobsRequest")),
                C.UNAUTHENTICATED, "ListJobs with a token benchd does not know")
    # grpc.health.v1.Health/Check, empty HealthCheckRequest; the answer is
    # HealthCheckResponse{status: SERVING (1)}, i.e. the bytes 08 01.
    code, details, response = t.nobody.call("/grpc.health.v1.Health/Check", b"")
    expect_code((code, details), C.OK, "grpc.health.v1.Health/Check without a credential")
    check(response == b"\x08\x01", f"health answers SERVING (got {response!r})")
    # ServerReflectionRequest{list_services: "*"} (field 7); benchd runs without
    # --grpc-reflection, so neither version is served.
    for version in ("v1alpha", "v1"):
        expect_code(t.alice.bidi_first(
            f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo", b"\x3a\x01*"),
            C.UNIMPLEMENTED, f"reflection {version} without --grpc-reflection")


def probe_agent_identity(t):
    """'any client can Register as an agent (or under a real agent's name, taking it
    over), receive a job's assignment'; 'agent names of any bytes (NUL, newline — a
    newline forges lines in benchd's log), duplicate or negative GPU indexes are
    accepted'; 'an agent registering 20,000,000 CPU slots makes every submit take
    seconds'."""
    print("agent identity and inventories (node-x's certificate)")
    api, x = t.api, t.node_x
    expect_code(x.call(AGENT + "Register", inventory(api, "node-a", cpu_slots=2)),
                C.PERMISSION_DENIED, "node-x registers as node-a")
    for name in ("node-x\nI1124 benchd forged log line", "node-x\x00", "node-a\n"):
        expect_code(x.call(AGENT + "Register", inventory(api, name, cpu_slots=1)),
                    C.PERMISSION_DENIED, f"node-x registers as {name!r}")
    expect_code(t.alice.call(AGENT + "Register", inventory(api, "alice", cpu_slots=1)),
                C.PERMISSION_DENIED, "a submit token registers as an agent")
    started = time.monotonic()
    got = x.call(AGENT + "Register", inventory(api, "node-x", cpu_slots=20_000_000))
    expect_code(got, C.INVALID_ARGUMENT, "node-x registers 20,000,000 CPU slots")
    check(time.monotonic() - started < 5, "... refused at once")
    check("cpu_slots" in got[1], f"... naming cpu_slots ({short(got[1])})")
    for field, value in (("hostname", "h\nI1124 benchd forged log line"),
                         ("address", "127.0.0.1\r\n"), ("labels", {"k": "v\nforged"})):
        expect_code(x.call(AGENT + "Register", inventory(api, "node-x", cpu_slots=1,
                                                          **{field: value})),
                    C.INVALID_ARGUMENT, f"node-x registers with a newline in {field}")
    gpu = lambda index, uuid: api.msg("Gpu", index=index, uuid=uuid, name="Fake GPU",
                                      memory_bytes=1 << 30)
    expect_code(x.call(AGENT + "Register", inventory(
        api, "node-x", gpus=[gpu(0, "GPU-x0"), gpu(0, "GPU-x1")])), C.INVALID_ARGUMENT,
        "node-x registers duplicate GPU indexes")
    expect_code(x.call(AGENT + "Register", inventory(api, "node-x", gpus=[gpu(-1, "GPU-x0")])),
                C.INVALID_ARGUMENT, "node-x registers a negative GPU index")
    # Acting as node-a on the other agent RPCs: its assignments, its heartbeat, its ranks.
    expect_code(x.first_of_stream(AGENT + "StreamAssignments",
                                  api.msg("StreamAssignmentsRequest", agent="node-a")),
                C.PERMISSION_DENIED, "node-x streams node-a's assignments")
    expect_code(x.call(AGENT + "Heartbeat", api.msg("HeartbeatRequest", agent="node-a")),
                C.PERMISSION_DENIED, "node-x heartbeats as node-a")
    expect_code(x.call(AGENT + "ReportStatus", api.msg("ReportStatusRequest", agent="node-a",
                                                       job_id="job-1", attempt=1)),
                C.PERMISSION_DENIED, "node-x reports as node-a")
    expect_code(x.call(AGENT + "UploadSamples", api.msg("UploadSamplesRequest", agent="node-a")),
                C.PERMISSION_DENIED, "node-x uploads as node-a")
    # Unregistered, node-x's own reports are not taken (retry after registering).
    expect_code(x.call(AGENT + "ReportStatus", api.msg("ReportStatusRequest", agent="node-x",
                                                       job_id="job-1", attempt=1)),
                C.UNAVAILABLE, "node-x reports before registering")


def register_intruder(t):
    """node-x holds a valid agent certificate, so it may register under its own name,
    with a valid inventory: from then on its reports and samples reach the checks that
    ask whether a rank is placed on it. Jobs here are constrained to node-a and node-b."""
    print("node-x registers under its own name (valid, 1 CPU slot)")
    expect_code(t.node_x.call(AGENT + "Register", inventory(
        t.api, "node-x", cpu_slots=1, labels={"zone": "z=1"})), C.OK, "node-x registers as itself")


def rank_report(api, rank, state, **fields):
    return api.msg("RankReport", rank=rank, state=api.enum("RankState", state), **fields)


def forged_summary(api, rank):
    # 28 measured iterations of 2 images in 1.75 µs: 32,000,000 img/s.
    return api.msg("RankSummary", rank=rank, measured_iterations=28, measured_images=56,
                   window_s=56 / 32e6, step_time_median_s=56 / 32e6 / 28)


def probe_rendezvous(t, job_id):
    """'as rank 0's agent, choose the rendezvous address that real trainers then connect
    to' — sent right after submit, before rank 0's agent reports its port. It must be
    ignored (the job then succeeds on the real rendezvous)."""
    print("rendezvous (right after submit)")
    got = t.node_x.call(AGENT + "ReportStatus", t.api.msg(
        "ReportStatusRequest", agent="node-x", job_id=job_id, attempt=1, master_port=1))
    expect_code(got, C.OK, "node-x offers port 1 as the rendezvous of alice's job (ignored)")


def probe_samples(t, job_id, placements):
    """'samples are not checked: inf or negative step times, negative or 2^31−1 images,
    −1e300 elapsed, 1e300 °C readings on a CPU job are stored, and a forged sample stored
    first wins over the real one' — sent right after submit, before the ranks start."""
    print("samples (right after submit, before the ranks start)")
    api = t.api
    sample = lambda rank, iteration, **f: api.msg("IterationSample", **{
        **dict(job_id=job_id, attempt=1, rank=rank, iteration=iteration, step_time_s=1e-6,
               images=BATCH, loss=12345.0, data_time_s=0.0, elapsed_s=iteration * 1e-6,
               warmup=iteration <= 2), **f})
    reading = lambda rank, seq, **f: api.msg("GpuSample", **{
        **dict(job_id=job_id, attempt=1, rank=rank, seq=seq, gpu_uuid="GPU-forged",
               gpu_index=0, time_unix_ns=time.time_ns(), temperature_c=1e300, power_w=300.0),
        **f})
    implausible = lambda rank: [
        sample(rank, 3, step_time_s=math.inf), sample(rank, 4, step_time_s=-0.5),
        sample(rank, 5, images=INT32_MAX), sample(rank, 6, images=-2),
        sample(rank, 7, elapsed_s=-1e300), sample(rank, 8, data_time_s=math.nan),
        sample(rank, 0), sample(rank, ITERATIONS + 1)]

    # node-x: every iteration of every rank of alice's job, plausible-looking (but
    # 1 µs steps) and implausible, and GPU readings: none is placed on node-x.
    forged = [sample(r, i) for r in range(4) for i in range(1, ITERATIONS + 1)]
    forged += [s for r in range(4) for s in implausible(r)]
    readings = [reading(r, seq) for r in range(4) for seq in (1, 2)]
    got = t.node_x.call(AGENT + "UploadSamples", api.msg(
        "UploadSamplesRequest", agent="node-x", batch_id=7, samples=forged, gpu_samples=readings))
    expect_code(got, C.OK, "node-x uploads samples for alice's ranks (answered, not stored)")
    if got[2] is not None:
        r = got[2]
        check(r.stored == 0 and r.gpu_stored == 0 and r.duplicates == 0,
              f"... none stored (stored {r.stored}, gpu_stored {r.gpu_stored})")
        check(r.rejected == len(forged) + len(readings),
              f"... all {len(forged) + len(readings)} rejected (got {r.rejected})")
    t.expected[("bench_ingest_errors_total", "rank_not_on_agent")] += len(forged) + len(readings)

    # The same implausible values from node-a's own certificate (a faulty or subverted
    # real agent) for the ranks placed on node-a: refused by value, before any real sample.
    ranks_a = [r for p in placements if p.agent == "node-a" for r in p.ranks]
    check(len(ranks_a) == 2, f"alice's job has 2 ranks on node-a ({ranks_a})")
    bad = [s for r in ranks_a for s in implausible(r)]
    bad_readings = [reading(r, 1) for r in ranks_a] + [
        reading(r, 2, temperature_c=45.0) for r in ranks_a]
    got = t.node_a.call(AGENT + "UploadSamples", api.msg(
        "UploadSamplesRequest", agent="node-a", batch_id=8, samples=bad, gpu_samples=bad_readings))
    expect_code(got, C.OK, "node-a's certificate uploads implausible samples (answered)")
    if got[2] is not None:
        r = got[2]
        check(r.stored == 0 and r.gpu_stored == 0,
              f"... none stored (stored {r.stored}, gpu_stored {r.gpu_stored})")
        check(r.rejected == len(bad) + len(bad_readings),
              f"... all {len(bad) + len(bad_readings)} rejected (got {r.rejected})")
    n = len(ranks_a)
    for reason, count in (("bad_time", 4 * n), ("bad_images", 2 * n), ("bad_iteration", 2 * n),
                          ("gpu_on_cpu_rank", 2 * n)):
        t.expected[("bench_ingest_errors_total", reason)] += count
    job = t.alice.ok(CTL + "GetJob", api.msg("GetJobRequest", job_id=job_id))
    print(f"  info  samples stored when the forged ones were sent: {job.samples_stored}")


def probe_rank_reports(t, job_id):
    """'report its ranks SUCCEEDED with a forged summary — one such report put
    32,000,000 img/s into the results grid — fail or requeue jobs running on other
    agents'."""
    print("rank reports for alice's ranks from node-x")
    api = t.api
    report = lambda ranks: api.msg("ReportStatusRequest", agent="node-x", job_id=job_id,
                                   attempt=1, ranks=ranks)
    cases = [
        ("SUCCEEDED with a 32,000,000 img/s summary",
         [rank_report(api, r, "RANK_STATE_SUCCEEDED", summary=forged_summary(api, r))
          for r in range(4)]),
        ("FAILED", [rank_report(api, r, "RANK_STATE_FAILED", exit_code=1, message="forged")
                    for r in range(4)]),
        ("FAILED as a restarted agent (a requeue)",
         [rank_report(api, r, "RANK_STATE_FAILED", exit_code=-9,
                      message="bench-agent restarted: forged") for r in range(4)]),
    ]
    for what, ranks in cases:
        expect_code(t.node_x.call(AGENT + "ReportStatus", report(ranks)), C.OK,
                    f"node-x reports alice's ranks {what} (answered, ignored)")
        t.expected[("bench_rank_reports_rejected_total", "rank_not_on_agent")] += len(ranks)
    job = t.alice.ok(CTL + "GetJob", api.msg("GetJobRequest", job_id=job_id))
    running = api.enum("JobState", "JOB_STATE_RUNNING")
    check(job.state == running and job.requeues == 0 and job.attempt == 1,
          f"alice's job still RUNNING, attempt 1, not requeued (state {job.state}, "
          f"attempt {job.attempt}, requeues {job.requeues})")


def probe_cancel(t, job_id):
    """'anyone can cancel any job'."""
    print("cancel")
    request = t.api.msg("CancelJobRequest", job_id=job_id)
    expect_code(t.bob.call(CTL + "CancelJob", request), C.PERMISSION_DENIED,
                "bob (submit) cancels alice's job")
    expect_code(t.view.call(CTL + "CancelJob", request), C.PERMISSION_DENIED,
                "a view token cancels alice's job")
    expect_code(t.node_x.call(CTL + "CancelJob", request), C.PERMISSION_DENIED,
                "node-x's certificate cancels alice's job")
    expect_code(t.nobody.call(CTL + "CancelJob", request), C.UNAUTHENTICATED,
                "no credential cancels alice's job")
    expect_code(submit(t.view, t.api, name="view-submit"), C.PERMISSION_DENIED,
                "a view token submits")
    expect_code(submit(t.node_x, t.api, name="agent-submit"), C.PERMISSION_DENIED,
                "node-x's certificate submits")


def probe_free_text(t):
    """'free text has no bound: a 63 MiB job name is accepted and stored (...); a 5 MiB
    name is placed on an agent that can never receive it'; 'an error message echoes a
    1 MB input whole, so the client gets RESOURCE_EXHAUSTED (trailer over 8 KiB) instead
    of INVALID_ARGUMENT'; 'node-label and allowed-node constraints ...'."""
    print("free text")
    api = t.api
    MiB = 1 << 20

    def refused(got, what, field):
        expect_code(got, C.INVALID_ARGUMENT, what)
        check(len(got[1]) < 1024, f"... message under 1 KiB ({len(got[1])} bytes)")
        check(got[1].startswith(field), f"... naming {field} ({short(got[1], 100)})")

    refused(submit(t.alice, api, name="n" * (3 * MiB)), "a 3 MiB job name", "name")
    refused(submit(t.alice, api, request_id="r" * 1_000_000), "a 1 MB request id", "request_id")
    refused(submit(t.alice, api, name="real job\nI1124 forged log line"),
            "a job name with a newline", "name")
    refused(submit(t.alice, api, labels={"k": "v" * MiB}), "a 1 MiB label value", "labels")
    refused(submit(t.alice, api, allowed_nodes=["node-a\x1f"]),
            "an allowed node with 0x1f", "allowed_nodes")
    refused(submit(t.alice, api, node_labels={"k\x1f": "v"}),
            "a node-label key with 0x1f", "node_labels")
    # Past benchd's 4 MiB receive limit gRPC refuses the message before benchd reads it.
    for size in (5, 63):
        got = submit(t.alice, api, name="n" * (size * MiB))
        expect_code(got, C.RESOURCE_EXHAUSTED, f"a {size} MiB job name (over the 4 MiB limit)")
        check(len(got[1]) < 1024, f"... message under 1 KiB ({len(got[1])} bytes)")


def probe_unparsable(t):
    """'a request that does not parse is answered UNIMPLEMENTED with no message'."""
    print("unparsable requests")
    # Field 1 (spec) declared as 100 bytes long, with 3 there; then a bare 0xff.
    for what, data in (("a truncated SubmitJobRequest", b"\x0a\x64abc"),
                       ("bytes of no message", b"\xff\xff\xff\xff")):
        got = t.alice.call(CTL + "SubmitJob", data)
        expect_code(got, C.INVALID_ARGUMENT, f"{what} to SubmitJob")
        check("SubmitJob" in got[1] and "parse" in got[1],
              f"... with a message naming the method ({short(got[1], 120)})")
    got = t.node_x.call(AGENT + "Register", b"\x0a\x64abc")
    expect_code(got, C.INVALID_ARGUMENT, "a truncated RegisterRequest")
    # Server streams too: refused before the stream starts.
    expect_code(t.node_x.first_of_stream(AGENT + "StreamAssignments", b"\x0a\x64abc"),
                C.INVALID_ARGUMENT, "a truncated StreamAssignmentsRequest")
    expect_code(t.alice.first_of_stream(CTL + "WatchJob", b"\xff\xff"),
                C.INVALID_ARGUMENT, "unparsable bytes to WatchJob")
    expect_code(t.nobody.call(CTL + "SubmitJob", b"\xff\xff"), C.UNAUTHENTICATED,
                "unparsable bytes without a credential (refused before parsing)")


def probe_forged_summary_on_own_rank(t, store_samples):
    """'report its ranks SUCCEEDED with a forged summary — one such report put
    32,000,000 img/s into the results grid': here node-x runs a rank of its own (bob's
    1-rank job, constrained to node-x), stores plausible samples for it (or, with
    store_samples False, none at all), then reports a summary of 32,000,000 img/s. The
    summary must be refused (bad_summary) and the job end without a throughput rather
    than with a forged one."""
    print("a forged summary for node-x's own rank, "
          + ("after plausible samples" if store_samples else "with no sample stored"))
    api = t.api
    events = t.node_x.stream(AGENT + "StreamAssignments",
                             api.msg("StreamAssignmentsRequest", agent="node-x"))
    try:
        got = submit(t.bob, api, name="on node-x", iterations=ITERATIONS, warmup_iterations=2,
                     allowed_nodes=["node-x"])
        if not expect_code(got, C.OK, "bob submits a 1-rank job for node-x"):
            return None
        job_id = got[2].job_id
        event = events.next(timeout=30)
        check(event is not None and event.assign.job_id == job_id,
              f"... node-x receives its assignment ({event and event.assign.job_id})")
        report = lambda ranks, **f: api.msg("ReportStatusRequest", agent="node-x",
                                            job_id=job_id, attempt=1, ranks=ranks, **f)
        expect_code(t.node_x.call(AGENT + "ReportStatus", report(
            [rank_report(api, 0, "RANK_STATE_STARTED")], master_port=free_port())),
            C.OK, "node-x reports its rank STARTED")
        if store_samples:
            samples = [api.msg("IterationSample", job_id=job_id, attempt=1, rank=0,
                               iteration=i, step_time_s=0.1, images=BATCH, loss=2.0,
                               elapsed_s=0.1 * i, warmup=i <= 2)
                       for i in range(1, ITERATIONS + 1)]
            got = t.node_x.call(AGENT + "UploadSamples", api.msg(
                "UploadSamplesRequest", agent="node-x", batch_id=9, samples=samples))
            check(got[0] == C.OK and got[2].stored == ITERATIONS,
                  f"... stores {ITERATIONS} plausible samples (0.1 s steps) for it "
                  f"({got[0].name}, {got[2] and got[2].stored})")
        expect_code(t.node_x.call(AGENT + "ReportStatus", report(
            [rank_report(api, 0, "RANK_STATE_SUCCEEDED", summary=forged_summary(api, 0))])),
            C.OK, "node-x reports its rank SUCCEEDED with 32,000,000 img/s (answered)")
        t.expected[("bench_rank_reports_rejected_total", "bad_summary")] += 1
        job = t.view.ok(CTL + "GetJob", api.msg("GetJobRequest", job_id=job_id))
        check(job.state == api.enum("JobState", "JOB_STATE_SUCCEEDED"),
              f"... the job ends ({job.reason!r})")
        check(not job.has_throughput and not job.HasField("images_per_second"),
              f"... without a throughput (images_per_second "
              f"{job.images_per_second if job.HasField('images_per_second') else 'unset'})")
        results = t.view.ok(CTL + "Results", api.msg("ResultsRequest", model="resnet18"))
        top = max((c.max_images_per_second for c in results.cells
                   if c.HasField("max_images_per_second")), default=0)
        check(top < 1e6, f"... and no result over 1e6 img/s (fastest {top})")
        return job_id
    finally:
        events.cancel()


def probe_constraints_survive_restart(t, restart):
    """'node-label and allowed-node constraints (...) a value containing 0x1f comes back
    after a restart as a different constraint'."""
    print("constraints across a restart")
    api = t.api
    # No agent label may hold a control byte, so no agent can ever match this one.
    expect_code(submit(t.bob, api, name="0x1f node label", node_labels={"rack": "a\x1fb"}),
                C.FAILED_PRECONDITION, "a node-label value with 0x1f (no agent can match it)")
    labels = {"note": "a\x1fb=c", "eq": "=\x1f="}
    node_labels = {"zone": "z=1"}  # node-x registered with it
    got = submit(t.bob, api, name="constrained", labels=labels, node_labels=node_labels,
                 allowed_nodes=["node-x"])
    if not expect_code(got, C.OK, "bob submits a job for node-x, labels with 0x1f and '='"):
        return
    job_id = got[2].job_id
    restart()
    job = t.bob.ok(CTL + "GetJob", api.msg("GetJobRequest", job_id=job_id))
    check(dict(job.spec.labels) == labels,
          f"... the same labels after the restart ({dict(job.spec.labels)!r})")
    check(dict(job.spec.node_labels) == node_labels,
          f"... the same node labels ({dict(job.spec.node_labels)!r})")
    check(list(job.spec.allowed_nodes) == ["node-x"],
          f"... the same allowed nodes ({list(job.spec.allowed_nodes)})")
    expect_code(t.bob.call(CTL + "CancelJob", api.msg("CancelJobRequest", job_id=job_id)),
                C.OK, "bob cancels his own job")


# ---- What is stored ----------------------------------------------------------------------

def check_rendezvous(cluster, job_id):
    """The rendezvous node-b's ranks joined (their agent's log says): the port node-a
    picked for rank 0, not the one node-x offered."""
    ports = {}
    for node in ("node-a", "node-b"):
        with open(cluster.log_path(f"agent-{node}"), errors="replace") as f:
            found = re.search(rf"{job_id} attempt 1: started .*rendezvous 127\.0\.0\.1:(\d+)",
                              f.read())
        ports[node] = found and int(found.group(1))
    check(ports["node-a"] and ports["node-a"] == ports["node-b"] and ports["node-b"] != 1,
          f"node-b's ranks met at rank 0's rendezvous, not node-x's port 1 ({ports})")


def check_real_job(t, job_id):
    """The real job succeeded with its own figures; nothing forged was stored."""
    print("alice's job and what benchd stored")
    api = t.api
    job = t.view.ok(CTL + "GetJob", api.msg("GetJobRequest", job_id=job_id))
    check(job.state == api.enum("JobState", "JOB_STATE_SUCCEEDED"),
          f"alice's job SUCCEEDED ({job.reason!r})")
    check(job.attempt == 1 and job.requeues == 0, "... on its first attempt, never requeued")
    check(job.submitted_by == "alice", f"... submitted by alice ({job.submitted_by!r})")
    check({p.agent for p in job.placements} == {"node-a", "node-b"},
          f"... placed on node-a and node-b ({[p.agent for p in job.placements]})")
    check(job.ranks_summarized == 4, f"... 4 rank summaries stored ({job.ranks_summarized})")
    ips = job.images_per_second if job.HasField("images_per_second") else None
    check(ips is not None and 0 < ips < 1e6, f"... a plausible throughput ({ips} img/s)")

    results = t.view.ok(CTL + "Results", api.msg("ResultsRequest", model="resnet18"))
    cells = [c for c in results.cells if job_id in c.job_ids]
    check(len(cells) == 1, "... in one results cell")
    for cell in cells:
        top = cell.max_images_per_second if cell.HasField("max_images_per_second") else None
        check(top is not None and top < 1e6, f"... whose fastest run is plausible ({top} img/s)")

    samples = t.view.ok(CTL + "GetSamples", api.msg("GetSamplesRequest", job_id=job_id)).samples
    for rank in range(4):
        mine = [s for s in samples if s.rank == rank]
        check(sorted(s.iteration for s in mine) == list(range(1, ITERATIONS + 1)),
              f"rank {rank}: iterations 1..{ITERATIONS}, each once ({len(mine)} samples)")
        plausible = all(
            s.attempt == 1 and s.images == BATCH and math.isfinite(s.step_time_s) and
            1e-4 < s.step_time_s < 600 and s.elapsed_s >= 0 and s.loss != 12345.0
            for s in mine)
        check(plausible, f"rank {rank}: every sample the trainer's (no forged value)")


def check_fleet_and_jobs(t, real_jobs):
    print("agents and jobs listed")
    api = t.api
    agents = t.view.ok(CTL + "ListAgents", api.msg("ListAgentsRequest")).agents
    names = sorted(a.inventory.name for a in agents)
    # node-x registered validly as itself (register_intruder); nothing else of its.
    check(names == ["node-a", "node-b", "node-x"], f"agents node-a, node-b, node-x once each "
          f"({names!r})")
    for a in agents:
        want = 1 if a.inventory.name == "node-x" else 2
        check(a.inventory.cpu_slots == want and len(a.inventory.gpus) == 0,
              f"{a.inventory.name}: {want} CPU slots, no GPU (got {a.inventory.cpu_slots}, "
              f"{len(a.inventory.gpus)})")
    jobs = t.view.ok(CTL + "ListJobs", api.msg("ListJobsRequest")).jobs
    check(sorted(j.id for j in jobs) == sorted(real_jobs),
          f"only the real jobs exist ({sorted(j.id for j in jobs)})")
    check(all(len(j.spec.name) <= 256 and len(j.spec.request_id) <= 128 for j in jobs),
          "no stored name over 256 bytes nor request id over 128")


def check_counters(t, before):
    print("refusals counted in /metrics (HTTPS, view token)")
    after = t.cluster.metrics(t.cluster.tokens["grafana"])
    # Every counter the probes move, and any other reason that moved (none may).
    for key in sorted(set(before) | set(after) | set(COUNTED)):
        delta = after.get(key, 0) - before.get(key, 0)
        check(delta == t.expected.get(key, 0),
              f"{key[0]}{{reason=\"{key[1]}\"}} +{t.expected.get(key, 0)} (got +{delta:g})")


# ---- The run -------------------------------------------------------------------------------

def run(args, cluster):
    t = Probes()
    t.api, t.cluster = Api(args.descriptor_set), cluster
    t.expected = {key: 0 for key in COUNTED}
    cluster.make_pki()
    cluster.start_benchd()
    ca = cluster.read("ca.pem")

    def caller(name, token=None, cert=None):
        pem = cluster.read(f"{cert}.pem") if cert else None
        key = cluster.read(f"{cert}.key") if cert else None
        return Caller(t.api, cluster.target, ca, cert=pem, key=key, token=token, name=name)

    def connect():
        t.alice = caller("alice", token=cluster.tokens["alice"])
        t.bob = caller("bob", token=cluster.tokens["bob"])
        t.view = caller("view", token=cluster.tokens["grafana"])
        t.nobody = caller("nobody")
        t.forged_token = caller("forged", token="0" * 64)
        t.node_x = caller("node-x", cert="node-x")
        t.node_a = caller("node-a", cert="node-a")

    def up():
        # A channel of its own each time: one that failed while benchd was starting
        # would wait out its reconnect backoff.
        probe = caller("view", token=cluster.tokens["grafana"])
        try:
            return probe.call(CTL + "ListJobs", t.api.msg("ListJobsRequest"), timeout=5)[0] == C.OK
        finally:
            probe.close()

    def agents_connected():
        got = t.view.call(CTL + "ListAgents", t.api.msg("ListAgentsRequest"), timeout=5)
        return got[0] == C.OK and {a.inventory.name for a in got[2].agents if a.connected} >= {
            "node-a", "node-b"}

    wait_for("benchd", up, 30)
    connect()
    for node in ("node-a", "node-b"):
        cluster.start_agent(node)
    wait_for("node-a and node-b to connect", agents_connected, 60)

    probe_no_credential(t)
    probe_agent_identity(t)
    register_intruder(t)
    before = cluster.metrics(cluster.tokens["grafana"])

    print("alice submits a 4-rank job over node-a and node-b")
    started = time.monotonic()
    job_id = t.alice.ok(CTL + "SubmitJob", t.api.msg("SubmitJobRequest", spec=job_spec(
        t.api, name="probes: the real job", devices=4, nodes=2, devices_per_node=2,
        iterations=ITERATIONS, warmup_iterations=2, allowed_nodes=["node-a", "node-b"]))).job_id
    probe_rendezvous(t, job_id)

    def placed():
        job = t.alice.ok(CTL + "GetJob", t.api.msg("GetJobRequest", job_id=job_id))
        return job if len(job.placements) == 2 else None

    job = wait_for("alice's job to be placed", placed, 30, 0.01)
    probe_samples(t, job_id, job.placements)
    probe_rank_reports(t, job_id)
    probe_cancel(t, job_id)
    probe_free_text(t)
    probe_unparsable(t)

    terminal = {t.api.enum("JobState", s) for s in
                ("JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED")}
    wait_for("alice's job to end", lambda: t.view.ok(CTL + "GetJob", t.api.msg(
        "GetJobRequest", job_id=job_id)).state in terminal, 200, 0.5)
    print(f"  info  alice's job ended {time.monotonic() - started:.1f} s after submit")
    check_rendezvous(cluster, job_id)
    check_real_job(t, job_id)
    own_jobs = [probe_forged_summary_on_own_rank(t, store_samples)
                for store_samples in (True, False)]
    check_counters(t, before)
    check_fleet_and_jobs(t, [job_id] + [own for own in own_jobs if own])

    def restart_benchd():
        for c in (t.alice, t.bob, t.view, t.nobody, t.forged_token, t.node_x, t.node_a):
            c.close()
        cluster.stop("benchd")
        cluster.start_benchd()
        wait_for("benchd after its restart", up, 30)
        connect()

    probe_constraints_survive_restart(t, restart_benchd)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for flag in ("--benchd", "--bench-agent", "--bench-train", "--descriptor-set",
                 "--source-dir"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args()
    # Killed (a ctest timeout): unwind through the teardown below all the same, logs shown.
    def on_sigterm(*_):
        FAILURES.append("killed by SIGTERM")
        sys.exit(128 + signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_sigterm)
    tmp = tempfile.mkdtemp(prefix="bench-probes-")
    cluster = Cluster(args, tmp)
    started = time.monotonic()
    try:
        run(args, cluster)
    except Exception:  # a step that could not run at all: a failure too
        traceback.print_exc()
        FAILURES.append("the test could not run to its end (traceback above)")
    finally:
        cluster.stop_all()
        if FAILURES:
            cluster.print_logs()
        if os.environ.get("BENCH_KEEP_TMP"):
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    elapsed = time.monotonic() - started
    if FAILURES:
        print(f"\nFAILED: {len(FAILURES)} check(s) in {elapsed:.0f} s:")
        for failure in FAILURES:
            print(f"  - {failure}")
        return 1
    print(f"\nPASSED: every probe refused as it should be, the real job succeeded "
          f"({elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
