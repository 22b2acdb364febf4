#!/usr/bin/env python3
"""e2e.slurm_allocate: benchd delegates allocation to a real Slurm (--slurm-partition).

Real processes only, on the two-node Slurm of tests/slurm/slurm_cluster.sh (as root):
benchd with security on (mutual TLS, a PKI from deploy/pki/) and --slurm-partition, no
standing agent. benchctl submits; benchd's batch script starts the agents on the
allocated nodes with a join token benchd made for that allocation (no node has a key made
for it: each agent makes its own and gets its node's certificate from benchd). Checks:
  1. a 4-rank job over the two nodes waits in Slurm's queue, not benchd's, then runs on
     its own agents (named after the Slurm nodes, labelled bench_job and slurm_job),
     succeeds with every (rank, iteration) stored exactly once, and `benchctl status`
     shows its Slurm job, state and node list; its allocation is released (scancel) and
     its agents leave;
  2. while one job holds both nodes, the next waits in Slurm's queue: QUEUED "waiting for
     its allocation: Slurm job N PENDING (Resources)"; `benchctl cancel` of the first
     scancels its Slurm job (CANCELLED, agents gone) and the second then runs and
     succeeds; an operator's `scancel` mid-run fails the job with Slurm's CANCELLED;
  3. a Slurm job that reaches its time limit (set to one minute with `scontrol update`,
     as an operator would) fails its bench job with Slurm's reason (TIMEOUT), not
     requeued, and no rank process is left.
The harness (Slurm, PKI, benchd, benchctl, cleanup) is agents_test.py's.

Usage: allocate_test.py --bin-dir BUILD/bin --source-dir SRC [--deadline-s 840]
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agents_test  # noqa: E402  (the shared harness)
from agents_test import check, log  # noqa: E402

PARTITION = "bench"  # slurm_cluster.sh's one partition


class SlurmAllocateTest(agents_test.SlurmAgentsTest):
    def benchd_flags(self):
        """benchd's flags besides the addresses, database and security."""
        agent = " ".join([os.path.join(self.bin_dir, "bench-agent"),
                          "--bench-train", os.path.join(self.bin_dir, "bench-train"),
                          "--tls-ca", f"{self.pki}/ca.pem"])
        return ["--slurm-partition", PARTITION, "--slurm-cpu-nodes", "--slurm-agent", agent,
                "--slurm-poll", "500ms",
                "--slurm-script-dir", os.path.join(self.tmp, "batch"),
                "--slurm-time-margin", "2m"]

    def benchd_env(self):
        # benchd runs sbatch, scontrol and scancel: it needs the cluster's SLURM_CONF.
        env = super().benchd_env()
        env["SLURM_CONF"] = self.slurm_env["SLURM_CONF"]
        return env

    def allocation(self, job_id):
        return self.job(job_id).get("allocation", {})

    def own_agents(self, job_id):
        return {a["inventory"]["name"]: a for a in self.agents()
                if a["inventory"].get("labels", {}).get("bench_job") == job_id}

    def check_job_in_an_allocation(self):
        started = time.monotonic()
        job_id = self.submit(["--iters", "30"])
        allocation = self.wait_until(f"{job_id}'s Slurm job",
                                     lambda: self.allocation(job_id).get("id"), 30)
        slurm_job = allocation
        log(f"{job_id}: Slurm job {slurm_job}")
        agents = self.wait_until(f"the agents of {job_id}",
                                 lambda: (lambda a: a if set(a) == {"nodeA", "nodeB"} else None)(
                                     self.own_agents(job_id)), 60)
        for name, agent in agents.items():
            labels = agent["inventory"]["labels"]
            check(labels.get("slurm_job") == slurm_job,
                  f"agent {name} is labelled slurm_job={labels.get('slurm_job')}")
            check(agent["inventory"]["cpu_slots"] == 2,
                  f"agent {name} offers {agent['inventory']['cpu_slots']} slots, not 2")
        job = self.wait_until(f"{job_id} to end",
                              lambda: (lambda j: j if j["state"] in (
                                  "JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED",
                                  "JOB_STATE_CANCELLED") else None)(self.job(job_id)), 300)
        log(f"{job_id}: {job['state']} in {time.monotonic() - started:.1f}s ({job['reason']})")
        check(job["state"] == "JOB_STATE_SUCCEEDED", f"{job_id} ended {job['state']}: "
              f"{job['reason']}")
        placed = {p["agent"]: sorted(p["ranks"]) for p in job["placements"]}
        check(sorted(placed) == ["nodeA", "nodeB"] and
              sorted(placed.values()) == [[0, 1], [2, 3]],
              f"{job_id} was placed {placed}, not two ranks on each Slurm node")
        self.check_samples_once(job_id, ranks=4, iterations=30)
        status = self.benchctl(["status", job_id]).stdout
        check(f"allocation: Slurm job {slurm_job} " in status,
              f"benchctl status shows no Slurm job {slurm_job}:\n{status}")
        # Released: benchd scancels the allocation; its agents leave.
        state = self.wait_until(f"Slurm job {slurm_job} to end",
                                lambda: (lambda s: s if s in ("CANCELLED", "COMPLETED")
                                         else None)(self.slurm_state(slurm_job)), 30)
        self.wait_until(f"the agents of {job_id} to leave",
                        lambda: not self.own_agents(job_id), 30)
        alloc = self.wait_until(f"{job_id}'s allocation to be seen ended",
                                lambda: (lambda a: a if a.get("ended") else None)(
                                    self.allocation(job_id)), 10)
        log(f"Slurm job {slurm_job} {state}, agents gone; status: allocation {alloc}")

    def check_samples_once(self, job_id, ranks, iterations):
        import sqlite3
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True) as db:
            rows = db.execute("SELECT rank, iteration, COUNT(*) FROM samples WHERE job_id = ? "
                              "GROUP BY rank, iteration", (job_id,)).fetchall()
        stored = {(rank, iteration) for rank, iteration, _ in rows}
        expected = {(r, i) for r in range(ranks) for i in range(1, iterations + 1)}
        check(stored == expected, f"{job_id}: stored pairs differ: missing "
              f"{sorted(expected - stored)[:10]}, unexpected {sorted(stored - expected)[:10]}")
        check(all(n == 1 for _, _, n in rows), f"{job_id}: samples stored more than once")
        log(f"{job_id}: {len(rows)} samples, each (rank, iteration) exactly once")

    def start_long_allocated_job(self):
        job_id = self.submit(["--iters", "1000000"])
        self.wait_until(f"{job_id} to run and store iterations",
                        lambda: self.job(job_id).get("iterations_done", 0) >= 2, 120)
        slurm_job = self.allocation(job_id)["id"]
        check(self.job_processes(slurm_job), f"no rank of {job_id} runs in Slurm job {slurm_job}")
        log(f"{job_id}: running in Slurm job {slurm_job}")
        return job_id, slurm_job

    def check_cancel(self):
        job_id, slurm_job = self.start_long_allocated_job()
        # A second job waits in Slurm's queue (both nodes are taken), and says so.
        waiting = self.submit(["--iters", "20"])
        pending = self.wait_until(
            f"{waiting}'s Slurm job to wait for resources",
            lambda: (lambda a: a if a.get("state") == "PENDING" and a.get("reason") == "Resources"
                     else None)(self.allocation(waiting)), 30)
        job = self.job(waiting)
        expected = f"waiting for its allocation: Slurm job {pending['id']} PENDING (Resources)"
        check(job["state"] == "JOB_STATE_QUEUED" and job["reason"] == expected,
              f"{waiting} is {job['state']} ({job['reason']}), not QUEUED ({expected})")
        log(f"{waiting}: QUEUED, {job['reason']}")
        cancelled_at = time.monotonic()
        self.benchctl(["cancel", job_id])
        self.wait_until(f"Slurm job {slurm_job} to be cancelled",
                        lambda: self.slurm_state(slurm_job) == "CANCELLED", 30)
        self.wait_until(f"the agents of {job_id} to leave", lambda: not self.own_agents(job_id),
                        30)
        self.wait_until(f"the ranks of Slurm job {slurm_job} to exit",
                        lambda: not self.job_processes(slurm_job), 15)
        state = self.job(job_id)["state"]
        check(state == "JOB_STATE_CANCELLED", f"{job_id} is {state} after benchctl cancel")
        log(f"benchctl cancel {job_id}: Slurm job {slurm_job} CANCELLED and its agents gone "
            f"after {time.monotonic() - cancelled_at:.1f}s")
        # The nodes are free: the waiting job's allocation starts and it runs to the end.
        done = self.wait_until(f"{waiting} to end",
                               lambda: (lambda j: j if j["state"] not in (
                                   "JOB_STATE_QUEUED", "JOB_STATE_RUNNING") else None)(
                                   self.job(waiting)), 180)
        check(done["state"] == "JOB_STATE_SUCCEEDED", f"{waiting} ended {done['state']}: "
              f"{done['reason']}")
        log(f"{waiting}: SUCCEEDED once the nodes were free")

    def check_external_scancel(self):
        """An operator's scancel of the allocation fails the job with Slurm's reason."""
        job_id, slurm_job = self.start_long_allocated_job()
        self.run(["scancel", slurm_job], env=self.slurm_env)
        job = self.wait_until(f"{job_id} to end after scancel {slurm_job}",
                              lambda: (lambda j: j if j["state"] != "JOB_STATE_RUNNING"
                                       else None)(self.job(job_id)), 45)
        check(job["state"] == "JOB_STATE_FAILED" and
              job["reason"].startswith(f"Slurm job {slurm_job} ended: CANCELLED"),
              f"{job_id} is {job['state']} ({job['reason']}), not FAILED for Slurm's CANCELLED")
        self.wait_until(f"the ranks of Slurm job {slurm_job} to exit",
                        lambda: not self.job_processes(slurm_job), 15)
        log(f"scancel {slurm_job}: {job_id} FAILED ({job['reason']})")

    def check_time_limit(self):
        job_id, slurm_job = self.start_long_allocated_job()
        self.run(["scontrol", "update", f"JobId={slurm_job}", "TimeLimit=1"], env=self.slurm_env)
        # Slurm checks time limits every 30 s or so: the step is signalled 60-100 s in.
        job = self.wait_until(f"{job_id} to end with its allocation's time limit",
                              lambda: (lambda j: j if j["state"] != "JOB_STATE_RUNNING"
                                       else None)(self.job(job_id)), 200, interval=0.5)
        check(job["state"] == "JOB_STATE_FAILED",
              f"{job_id} is {job['state']}, not FAILED: {job['reason']}")
        check(job["reason"].startswith(f"Slurm job {slurm_job} ended: TIMEOUT (TimeLimit)"),
              f"{job_id} failed for '{job['reason']}', not for Slurm's TIMEOUT")
        check(job.get("requeues", 0) == 0, f"{job_id} was requeued")
        check(job["allocation"]["state"] == "TIMEOUT" and job["allocation"]["ended"],
              f"{job_id}'s allocation: {job['allocation']}")
        self.wait_until(f"the ranks of Slurm job {slurm_job} to exit",
                        lambda: not self.job_processes(slurm_job), 15)
        log(f"{job_id}: FAILED ({job['reason']})")

    def run_all(self):
        self.make_pki()
        self.start_slurm()
        self.start_benchd()
        check(not self.agents(), "benchd has agents before any allocation")
        self.check_job_in_an_allocation()
        self.check_cancel()
        self.check_external_scancel()
        self.check_time_limit()


if __name__ == "__main__":
    sys.exit(agents_test.main(SlurmAllocateTest))
