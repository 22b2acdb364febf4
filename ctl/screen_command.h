// `benchctl screen` (issue 26 item 4; README "Screening a cluster"): a single-GPU benchmark
// on every selected GPU at once, then a verdict per GPU and per node.
//   screen [--node N]... [--node-label k=v]... [--model M (resnet50)] [--iters N (500)]
//          [--warmup N] [--bs B (64)] [--precision P] [--image-size N] [--wall-time D]
//          [--hang-timeout D] [--id ID] [--allow-cpu] [--wait] [--format text|json]
//     picks the connected agents that match (every --node, each with every --node-label; none
//     given: every connected agent) and submits one 1-device job per GPU, all at once:
//     allowed_nodes=[agent], label screening=ID, request id "screen-ID-AGENT-I" (a retried
//     screen with the same --id submits nothing twice). An agent with CPU slots only is
//     refused (its name in the message) unless --allow-cpu (one job per CPU slot: tests,
//     demonstrations). Prints ID on stdout, each job on stderr. With --wait, follows the jobs
//     to their end, then prints the verdicts (report/screen_view.h).
//   screen --show ID [--format text|json]   the verdicts again, from the stored data
//   screen --list [--format text|json]      every screening, newest first
// Exit codes: 0 when every GPU is ok (or without --wait/--show), report::
// kScreenFlaggedExitCode (3) when a GPU is flagged or a job failed, 1 on errors, 2 on usage.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "benchfleet/v1/types.pb.h"
#include "ctl/args.h"
#include "ctl/command_table.h"
#include "ctl/commands.h"

namespace bench::ctl {

CommandSpec ScreenCommand();

// One job to submit: its agent and device index, and the spec (pure; tested).
struct ScreenJob {
  std::string node;
  int index = 0;
  benchfleet::v1::JobSpec spec;
};
// The jobs for `agents` (ListAgents' answer) under `options`, by agent name then index;
// FAILED_PRECONDITION naming the agents when none matches, when a --node is not connected,
// or when a matching agent has only CPU slots and --allow-cpu is not given.
absl::StatusOr<std::vector<ScreenJob>> PlanScreenJobs(
    const ScreenOptions& options, const std::string& screening_id,
    const std::vector<benchfleet::v1::AgentStatus>& agents);

// "scr-YYYYMMDD-HHMMSS-xxxx" (UTC; four random hex digits).
std::string NewScreeningId(absl::Time now);

absl::StatusOr<int> RunScreen(const ScreenOptions& options, OutputFormat format,
                              const CommandContext& context);

}  // namespace bench::ctl
