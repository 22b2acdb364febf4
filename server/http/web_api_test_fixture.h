// The web API tests' fixture: a real store in a temp dir, a JobManager recovered over it,
// the ReadService and the WebApi, with helpers that store jobs, samples and baselines
// and call the handlers as plain functions.
#pragma once

#include "server/http/web_api.h"

#include <unistd.h>

#include <filesystem>
#include <future>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "benchfleet/v1/controller.pb.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "report/compare.h"
#include "report/grid.h"
#include "report/job_logs.h"
#include "server/rpc/proto_convert.h"

namespace bench::web_api_test {

namespace v1 = benchfleet::v1;
using ::google::protobuf::Struct;
using ::google::protobuf::Value;
using ::testing::HasSubstr;

inline Struct Parse(const std::string& json) {
  Struct parsed;
  auto status = google::protobuf::util::JsonStringToMessage(json, &parsed);
  EXPECT_TRUE(status.ok()) << status << "\n" << json;
  return parsed;
}

inline const Value& Field(const Struct& s, const std::string& key) {
  static const Value kMissing;
  auto it = s.fields().find(key);
  EXPECT_NE(it, s.fields().end()) << key;
  return it == s.fields().end() ? kMissing : it->second;
}

class WebApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_web_api_test_XXXXXX";
    dir_ = mkdtemp(pattern);
    store_ = std::move(Store::Open(dir_ + "/bench.db")).value();
  }
  void TearDown() override {
    api_.reset();
    reads_.reset();
    manager_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void StartManager() {
    manager_ = std::make_unique<JobManager>(store_.get(), JobManagerOptions{});
    ASSERT_TRUE(manager_->Recover().ok());
    reads_ = std::make_unique<ReadService>(store_.get(), manager_.get());
    api_ = std::make_unique<WebApi>(manager_.get(), reads_.get(), store_.get());
  }
  // An ended CPU job of `devices` ranks on agent "a", each rank measuring 8 images over
  // `window_s`; created `seq` seconds after the epoch of the test.
  Job StoreJob(int64_t seq, const std::string& model, JobState state, int devices = 1,
               double window_s = 2.0, std::map<std::string, std::string> labels = {}) {
    Job job;
    job.seq = seq;
    job.id = absl::StrCat("job-", 100000 + seq);
    job.spec.model = model;
    job.spec.devices = devices;
    job.spec.precision = Precision::kFp32;
    job.spec.batch_size = 2;
    job.spec.iterations = 100;
    job.spec.warmup_iterations = 1;
    job.spec.image_size = 64;
    job.spec.name = absl::StrCat("run ", seq);
    job.spec.labels = std::move(labels);
    job.created = kEpoch + absl::Seconds(seq);
    job.state = state;
    job.reason = JobStateText(state);
    job.history.push_back({JobState::kQueued, "submitted", job.created});
    if (state != JobState::kQueued) {
      job.history.push_back({state, job.reason, job.created + absl::Milliseconds(500)});
      job.attempt = 1;
      job.device_kind = DeviceKind::kCpu;
      Placement placement;
      placement.agent = "a";
      for (int rank = 0; rank < devices; ++rank) {
        placement.ranks.push_back(rank);
        placement.device_indices.push_back(rank);
        job.summaries[rank] = RankSummary{rank, 4, 8, window_s, 0.1};
      }
      job.placements.push_back(placement);
    }
    EXPECT_TRUE(store_->InsertJob(job).ok());
    EXPECT_TRUE(store_->UpdateJob(job).ok());
    return job;
  }
  void StoreSamples(const Job& job, int ranks, int iterations) {
    std::vector<IterationSample> samples;
    for (int rank = 0; rank < ranks; ++rank) {
      for (int it = 1; it <= iterations; ++it) {
        IterationSample s;
        s.job_id = job.id;
        s.attempt = 1;
        s.rank = rank;
        s.iteration = it;
        s.step_time_s = 0.5;
        s.images = 2;
        s.loss = it == 3 ? std::nan("") : 1.0;
        s.elapsed_s = 0.5 * it;
        s.warmup = it == 1;
        samples.push_back(s);
      }
    }
    ASSERT_TRUE(store_->AppendSamplesSync(samples).ok());
  }
  void StoreBaseline(const Job& job, double images_per_second) {
    Baseline baseline;
    baseline.configuration = ConfigurationOf(job);
    baseline.job_id = job.id;
    baseline.images_per_second = images_per_second;
    baseline.set = kEpoch;
    std::promise<absl::Status> stored;
    store_->PutBaselineAsync(baseline, [&](absl::Status s) { stored.set_value(s); });
    ASSERT_TRUE(stored.get_future().get().ok());
  }
  // The results tests' jobs: resnet50 on 1 device twice (job 1, which has a baseline, and
  // job 2, labelled team=a), resnet50 on 2 devices (job 3) and a failed resnet18 (job 4).
  void StoreResultsJobs() {
    Job fast = StoreJob(1, "resnet50", JobState::kSucceeded, 1, 2.0);
    StoreJob(2, "resnet50", JobState::kSucceeded, 1, 4.0, {{"team", "a"}});
    StoreJob(3, "resnet50", JobState::kSucceeded, 2, 4.0);
    StoreJob(4, "resnet18", JobState::kFailed);
    StoreBaseline(fast, 4);
  }
  // What benchctl receives for `request`: the Results RPC's answer.
  v1::ResultsResponse ResultsRpc(const v1::ResultsRequest& request) {
    v1::ResultsResponse response;
    for (const ResultCell& cell : reads_->Results(FromProto(request))) {
      ToProto(cell, response.add_cells());
    }
    return response;
  }
  HttpResponse Get(const std::string& path,
                   std::multimap<std::string, std::string> query = {}) {
    HttpRequest request;
    request.method = "GET";
    request.path = path;
    request.query = std::move(query);
    return api_->Serve(request);
  }
  // Every job id of /api/v1/jobs with `query`, following next_page_token; each page
  // must be non-empty and the last one's token "".
  std::vector<std::string> WalkJobs(std::multimap<std::string, std::string> query) {
    std::vector<std::string> ids;
    std::string token;
    for (int pages = 0; pages < 100; ++pages) {
      auto q = query;
      if (!token.empty()) q.insert({"page_token", token});
      HttpResponse response = Get("/api/v1/jobs", q);
      EXPECT_EQ(response.status, 200) << response.body;
      Struct page = Parse(response.body);
      for (const Value& job : Field(page, "jobs").list_value().values()) {
        ids.push_back(job.struct_value().fields().at("id").string_value());
      }
      token = Field(page, "next_page_token").string_value();
      if (token.empty()) break;
    }
    return ids;
  }

  static inline const absl::Time kEpoch = absl::FromUnixSeconds(1'700'000'000);
  std::string dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobManager> manager_;
  std::unique_ptr<ReadService> reads_;
  std::unique_ptr<WebApi> api_;
};

}  // namespace bench::web_api_test
