// The seam between the wire (benchfleet.v1 protos) and the controller's domain structs.
// Only this file and the RPC adapters include generated headers.
#pragma once

#include <vector>

#include "benchfleet/v1/agent.pb.h"
#include "benchfleet/v1/controller.pb.h"
#include "benchfleet/v1/types.pb.h"
#include "server/auth/join_token.h"
#include "server/core/agent_messages.h"
#include "server/core/job.h"
#include "server/core/views.h"
#include "server/results/baseline.h"
#include "server/results/job_diagnosis.h"
#include "server/results/results.h"
#include "server/results/variability.h"

namespace bench {

JobSpec FromProto(const benchfleet::v1::JobSpec& proto);
AgentInventory FromProto(const benchfleet::v1::AgentInventory& proto);
IterationSample FromProto(const benchfleet::v1::IterationSample& proto);
RankReport FromProto(const benchfleet::v1::RankReport& proto);
GpuSample FromProto(const benchfleet::v1::GpuSample& proto);
ResultsFilter FromProto(const benchfleet::v1::ResultsRequest& proto);

void ToProto(const JobSpec& spec, benchfleet::v1::JobSpec* proto);
void ToProto(const JobView& view, benchfleet::v1::JobStatus* proto);
void ToProto(const GpuTelemetry& gpu, benchfleet::v1::GpuTelemetry* proto);
void ToProto(const AgentView& view, benchfleet::v1::AgentStatus* proto);
void ToProto(const ResultCell& cell, benchfleet::v1::ResultCell* proto);
void ToProto(const AssignmentMessage& assignment, benchfleet::v1::Assignment* proto);
void ToProto(const CancelMessage& cancel, benchfleet::v1::CancelAssignment* proto);
void ToProto(const Baseline& baseline, benchfleet::v1::Baseline* proto);
void ToProto(const GpuVariability& gpu, benchfleet::v1::GpuVariability* proto);
void ToProto(const IterationSample& sample, benchfleet::v1::IterationSample* proto);
void ToProto(const GpuSample& sample, benchfleet::v1::GpuSample* proto);
// proto_convert_diagnosis.cc
void ToProto(const JobDiagnosis& diagnosis, benchfleet::v1::JobDiagnosis* proto);
// Never the secret (nor its hash).
void ToProto(const JoinTokenRecord& token, benchfleet::v1::JoinToken* proto);

}  // namespace bench
