#!/usr/bin/env python3
"""e2e.slurm_agents: bench-agents inside a real Slurm allocation (issue 16, item 1).

Real processes only: a two-node Slurm on this machine (tests/slurm/slurm_cluster.sh, as
root), benchd on free loopback ports with SQLite in a temp dir and security on (mutual
TLS; a PKI made with deploy/pki/), the agents started by `sbatch deploy/slurm/agents.sbatch`
onto both Slurm nodes with a join token and no certificate of their own (BENCH_TLS_CA,
BENCH_JOIN_TOKEN_FILE: each agent makes its key and gets its node's certificate from benchd,
which signs with --agent-signing-cert/-key), jobs through benchctl with an admin
certificate. Checks:
  1. both agents register, named after their Slurm node, labelled slurm_job=ID, with the
     allocation's CPUs as slots, each with its own key (0600, in its own state directory)
     and certificate for its node, spending the token's two uses, and with a --data-root for
     each folder of BENCH_DATA_ROOTS; a 4-rank job over the two nodes succeeds and every
     (rank, iteration) is stored exactly once in SQLite;
  2. `scancel` of the allocation mid-job: the agents leave the fleet and the job fails
     naming the SIGTERM within seconds (benchd's lease is 60 s here, so no lease did it),
     and no rank process is left;
  3. an allocation that reaches its own time limit (sbatch --time=1): the same, and Slurm
     says TIMEOUT.
The Slurm daemons, benchd and everything the jobs started are stopped whatever happens
(also on SIGTERM/SIGINT, and before the test's own deadline, which stays under ctest's).

Usage: agents_test.py --bin-dir BUILD/bin --source-dir SRC [--deadline-s 840]
"""
import argparse
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback

# Long enough that an agent the lease had to expire would fail the "left at once" checks.
AGENT_LEASE_S = 60
# How soon after Slurm's SIGTERM the agents must be gone and their job ended.
LEAVE_WITHIN_S = 15
TRAIN_FLAGS = ["--model", "resnet18", "--bs", "2", "--warmup", "5", "--image-size", "64"]


class Failure(Exception):
    pass


class Interrupted(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def check(condition, message):
    if not condition:
        raise Failure(message)


class SlurmAgentsTest:
    def __init__(self, bin_dir, source_dir, deadline_s):
        self.bin_dir = os.path.abspath(bin_dir)
        self.source_dir = os.path.abspath(source_dir)
        self.deadline = time.monotonic() + deadline_s
        # Short and searchable by all: munged's socket lives below it.
        self.tmp = tempfile.mkdtemp(prefix="bench-slurm-", dir="/tmp")
        os.chmod(self.tmp, 0o755)
        self.slurm_dir = os.path.join(self.tmp, "slurm")
        self.pki = os.path.join(self.tmp, "pki")
        self.join_token_file = None
        self.db = os.path.join(self.tmp, "bench.db")
        self.cluster_script = os.path.join(self.source_dir, "tests/slurm/slurm_cluster.sh")
        self.sbatch_script = os.path.join(self.source_dir, "deploy/slurm/agents.sbatch")
        self.slurm_env = None
        self.benchd = None
        self.server = None
        self.slurm_jobs = []

    # --- processes --------------------------------------------------------------------

    def remaining(self, timeout):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise Failure("the test's deadline passed")
        return min(timeout, left)

    def run(self, argv, env=None, timeout=60, check_rc=True):
        result = subprocess.run(argv, env=env, cwd=self.tmp, capture_output=True, text=True,
                                timeout=self.remaining(timeout))
        if check_rc and result.returncode != 0:
            raise Failure(f"{' '.join(argv)} exited {result.returncode}:\n"
                          f"{result.stdout}{result.stderr}")
        return result

    def wait_until(self, what, probe, timeout, interval=0.25):
        """Calls probe() until it returns a true value, which is returned."""
        allowed = self.remaining(timeout)
        end = time.monotonic() + allowed
        last = None
        while time.monotonic() < end:
            last = probe()
            if last:
                return last
            time.sleep(interval)
        cut = " (the test's deadline)" if allowed < timeout else ""
        raise Failure(f"timed out after {allowed:.0f}s{cut} waiting for {what} (last: {last!r})")

    def start_slurm(self):
        result = self.run(["bash", self.cluster_script, "start", self.slurm_dir], timeout=120)
        self.slurm_env = dict(os.environ)
        for line in result.stdout.splitlines():
            key, sep, value = line.partition("=")
            check(sep == "=" and key, f"slurm_cluster.sh start printed {line!r}, not KEY=VALUE")
            self.slurm_env[key] = value
        check("SLURM_CONF" in self.slurm_env, "slurm_cluster.sh start printed no SLURM_CONF")
        log(f"Slurm up: SLURM_CONF={self.slurm_env['SLURM_CONF']}")

    def make_pki(self):
        """The fleet's CA, benchd's certificate and agent signing sub-CA, an admin's; no
        node's: the agents bootstrap their own."""
        scripts = os.path.join(self.source_dir, "deploy/pki")
        self.run(["bash", f"{scripts}/make-ca.sh", self.pki])
        self.run(["bash", f"{scripts}/make-server-cert.sh", self.pki, "benchd", "IP:127.0.0.1"])
        self.run(["bash", f"{scripts}/make-signing-ca.sh", self.pki])
        self.run(["bash", f"{scripts}/make-client-cert.sh", self.pki, "admin", "tester"])

    def make_join_token(self, uses):
        """A join token for `uses` agents (benchctl join-token create), in a 0600 file."""
        out = self.benchctl(["join-token", "create", "--uses", str(uses), "--ttl", "1h",
                             "--description", "e2e.slurm_agents"]).stdout
        token = next((word for word in out.split() if word.startswith("bj1.")), None)
        check(token is not None, f"benchctl join-token create printed no token:\n{out}")
        path = os.path.join(self.tmp, "join-token")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
        self.join_token_file = path

    def benchd_flags(self):
        """benchd's flags besides the addresses, database and security (subclasses add)."""
        return []

    def benchd_env(self):
        return {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}

    def start_benchd(self):
        grpc_port, http_port = free_port(), free_port()
        self.server = f"127.0.0.1:{grpc_port}"
        env = self.benchd_env()
        self.benchd_log = open(os.path.join(self.tmp, "benchd.log"), "w")
        self.benchd = subprocess.Popen(
            [os.path.join(self.bin_dir, "benchd"), "--listen", self.server,
             "--http", f"127.0.0.1:{http_port}", "--db", self.db,
             "--agent-lease", f"{AGENT_LEASE_S}s", "--requeue-on-node-lost", "0",
             "--tls-cert", f"{self.pki}/benchd.pem", "--tls-key", f"{self.pki}/benchd.key",
             "--client-ca", f"{self.pki}/ca.pem",
             "--agent-signing-cert", f"{self.pki}/agent-signer.pem",
             "--agent-signing-key", f"{self.pki}/agent-signer.key"] + self.benchd_flags(),
            stdout=self.benchd_log, stderr=subprocess.STDOUT, env=env)
        self.wait_until("benchd to answer", lambda: self.benchctl(
            ["agents", "--format", "json"], check_rc=False).returncode == 0, 30)
        log(f"benchd up on {self.server}")

    def stop(self):
        """Stops benchd and the Slurm cluster; returns the problems found."""
        problems = []
        if self.benchd is not None and self.benchd.poll() is None:
            self.benchd.send_signal(signal.SIGTERM)
            try:
                self.benchd.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.benchd.kill()
                self.benchd.wait()
                problems.append("benchd did not stop within 15 s of SIGTERM")
            self.benchd_log.close()
        result = subprocess.run(["bash", self.cluster_script, "stop", self.slurm_dir],
                                capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            problems.append(f"slurm_cluster.sh stop exited {result.returncode}:\n"
                            f"{result.stdout}{result.stderr}")
        return problems

    def print_logs(self):
        paths = [os.path.join(self.tmp, "benchd.log")]
        paths += [self.agents_log(job) for job in self.slurm_jobs]
        paths += [os.path.join(self.slurm_dir, "log", name)
                  for name in ("slurmctld.log", "slurmd-nodeA.log", "slurmd-nodeB.log")]
        for path in paths:
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    lines = f.readlines()[-40:]
                print(f"--- {path} (last {len(lines)} lines)\n{''.join(lines)}", flush=True)

    # --- clients ----------------------------------------------------------------------

    def benchctl(self, args, check_rc=True, timeout=60):
        return self.run([os.path.join(self.bin_dir, "benchctl"), "--server", self.server,
                         "--tls-ca", f"{self.pki}/ca.pem", "--tls-cert", f"{self.pki}/tester.pem",
                         "--tls-key", f"{self.pki}/tester.key"] + args,
                        timeout=timeout, check_rc=check_rc)

    def agents(self):
        return json.loads(self.benchctl(["agents", "--format", "json"]).stdout)

    def job(self, job_id):
        return json.loads(self.benchctl(["status", job_id, "--format", "json"]).stdout)

    def submit(self, extra):
        return self.benchctl(["submit", "--nodes", "2", "--gpus-per-node", "2"] + TRAIN_FLAGS
                             + extra, timeout=600).stdout.split()[0]

    def agents_log(self, slurm_job):
        return os.path.join(self.tmp, f"agents-{slurm_job}.out")

    def sbatch_agents(self, extra):
        env = dict(self.slurm_env)
        env.update(BENCH_CONTROLLER=self.server,
                   BENCH_AGENT=os.path.join(self.bin_dir, "bench-agent"),
                   BENCH_TRAIN=os.path.join(self.bin_dir, "bench-train"),
                   BENCH_AGENT_STATE_ROOT=os.path.join(self.tmp, "agent-state"),
                   BENCH_TLS_CA=f"{self.pki}/ca.pem", BENCH_JOIN_TOKEN_FILE=self.join_token_file,
                   BENCH_DATA_ROOTS=":".join(self.data_roots()))
        result = self.run(["sbatch", "--parsable", "--nodes", "2", "--output",
                           os.path.join(self.tmp, "agents-%j.out")] + extra
                          + [self.sbatch_script], env=env)
        slurm_job = result.stdout.strip().split(";")[0]
        check(slurm_job.isdigit(), f"sbatch printed {result.stdout!r}, not a job id")
        self.slurm_jobs.append(slurm_job)
        log(f"sbatch {' '.join(extra)} agents.sbatch: Slurm job {slurm_job}")
        return slurm_job

    def data_roots(self):
        """Two folders given to the agents as BENCH_DATA_ROOTS (made on first use)."""
        roots = [os.path.join(self.tmp, "data", name) for name in ("imagenet", "coco")]
        for root in roots:
            os.makedirs(root, exist_ok=True)
        return roots

    def check_data_roots(self, slurm_job):
        """Each node's agent was started with a --data-root per folder of BENCH_DATA_ROOTS
        (the script logs the command line it execs)."""
        with open(self.agents_log(slurm_job)) as f:
            text = f.read()
        wanted = " ".join(f"--data-root {root}" for root in self.data_roots())
        for node in ("nodeA", "nodeB"):
            lines = [line for line in text.splitlines()
                     if line.startswith(f"bench-agents: {node}: ")]
            check(lines, f"no command line for {node} in {self.agents_log(slurm_job)}:\n{text}")
            check(wanted in lines[0], f"{node}'s agent lacks '{wanted}': {lines[0]}")
        log("each agent has a --data-root per folder of BENCH_DATA_ROOTS")

    def slurm_state(self, slurm_job):
        """JobState of a Slurm job as scontrol shows it (finished jobs stay 10 minutes)."""
        result = self.run(["scontrol", "--oneliner", "show", "job", slurm_job],
                          env=self.slurm_env)
        for field in result.stdout.split():
            if field.startswith("JobState="):
                return field.split("=", 1)[1]
        raise Failure(f"scontrol show job {slurm_job} has no JobState: {result.stdout}")

    def wait_for_agents(self, slurm_job):
        # An agent registers first and opens its assignment stream after the answer, so
        # "registered" alone is seen before "connected": wait for both (a probe that read
        # the two apart failed in CI).
        def both_connected():
            agents = {a["inventory"]["name"]: a for a in self.agents()}
            ours = {name: a for name, a in agents.items()
                    if a["inventory"].get("labels", {}).get("slurm_job") == slurm_job}
            if set(ours) != {"nodeA", "nodeB"}:
                return None
            return ours if all(a["connected"] for a in ours.values()) else None
        agents = self.wait_until(f"both agents of Slurm job {slurm_job} registered and connected",
                                 both_connected, 60)
        for name, agent in agents.items():
            check(agent["inventory"]["cpu_slots"] == 4,
                  f"agent {name} offers {agent['inventory']['cpu_slots']} CPU slots, not the "
                  "allocation's 4 CPUs")
        log(f"agents nodeA, nodeB registered and connected with slurm_job={slurm_job}, "
            "4 CPU slots each")

    def job_processes(self, slurm_job):
        """Pids of live processes launched inside Slurm job `slurm_job` (the agents' ranks
        inherit its environment)."""
        pids = []
        marker = f"SLURM_JOB_ID={slurm_job}".encode()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    environ = f.read().split(b"\0")
                with open(f"/proc/{entry}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if marker in environ and self.slurm_env["SLURM_CONF"].encode() in b"".join(environ) \
                    and state != "Z":
                pids.append(int(entry))
        return pids

    # --- the checks -------------------------------------------------------------------

    def check_own_keys(self):
        """Each node's agent made its own key (0600) and holds its node's certificate."""
        keys = set()
        for node in ("nodeA", "nodeB"):
            state = os.path.join(self.tmp, "agent-state", node)
            key, pem = os.path.join(state, "agent.key"), os.path.join(state, "agent.pem")
            check(os.path.exists(key) and os.path.exists(pem),
                  f"{state} holds no agent.key and agent.pem: {node}'s agent did not bootstrap")
            mode = os.stat(key).st_mode & 0o777
            check(mode == 0o600, f"{key} has mode {mode:o}, not 600")
            with open(key) as f:
                keys.add(f.read())
            text = self.run(["openssl", "x509", "-in", pem, "-noout", "-text"]).stdout
            check(f"URI:spiffe://benchfleet/agent/{node}" in text,
                  f"{pem} does not name {node}:\n{text}")
        check(len(keys) == 2, "the two nodes' agents share a key")
        log("each node's agent made its own key and holds its own node's certificate")

    def check_job_over_both_nodes(self):
        slurm_job = self.sbatch_agents([])
        self.wait_for_agents(slurm_job)
        self.check_own_keys()
        self.check_data_roots(slurm_job)
        started = time.monotonic()
        job_id = self.submit(["--iters", "30", "--wait"])
        job = self.job(job_id)
        log(f"{job_id}: {job['state']} in {time.monotonic() - started:.1f}s ({job['reason']})")
        check(job["state"] == "JOB_STATE_SUCCEEDED", f"{job_id} ended {job['state']}: "
              f"{job['reason']}")
        placed = {p["agent"]: sorted(p["ranks"]) for p in job["placements"]}
        check(placed == {"nodeA": [0, 1], "nodeB": [2, 3]},
              f"{job_id} was placed {placed}, not ranks 0-1 on nodeA and 2-3 on nodeB")
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True) as db:
            rows = db.execute("SELECT rank, iteration, COUNT(*) FROM samples WHERE job_id = ? "
                              "GROUP BY rank, iteration", (job_id,)).fetchall()
        stored = {(rank, iteration) for rank, iteration, _ in rows}
        expected = {(rank, iteration) for rank in range(4) for iteration in range(1, 31)}
        check(stored == expected, f"{job_id}: stored (rank, iteration) pairs differ from 4 "
              f"ranks x iterations 1..30: missing {sorted(expected - stored)[:10]}, "
              f"unexpected {sorted(stored - expected)[:10]}")
        repeated = [(rank, iteration, n) for rank, iteration, n in rows if n != 1]
        check(not repeated, f"{job_id}: samples stored more than once: {repeated[:10]}")
        log(f"{job_id}: 120 samples, each (rank, iteration) exactly once")
        return slurm_job

    def start_long_job(self, slurm_job):
        job_id = self.submit(["--iters", "1000000", "--node-label", f"slurm_job={slurm_job}"])
        self.wait_until(f"{job_id} to run and store iterations",
                        lambda: self.job(job_id).get("iterations_done", 0) >= 2, 120)
        check(self.job_processes(slurm_job), f"no rank of {job_id} runs in Slurm job {slurm_job}")
        log(f"{job_id}: running on the agents of Slurm job {slurm_job}")
        return job_id

    def check_agents_leave(self, slurm_job, job_id, signalled_at, cause):
        """After Slurm's SIGTERM at `signalled_at`: the agents deregister, the job fails
        with the agent's SIGTERM as its reason, no rank process is left; all within
        LEAVE_WITHIN_S (benchd's lease is AGENT_LEASE_S)."""
        def agents_gone():
            return not [a for a in self.agents()
                        if a["inventory"].get("labels", {}).get("slurm_job") == slurm_job]
        self.wait_until(f"the agents of Slurm job {slurm_job} to leave after {cause}",
                        agents_gone, LEAVE_WITHIN_S)
        gone_after = time.monotonic() - signalled_at
        job = self.wait_until(f"{job_id} to leave RUNNING after {cause}",
                              lambda: (lambda j: j if j["state"] != "JOB_STATE_RUNNING"
                                       else None)(self.job(job_id)),
                              max(1, LEAVE_WITHIN_S - gone_after))
        ended_after = time.monotonic() - signalled_at
        check(job["state"] == "JOB_STATE_FAILED",
              f"{job_id} is {job['state']} after {cause}, not FAILED: {job['reason']}")
        check("SIGTERM" in job["reason"],
              f"{job_id} failed for '{job['reason']}', not for its agent's SIGTERM")
        left = self.wait_until(f"the ranks of Slurm job {slurm_job} to exit",
                               lambda: not self.job_processes(slurm_job) or None, 5)
        check(left, "ranks left running")
        log(f"{cause}: agents gone after {gone_after:.1f}s, {job_id} {job['state']} after "
            f"{ended_after:.1f}s ({job['reason']}); lease {AGENT_LEASE_S}s")

    def check_scancel(self, slurm_job):
        job_id = self.start_long_job(slurm_job)
        signalled_at = time.monotonic()
        self.run(["scancel", slurm_job], env=self.slurm_env)
        self.check_agents_leave(slurm_job, job_id, signalled_at, f"scancel {slurm_job}")
        state = self.wait_until(f"Slurm job {slurm_job} to end",
                                lambda: (lambda s: s if s == "CANCELLED" else None)(
                                    self.slurm_state(slurm_job)), 30)
        log(f"Slurm job {slurm_job}: {state}")

    def check_time_limit(self):
        submitted_at = time.monotonic()
        slurm_job = self.sbatch_agents(["--time", "1"])
        self.wait_for_agents(slurm_job)
        job_id = self.start_long_job(slurm_job)
        # Slurm checks time limits every 30 s or so: the step is signalled 60-100 s in.
        self.wait_until(f"Slurm job {slurm_job} to reach its time limit",
                        lambda: self.slurm_state(slurm_job) != "RUNNING", 180, interval=0.2)
        signalled_at = time.monotonic()
        ran = signalled_at - submitted_at
        check(ran >= 55, f"Slurm job {slurm_job} stopped after {ran:.0f}s, before its "
              "1-minute limit")
        self.check_agents_leave(slurm_job, job_id, signalled_at, "the time limit")
        state = self.wait_until(f"Slurm job {slurm_job} to end TIMEOUT",
                                lambda: (lambda s: s if s == "TIMEOUT" else None)(
                                    self.slurm_state(slurm_job)), 30)
        log(f"Slurm job {slurm_job}: {state} after {ran:.0f}s")

    def run_all(self):
        self.make_pki()
        self.start_slurm()
        self.start_benchd()
        # Two uses per allocation would do; the scancel and time-limit allocations reuse
        # the certificates in the nodes' state directories (still valid: no token use).
        self.make_join_token(2)
        slurm_job = self.check_job_over_both_nodes()
        self.check_scancel(slurm_job)
        self.check_time_limit()


def main(test_class=SlurmAgentsTest):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True, help="the build's bin/ (benchd, ...)")
    parser.add_argument("--source-dir", required=True, help="the source tree")
    parser.add_argument("--deadline-s", type=float, default=840,
                        help="stop and clean up after this long (under ctest's timeout)")
    options = parser.parse_args()
    for program in ("benchd", "bench-agent", "bench-train", "benchctl"):
        path = os.path.join(options.bin_dir, program)
        if not os.access(path, os.X_OK):
            sys.exit(f"agents_test.py: --bin-dir: no executable {path}")
    if os.geteuid() != 0:
        sys.exit("agents_test.py: must run as root (it starts slurmd and munged)")

    def interrupt(signum, _frame):
        raise Interrupted(f"signal {signum}")
    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, interrupt)

    test = test_class(options.bin_dir, options.source_dir, options.deadline_s)
    failure = None
    try:
        test.run_all()
    except (Failure, Interrupted, subprocess.TimeoutExpired) as error:
        failure = str(error)
    except Exception:  # a bug in the test or an unexpected answer: still clean up
        failure = traceback.format_exc()
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # cleanup is not interrupted
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if failure is not None:
            test.print_logs()
        problems = test.stop()
    for problem in problems:
        print(f"FAIL (cleanup): {problem}", flush=True)
    if failure is not None:
        print(f"FAIL: {failure}\n(files kept in {test.tmp})", flush=True)
        return 1
    if problems:
        return 1
    shutil.rmtree(test.tmp, ignore_errors=True)
    print("PASS", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
