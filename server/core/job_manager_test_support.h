// Test helpers the JobManager's tests share (job_manager_test.cc, job_manager_time_test.cc,
// job_manager_validation_test.cc, job_events_test.cc): an AgentChannel that records what
// the manager sends, a small CPU job's spec, a CPU agent registered with its channel, and
// the manager's asynchronous answers to Submit and UploadSamples waited for.
//
// Test-only and header-only. A FakeChannel is not synchronised: read what it recorded from
// the test's thread once the manager's call that sends has returned.
#pragma once

#include <future>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/core/job_manager.h"

namespace bench {

// An AgentChannel that keeps what the manager sends it.
class FakeChannel : public AgentChannel {
 public:
  void SendAssignment(const AssignmentMessage& a) override { assignments.push_back(a); }
  void SendCancel(const CancelMessage& c) override { cancels.push_back(c); }
  void Close(const absl::Status& s) override { closed = s; }
  std::vector<AssignmentMessage> assignments;
  std::vector<CancelMessage> cancels;
  absl::Status closed;
};

// A small job: ResNet-50 in fp32 on `devices` devices, batch 2, 64-pixel images, one
// warm-up iteration of `iterations`.
inline JobSpec SmallJobSpec(int devices, int iterations = 5) {
  JobSpec spec;
  spec.model = "resnet50";
  spec.devices = devices;
  spec.precision = Precision::kFp32;
  spec.batch_size = 2;
  spec.iterations = iterations;
  spec.warmup_iterations = 1;
  spec.image_size = 64;
  return spec;
}

// Registers the CPU agent `name` (127.0.0.1, `slots` slots) and attaches `channel`; a
// refusal fails the test.
inline void RegisterCpuAgent(JobManager& manager, const std::string& name, int slots,
                             AgentChannel* channel) {
  AgentInventory inventory;
  inventory.name = name;
  inventory.address = "127.0.0.1";
  inventory.cpu_slots = slots;
  ASSERT_TRUE(manager.RegisterAgent(inventory).ok());
  ASSERT_TRUE(manager.AttachChannel(name, channel).ok());
}

// manager.Submit(spec) as `submitted_by`; waits for the manager's answer.
inline absl::StatusOr<SubmitResult> SubmitAndWait(JobManager& manager, JobSpec spec,
                                                  const std::string& submitted_by = "") {
  std::promise<absl::StatusOr<SubmitResult>> done;
  manager.Submit(std::move(spec), submitted_by,
                 [&](absl::StatusOr<SubmitResult> r) { done.set_value(std::move(r)); });
  return done.get_future().get();
}

// manager.UploadSamples as `agent`; waits for the manager's answer.
inline absl::StatusOr<AppendResult> UploadAndWait(JobManager& manager, const std::string& agent,
                                                  std::vector<IterationSample> samples,
                                                  std::vector<GpuSample> gpu_samples = {}) {
  std::promise<absl::StatusOr<AppendResult>> done;
  manager.UploadSamples(agent, std::move(samples), std::move(gpu_samples),
                        [&](absl::StatusOr<AppendResult> r) { done.set_value(std::move(r)); });
  return done.get_future().get();
}

}  // namespace bench
