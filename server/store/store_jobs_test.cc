// Store's jobs (and baselines): what InsertJob and UpdateJob write comes back whole from
// LoadJobs (and LoadBaselines) after a reopen; a duplicate request id is refused.
#include "server/store/store.h"

#include <future>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "server/store/store_internal.h"
#include "server/store/store_test_fixture.h"

namespace bench {
namespace {

TEST_F(StoreTest, JobsSurviveReopenWithHistoryPlacementsAndSummaries) {
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    Job job = MakeJob(1);
    ASSERT_TRUE((*store)->InsertJob(job).ok());
    job.attempt = 1;
    job.device_kind = DeviceKind::kCpu;
    job.placements = {{"a", {0}, {0}}, {"b", {1}, {1}}};
    job.state = JobState::kSucceeded;
    job.reason = "done";
    job.history.push_back({JobState::kRunning, "placed", absl::FromUnixMillis(1700000001000)});
    job.history.push_back({JobState::kSucceeded, "done", absl::FromUnixMillis(1700000002000)});
    job.parameters = 25557032;
    job.summaries[0] = RankSummary{0, 4, 32, 1.5, 0.3};
    job.summaries[1] = RankSummary{1, 4, 32, 1.6, 0.3};
    ASSERT_TRUE((*store)->UpdateJob(job).ok());
  }
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  const Job& job = jobs->front();
  EXPECT_EQ(job.id, "job-1");
  EXPECT_EQ(job.spec.precision, Precision::kAmp);
  EXPECT_EQ(job.spec.labels.at("team"), "infra");
  EXPECT_EQ(job.spec.request_id, "req-1");
  EXPECT_EQ(job.state, JobState::kSucceeded);
  ASSERT_EQ(job.history.size(), 3u);
  EXPECT_EQ(job.history[1].state, JobState::kRunning);
  ASSERT_EQ(job.placements.size(), 2u);
  EXPECT_EQ(job.placements[1].agent, "b");
  EXPECT_EQ(job.parameters, 25557032);
  EXPECT_DOUBLE_EQ(job.summaries.at(1).window_s, 1.6);
  EXPECT_EQ(job.device_kind, DeviceKind::kCpu);
}

TEST_F(StoreTest, ShapeConstraintsLimitsAndRequeuesSurviveReopen) {
  Job job = MakeJob(1);
  job.spec.nodes = 2;
  job.spec.devices_per_node = 1;
  job.spec.allowed_nodes = {"dgx-01", "dgx-02"};
  job.spec.node_labels = {{"rack", "r2"}, {"fabric", "ib=hdr"}};
  job.spec.wall_time_limit_s = 3600;
  job.spec.hang_timeout_s = 120;
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->InsertJob(job).ok());
    job.requeues = 1;
    ASSERT_TRUE((*store)->UpdateJob(job).ok());
  }
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_TRUE(jobs->front().spec == job.spec);
  EXPECT_EQ(jobs->front().spec.node_labels.at("fabric"), "ib=hdr");
  EXPECT_EQ(jobs->front().requeues, 1);
}

TEST_F(StoreTest, DataVsComputeAndTheRanksSyntheticRatesSurviveReopen) {
  Job job = MakeJob(1);
  job.spec.data = "imagefolder";
  job.spec.data_path = "/data/train";
  job.spec.data_vs_compute = true;
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->InsertJob(job).ok());
    job.attempt = 1;
    job.summaries[0] = RankSummary{0, 4, 8, 1.0, 0.25, 0, 0, 12.5};
    ASSERT_TRUE((*store)->UpdateJob(job).ok());
  }
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_TRUE(jobs->front().spec.data_vs_compute);
  ASSERT_EQ(jobs->front().summaries.count(0), 1u);
  EXPECT_DOUBLE_EQ(jobs->front().summaries.at(0).synthetic_images_per_second, 12.5);
}

// A simulated job (issue 26) stays simulated across a reopen; a real one stays real.
TEST_F(StoreTest, TheSimulatedMarkSurvivesReopen) {
  Job simulated = MakeJob(1);
  Job real = MakeJob(2);
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->InsertJob(simulated).ok());
    ASSERT_TRUE((*store)->InsertJob(real).ok());
    simulated.simulated = true;
    ASSERT_TRUE((*store)->UpdateJob(simulated).ok());
  }
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_TRUE((*jobs)[0].simulated);
  EXPECT_FALSE((*jobs)[1].simulated);
}

// Every JobSpec field away from its default, through the insert and the load (the
// jobs table's spec columns are one table, SpecColumns(), shared by both).
TEST_F(StoreTest, EverySpecFieldSurvivesReopen) {
  Job job = MakeJob(1);
  JobSpec& spec = job.spec;
  spec.model = "resnet18";
  spec.devices = 6;
  spec.precision = Precision::kBf16;
  spec.batch_size = 96;
  spec.iterations = 40;
  spec.warmup_iterations = 7;
  spec.image_size = 160;
  spec.data = "coco";
  spec.data_path = "/data/coco";
  spec.loader_threads = 5;
  spec.data_vs_compute = true;
  spec.name = "every field";
  spec.labels = {{"team", "infra"}, {"run", "7"}};
  spec.request_id = "req-every";
  spec.nodes = 3;
  spec.devices_per_node = 2;
  spec.allowed_nodes = {"n1", "n2", "n3"};
  spec.node_labels = {{"rack", "r9"}};
  spec.wall_time_limit_s = 5400;
  spec.hang_timeout_s = 90;
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->InsertJob(job).ok());
  }
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  const JobSpec& loaded = jobs->front().spec;
  EXPECT_TRUE(loaded == spec);
  // Field by field too, so that a failure names the field.
  EXPECT_EQ(loaded.model, spec.model);
  EXPECT_EQ(loaded.devices, spec.devices);
  EXPECT_EQ(loaded.precision, spec.precision);
  EXPECT_EQ(loaded.batch_size, spec.batch_size);
  EXPECT_EQ(loaded.iterations, spec.iterations);
  EXPECT_EQ(loaded.warmup_iterations, spec.warmup_iterations);
  EXPECT_EQ(loaded.image_size, spec.image_size);
  EXPECT_EQ(loaded.data, spec.data);
  EXPECT_EQ(loaded.data_path, spec.data_path);
  EXPECT_EQ(loaded.loader_threads, spec.loader_threads);
  EXPECT_EQ(loaded.data_vs_compute, spec.data_vs_compute);
  EXPECT_EQ(loaded.name, spec.name);
  EXPECT_EQ(loaded.request_id, spec.request_id);
  EXPECT_EQ(loaded.nodes, spec.nodes);
  EXPECT_EQ(loaded.devices_per_node, spec.devices_per_node);
  EXPECT_EQ(loaded.wall_time_limit_s, spec.wall_time_limit_s);
  EXPECT_EQ(loaded.hang_timeout_s, spec.hang_timeout_s);
  EXPECT_EQ(loaded.labels, spec.labels);
  EXPECT_EQ(loaded.allowed_nodes, spec.allowed_nodes);
  EXPECT_EQ(loaded.node_labels, spec.node_labels);
  // The job's own columns beside the spec's.
  EXPECT_EQ(jobs->front().id, job.id);
  EXPECT_EQ(jobs->front().created, job.created);
}

// Each column of the migrated jobs table is either one of the job's own or a row of
// SpecColumns(): a migration adding a spec column without its row fails here.
TEST_F(StoreTest, EveryColumnOfTheJobsTableIsTheJobsOwnOrASpecColumn) {
  { ASSERT_TRUE(Store::Open(path_).ok()); }
  std::set<std::string> columns;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* info = nullptr;
  ASSERT_EQ(
      sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info('jobs')", -1, &info, nullptr),
      SQLITE_OK);
  while (sqlite3_step(info) == SQLITE_ROW) {
    columns.insert(reinterpret_cast<const char*>(sqlite3_column_text(info, 0)));
  }
  sqlite3_finalize(info);
  sqlite3_close(db);
  const std::set<std::string> own = {
      "id",          "seq",          "state",      "reason",     "attempt",
      "device_kind", "parameters",   "created_ms", "updated_ms", "telemetry_note",
      "requeues",    "submitted_by", "simulated"};
  std::set<std::string> spec;
  for (const SpecColumn& column : SpecColumns()) {
    EXPECT_TRUE(spec.insert(column.name).second) << column.name << " is listed twice";
    EXPECT_EQ(own.count(column.name), 0u) << column.name;
  }
  for (const std::string& column : columns) {
    EXPECT_TRUE(own.count(column) + spec.count(column) == 1)
        << "jobs." << column << " is neither the job's own column nor in SpecColumns()";
  }
  for (const std::string& column : spec) {
    EXPECT_EQ(columns.count(column), 1u) << column << " is in SpecColumns() but not in jobs";
  }
}

TEST_F(StoreTest, AJobsSlurmAllocationSurvivesReopenAndFollowsItsUpdates) {
  Job job = MakeJob(1);
  Job plain = MakeJob(2);
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->InsertJob(job).ok());
    ASSERT_TRUE((*store)->InsertJob(plain).ok());
    job.allocation = {"slurm", "4711", "PENDING", "Resources", "", false};
    ASSERT_TRUE((*store)->UpdateJob(job).ok());
    job.allocation = {"slurm", "4711", "TIMEOUT", "TimeLimit", "node[1-2]", true};
    ASSERT_TRUE((*store)->UpdateJob(job).ok());
  }
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_TRUE(jobs->at(0).allocation == job.allocation);
  EXPECT_TRUE(jobs->at(1).allocation.id.empty());
}

// Constraints, labels and free text are stored so that any bytes come back as given: the
// unit separator and '=' (which schema 4's joined columns used as delimiters), NUL,
// newlines and bytes that are not UTF-8, through a real file closed and reopened.
TEST_F(StoreTest, AnyBytesInConstraintsLabelsAndSubmitterRoundTripAcrossAReopen) {
  const std::string nul(1, '\0');
  Job job = MakeJob(1);
  job.spec.name =
      "name\x1f"
      "a=b" +
      nul + "\n\xff";
  job.spec.allowed_nodes = {
      "a\x1f"
      "b",
      "c=d",
      "",
      "e" + nul + "f",
      "a\x1f"
      "b",
      "\xc3\xa9\xff"};
  job.spec.node_labels = {{"rack", "r1\x1fgpu=h100"},
                          {"k\x1f"
                           "k",
                           "=" + nul + "="},
                          {"", ""},
                          {"n" + nul, "\r\n"}};
  job.spec.labels = {{"note", "x=y\x1fz"}, {"k" + nul + "=", nul + "\x1f"}};
  job.submitted_by = "alice\x1f=" + nul;
  Job plain = MakeJob(2);
  plain.submitted_by = "bob";
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->InsertJob(job).ok());
    ASSERT_TRUE((*store)->InsertJob(plain).ok());
  }
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  const Job& loaded = jobs->front();
  EXPECT_EQ(loaded.spec.name, job.spec.name);
  EXPECT_EQ(loaded.spec.allowed_nodes, job.spec.allowed_nodes) << "order and duplicates kept";
  EXPECT_EQ(loaded.spec.node_labels, job.spec.node_labels);
  EXPECT_EQ(loaded.spec.labels, job.spec.labels);
  EXPECT_TRUE(loaded.spec == job.spec);
  EXPECT_EQ(loaded.submitted_by, job.submitted_by);
  EXPECT_EQ(jobs->back().submitted_by, "bob");
  EXPECT_TRUE(jobs->back().spec.allowed_nodes.empty());
  EXPECT_TRUE(jobs->back().spec.node_labels.empty());
}

TEST_F(StoreTest, DuplicateRequestIdIsRefusedAndOthersUnaffected) {
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->InsertJob(MakeJob(1)).ok());
  Job clash = MakeJob(2);
  clash.spec.request_id = "req-1";
  EXPECT_EQ((*store)->InsertJob(clash).code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE((*store)->InsertJob(MakeJob(3)).ok());
  EXPECT_EQ((*store)->LoadJobs()->size(), 2u);
}

TEST_F(StoreTest, RankDevicesVersionsAndBaselinesSurviveReopen) {
  {
    auto store = std::move(Store::Open(path_)).value();
    Job job = MakeJob(1);
    ASSERT_TRUE(store->InsertJob(job).ok());
    job.attempt = 1;
    job.device_kind = DeviceKind::kCuda;
    job.placements = {{"dgx", {0, 1}, {2, 5}}};
    job.rank_devices = {{0, "dgx", "dgx-01", 2, "GPU-aaa", "NVIDIA H100 80GB HBM3"},
                        {1, "dgx", "dgx-01", 5, "GPU-bbb", "NVIDIA H100 80GB HBM3"}};
    job.agent_versions["dgx"] = {{"driver", "550.54.15"}};
    job.rank_versions[0] = {{"torch", "2.3.0"}};
    job.rank_versions[1] = {{"torch", "2.3.1"}};
    ASSERT_TRUE(store->UpdateJob(job).ok());
    // A later write of the same attempt does not rewrite the devices recorded at placement.
    Job later = job;
    later.rank_devices[0].gpu_uuid = "GPU-rewritten";
    ASSERT_TRUE(store->UpdateJob(later).ok());

    for (double ips : {100.0, 200.0}) {  // the second replaces the first
      Baseline baseline;
      baseline.configuration = ConfigurationOf(job);
      baseline.job_id = ips == 100 ? "job-1" : "job-9";
      baseline.images_per_second = ips;
      baseline.lower_tolerance_pct = 3;
      baseline.upper_tolerance_pct = 7;
      baseline.set = absl::FromUnixMillis(1700000000123);
      std::promise<absl::Status> put;
      store->PutBaselineAsync(baseline, [&](absl::Status s) { put.set_value(s); });
      ASSERT_TRUE(put.get_future().get().ok());
    }
  }
  auto store = std::move(Store::Open(path_)).value();
  auto jobs = store->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  const Job& job = jobs->at(0);
  ASSERT_EQ(job.rank_devices.size(), 2u);
  EXPECT_EQ(job.rank_devices[0].gpu_uuid, "GPU-aaa");
  EXPECT_EQ(job.rank_devices[1].device_index, 5);
  EXPECT_EQ(job.rank_devices[1].hostname, "dgx-01");
  EXPECT_EQ(job.rank_devices[1].gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(job.agent_versions.at("dgx").at("driver"), "550.54.15");
  EXPECT_EQ(job.rank_versions.at(1).at("torch"), "2.3.1");
  EXPECT_EQ(GpuModelOf(job), "NVIDIA H100 80GB HBM3");

  auto baselines = store->LoadBaselines();
  ASSERT_TRUE(baselines.ok()) << baselines.status();
  ASSERT_EQ(baselines->size(), 1u);
  const Baseline& b = baselines->at(0);
  EXPECT_EQ(b.job_id, "job-9");
  EXPECT_DOUBLE_EQ(b.images_per_second, 200);
  EXPECT_DOUBLE_EQ(b.lower_tolerance_pct, 3);
  EXPECT_DOUBLE_EQ(b.upper_tolerance_pct, 7);
  EXPECT_EQ(b.configuration, ConfigurationOf(job));
  EXPECT_EQ(b.set, absl::FromUnixMillis(1700000000123));
}

TEST_F(StoreTest, PrecisionsAndSummaryCountsSurviveReopen) {
  {
    auto store = std::move(Store::Open(path_)).value();
    Job job = MakeJob(1);
    ASSERT_TRUE(store->InsertJob(job).ok());
    job.attempt = 1;
    job.device_kind = DeviceKind::kCuda;
    job.placements = {{"dgx", {0, 1}, {0, 1}}};
    ASSERT_TRUE(store->UpdateJob(job).ok());  // placed: precisions not known yet
    job.rank_precisions = {{0, "amp_fp16"}, {1, "fp32"}};
    job.summaries[0] = RankSummary{0, 4, 32, 1.5, 0.3, 7, 2};
    ASSERT_TRUE(store->UpdateJob(job).ok());
  }
  auto store = std::move(Store::Open(path_)).value();
  auto jobs = store->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  const Job& job = jobs->at(0);
  EXPECT_EQ(job.rank_precisions, (std::map<int, std::string>{{0, "amp_fp16"}, {1, "fp32"}}));
  ASSERT_EQ(job.summaries.count(0), 1u);
  EXPECT_EQ(job.summaries.at(0).skipped_steps, 7);
  EXPECT_EQ(job.summaries.at(0).nonfinite_losses, 2);
}

}  // namespace
}  // namespace bench
