// Human-readable and JSON renderings of jobs and agents for benchctl. Pure functions.
// Times are shown in the local time zone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "benchfleet/v1/types.pb.h"

namespace bench::ctl {

// "2024-05-01 12:00:03" in local time; "-" for 0.
std::string FormatTime(int64_t unix_ms);
// Ascending runs compressed: {0,1,2,3,6} -> "0-3,6".
std::string CompactRanges(const std::vector<int>& values);
// "resnet50, 8 devices, amp, batch 256/device, 100 iterations (10 warm-up), 224 px images"
std::string DescribeSpec(const benchfleet::v1::JobSpec& spec);
// Whole seconds, exactly, in d/h/m/s: 5400 -> "1h30m", 90 -> "1m30s", 7200 -> "2h",
// 3605 -> "1h5s", 93600 -> "1d2h"; "0s" for 0 or less.
std::string FormatSeconds(int64_t seconds);
// "key=value" pairs sorted by key, joined by `separator`; "" when empty.
std::string FormatLabels(const google::protobuf::Map<std::string, std::string>& labels,
                         const char* separator = ", ");
// The placement shape: "2 nodes x 8 devices", "2 nodes", "8 devices per node"; "" when
// neither nodes nor devices_per_node is set.
std::string DescribeShape(const benchfleet::v1::JobSpec& spec);
// "nodes dgx-01, dgx-02; labels gpu=h100" (either part alone); "" when unconstrained.
std::string DescribeConstraints(const benchfleet::v1::JobSpec& spec);
// "wall time 2h, hang timeout 10m" (either alone); "" when both are benchd's defaults.
std::string DescribeLimits(const benchfleet::v1::JobSpec& spec);
// "synthetic", or "imagefolder at /data/imagenet/train, 8 loader threads per rank" (0:
// "bench-train's default loader threads").
std::string DescribeData(const benchfleet::v1::JobSpec& spec);
// The measured window's data wait (iterations past warm-up, every rank): "12.3 ms median
// per step, 8.1% of the median step time (240 iterations)", or "no measured iterations".
std::string DataWaitText(const std::vector<benchfleet::v1::IterationSample>& samples);
// "8x NVIDIA A100-SXM4-80GB" (identical names grouped, in order), or "4 CPU slots".
std::string DescribeDevices(const benchfleet::v1::AgentInventory& inventory);

// "p50 (p5-p95)" of a reading with printf `format` for each figure, or "no data" (count 0).
std::string FormatPercentiles(const benchfleet::v1::Percentiles& p, const char* format);
// "bench_train=abc, cuda=12.4, torch=2.3" (sorted by key), or "-".
std::string FormatVersions(const benchfleet::v1::Environment& environment);
// Per rank: RANK, NODE, HOST, DEVICE, GPU, UUID, PRECISION (in effect) ("-" where
// unknown, e.g. CPU slots, or a rank not started yet).
std::string FormatRankDevicesTable(const benchfleet::v1::JobStatus& job);

// `status`: one "key: value" line per field (environment, hosts and baseline verdict where
// known; shape, constraints, limits, queue position of a QUEUED job and requeues (> 0)
// where set; once placed, the precision in effect (flagging a mismatch with the request),
// the non-finite losses and the skipped fp16 steps of the current attempt), then
// placements, rank devices and history. The data source always; `data_wait`, where not
// empty, as the "data wait" line (DataWaitText).
std::string FormatJobText(const benchfleet::v1::JobStatus& job, const std::string& data_wait = "");
// "diagnosis:" and report::DiagnosisText indented: status's section, and `diagnose`'s output.
std::string FormatDiagnosisSection(const benchfleet::v1::JobDiagnosis& diagnosis);
// Per GPU of a finished job: energy per image and power / clock / temperature over
// the measured window ("no data" where a figure is missing).
std::string FormatGpuTelemetryTable(const benchfleet::v1::JobStatus& job);
// `list`: an aligned table with one row per job, or "no jobs\n".
std::string FormatJobsTable(const std::vector<benchfleet::v1::JobStatus>& jobs);
// `agents`: an aligned table with one row per agent (labels "k=v,k=v" or "-"), or
// "no agents\n".
std::string FormatAgentsTable(const std::vector<benchfleet::v1::AgentStatus>& agents);

}  // namespace bench::ctl
