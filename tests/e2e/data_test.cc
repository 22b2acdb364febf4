// Real data through the fleet (issue 17), end to end: benchd, one agent of 2 CPU slots,
// 2 bench-train ranks reading an ImageFolder of JPEGs written here with libjpeg, and 2
// ssd_resnet34 ranks reading a COCO-format folder written here (JPEGs and a hand-written
// instances_train2017.json) or synthetic data, all below the agent's --data-root; a job
// whose folder the node lacks, or lies outside that root (which reads the same), or
// whose annotation file is corrupt, fails naming the path with no figure stored;
// malformed data specs are refused by benchd naming the field and the flag, and nothing
// is stored.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/e2e/cluster.h"
#include "worker/train/test_jpeg.h"

namespace bench::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A width x height JPEG of one colour, with a gradient so that it is not trivial.
bool WriteJpeg(const std::string& path, int width, int height, int r, int g, int b) {
  bench_train::TestJpeg image{width, height, 3, 90, [r, g, b](int x, int y, int c) {
                                const int value = c == 0 ? r + x : c == 1 ? g + y : b;
                                return static_cast<uint8_t>(value % 256);
                              }};
  return bench_train::WriteTestJpeg(path, image);
}

class DataEndToEndTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new LoopbackCluster();
    mkdir(DataRoot().c_str(), 0755);
    absl::Status status = MakeImageFolder(DataRoot() + "/imagenet");
    if (status.ok()) status = MakeCocoFolder(DataRoot() + "/coco");
    if (status.ok()) status = cluster_->StartBenchd();
    if (status.ok()) status = cluster_->StartAgent("agent-a", 2, {"--data-root", DataRoot()});
    if (status.ok()) status = cluster_->WaitForAgents(1);
    setup_status_ = new absl::Status(status);
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete setup_status_;
  }
  void SetUp() override { ASSERT_TRUE(setup_status_->ok()) << *setup_status_; }

  // The agent's --data-root: every folder a job here may read is below it.
  static std::string DataRoot() { return cluster_->dir() + "/data"; }

  // Two classes of 6 JPEGs each, of varied sizes.
  static absl::Status MakeImageFolder(const std::string& root) {
    mkdir(root.c_str(), 0755);
    const char* classes[] = {"cat", "dog"};
    for (int c = 0; c < 2; ++c) {
      const std::string dir = root + "/" + classes[c];
      mkdir(dir.c_str(), 0755);
      for (int i = 0; i < 6; ++i) {
        const std::string file = absl::StrCat(dir, "/", i, ".jpg");
        if (!WriteJpeg(file, 72 + 8 * i, 64 + 4 * i, 200 * c, 40 * i, 100)) {
          return absl::InternalError("cannot write " + file);
        }
      }
    }
    return absl::OkStatus();
  }

  // COCO's layout: annotations/instances_train2017.json and train2017/ with 4 JPEGs of
  // varied sizes, each with one or two boxes of two categories (COCO ids 18 and 44).
  static absl::Status MakeCocoFolder(const std::string& root) {
    mkdir(root.c_str(), 0755);
    mkdir((root + "/annotations").c_str(), 0755);
    mkdir((root + "/train2017").c_str(), 0755);
    std::string images, annotations;
    for (int i = 0; i < 4; ++i) {
      const int width = 160 + 40 * i;
      const int height = 120 + 20 * i;
      const std::string name = absl::StrCat("0000000", i + 1, ".jpg");
      if (!WriteJpeg(root + "/train2017/" + name, width, height, 60 * i, 30, 200)) {
        return absl::InternalError("cannot write " + name);
      }
      absl::StrAppend(&images, i > 0 ? "," : "", "{\"id\": ", i + 1, ", \"file_name\": \"", name,
                      "\", \"width\": ", width, ", \"height\": ", height, "}");
      absl::StrAppend(&annotations, i > 0 ? "," : "", "{\"id\": ", 100 + 2 * i,
                      ", \"image_id\": ", i + 1, ", \"category_id\": 18, \"bbox\": [10, 20, ",
                      width / 2, ", ", height / 2, "]}");
      if (i % 2 == 1) {
        absl::StrAppend(&annotations, ",{\"id\": ", 101 + 2 * i, ", \"image_id\": ", i + 1,
                        ", \"category_id\": 44, \"bbox\": [", width / 2, ", ", height / 3, ", ",
                        width / 3, ", ", height / 2, "]}");
      }
    }
    std::ofstream json(root + "/annotations/instances_train2017.json");
    json << "{\"images\": [" << images << "], \"annotations\": [" << annotations
         << "], \"categories\": [{\"id\": 18, \"name\": \"dog\"}, {\"id\": 44, "
            "\"name\": \"bottle\"}]}\n";
    return json.good() ? absl::OkStatus() : absl::InternalError("cannot write " + root);
  }

  // A 2-rank ssd_resnet34 job: batch 2 per rank, 3 iterations (1 warm-up): SSD300 on the
  // CPU takes about a second a step per rank.
  static std::vector<std::string> SubmitSsd(std::vector<std::string> more) {
    std::vector<std::string> args = {"submit", "--gpus", "2", "--bs", "2", "--iters", "3",
                                     "--warmup", "1", "--model", "ssd_resnet34"};
    args.insert(args.end(), {"--image-size", "300"});
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }

  static std::string JobId(const CommandResult& submit) {
    return std::string(absl::StripAsciiWhitespace(
        std::vector<std::string>(absl::StrSplit(submit.stdout_text, '\n')).front()));
  }

  static std::string Logs() {
    return absl::StrCat("\nbenchd:\n", cluster_->Log("benchd.log"), "\nagent-a:\n",
                        cluster_->Log("agent-agent-a.log"));
  }

  static std::vector<std::string> Submit(std::vector<std::string> more) {
    std::vector<std::string> args = {"submit",  "--gpus",  "2",        "--bs", "2",
                                     "--iters", "4",       "--warmup", "1",    "--image-size",
                                     "64",      "--model", "resnet18"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }

  // Submits an ImageFolder job on `path` and checks that it failed as a missing folder
  // does on agent-a, storing no sample. Returns `benchctl status --format json` of it.
  static std::string ExpectFailsAsMissing(const std::string& path) {
    CommandResult submit =
        cluster_->Benchctl(Submit({"--data", "imagefolder", "--data-path", path, "--wait"}));
    EXPECT_NE(submit.exit_code, 0) << submit.output;
    const std::string job_id = JobId(submit);
    EXPECT_THAT(job_id, ::testing::StartsWith("job-")) << submit.output;
    CommandResult status = cluster_->Benchctl({"status", job_id, "--format", "json"});
    EXPECT_EQ(status.exit_code, 0) << status.output;
    EXPECT_THAT(status.stdout_text, HasSubstr("\"state\":\"JOB_STATE_FAILED\""));
    EXPECT_THAT(status.stdout_text, HasSubstr(absl::StrCat("node agent-a: data path ", path,
                                                           ": No such file or directory")))
        << Logs();
    const std::string& db = cluster_->db_path();
    EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM samples WHERE job_id='" + job_id + "'"), 0);
    EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM rank_summaries WHERE job_id='" + job_id + "'"), 0);
    return status.stdout_text;
  }

  static LoopbackCluster* cluster_;
  static absl::Status* setup_status_;
};

LoopbackCluster* DataEndToEndTest::cluster_ = nullptr;
absl::Status* DataEndToEndTest::setup_status_ = nullptr;

TEST_F(DataEndToEndTest, ATwoRankJobTrainsOnAnImageFolderAndStatusShowsItsData) {
  const std::string root = DataRoot() + "/imagenet";
  CommandResult submit = cluster_->Benchctl(
      Submit({"--data", "imagefolder", "--data-path", root, "--loader-threads", "2", "--wait"}));
  ASSERT_EQ(submit.exit_code, 0) << submit.output << Logs();
  const std::string job_id = JobId(submit);
  ASSERT_THAT(job_id, ::testing::StartsWith("job-"));

  const std::string& db = cluster_->db_path();
  const std::string where = " WHERE job_id='" + job_id + "'";
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM samples" + where), 2 * 4);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM rank_summaries" + where), 2);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM jobs WHERE id='" + job_id +
                             "' AND state='SUCCEEDED' AND data='imagefolder' AND data_path='" +
                             root + "' AND loader_threads=2"),
            1);

  CommandResult status = cluster_->Benchctl({"status", job_id});
  ASSERT_EQ(status.exit_code, 0) << status.output;
  EXPECT_THAT(status.stdout_text, HasSubstr(absl::StrCat("\ndata:       imagefolder at ", root,
                                                         ", 2 loader threads per rank\n")));
  EXPECT_THAT(status.stdout_text, HasSubstr("\ndata wait:  "));
  EXPECT_THAT(status.stdout_text, HasSubstr("of the median step time (6 iterations)\n"));
  CommandResult json = cluster_->Benchctl({"status", job_id, "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_THAT(json.stdout_text, HasSubstr("\"data\":\"DATA_SOURCE_IMAGEFOLDER\""));
  EXPECT_THAT(json.stdout_text, HasSubstr(absl::StrCat("\"data_path\":\"", root, "\"")));
  EXPECT_THAT(json.stdout_text, HasSubstr("\"has_throughput\":true"));
}

// --data-vs-compute: each rank runs again on synthetic data; status gives the ratio.
TEST_F(DataEndToEndTest, DataVsComputeReportsTheRatioOfRealToSyntheticThroughput) {
  const std::string root = DataRoot() + "/imagenet";
  CommandResult submit = cluster_->Benchctl(Submit(
      {"--data", "imagefolder", "--data-path", root, "--data-vs-compute", "--wait"}));
  ASSERT_EQ(submit.exit_code, 0) << submit.output << Logs();
  const std::string job_id = JobId(submit);
  const std::string& db = cluster_->db_path();
  const std::string where = " WHERE job_id='" + job_id + "'";
  // The second run's iterations are not stored; both ranks have a synthetic rate.
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM samples" + where), 2 * 4);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM rank_summaries" + where +
                             " AND synthetic_images_per_second > 0"),
            2);
  CommandResult status = cluster_->Benchctl({"status", job_id});
  ASSERT_EQ(status.exit_code, 0) << status.output;
  EXPECT_THAT(status.stdout_text, HasSubstr(" of compute: "));
  EXPECT_THAT(status.stdout_text, HasSubstr(" on synthetic data\n"));
  CommandResult json = cluster_->Benchctl({"status", job_id, "--format", "json"});
  EXPECT_THAT(json.stdout_text, HasSubstr("\"data_vs_compute\":"));
  EXPECT_THAT(json.stdout_text, HasSubstr("\"synthetic_images_per_second\":"));
}

TEST_F(DataEndToEndTest, AMissingFolderFailsTheJobNamingTheNodeAndThePath) {
  const std::string missing = DataRoot() + "/no-such-imagenet/train";
  const std::string status = ExpectFailsAsMissing(missing);
  EXPECT_THAT(status, HasSubstr("\"has_throughput\":false"));
  EXPECT_THAT(status, Not(HasSubstr("\"images_per_second\"")));
  EXPECT_THAT(status, HasSubstr("\"requeues\":0"));
}

// A real ImageFolder outside the agent's --data-root fails the job exactly as a missing
// one (issue 24, item 6): reached directly, by `..` out of the root, or through a
// symlink inside the root that points out; the failure tells nothing about what is there.
TEST_F(DataEndToEndTest, AFolderOutsideTheDataRootFailsTheJobAsIfMissing) {
  const std::string outside = cluster_->dir() + "/outside-imagenet";
  ASSERT_TRUE(MakeImageFolder(outside).ok());
  const std::string link = DataRoot() + "/link-out";
  ASSERT_EQ(symlink(outside.c_str(), link.c_str()), 0);
  for (const std::string& path : {outside, DataRoot() + "/../outside-imagenet", link}) {
    SCOPED_TRACE(path);
    ExpectFailsAsMissing(path);
  }
}

// A COCO folder without its annotations file: the agent refuses it before any rank
// starts, so the SSD job fails at once with the node and the path.
TEST_F(DataEndToEndTest, ACocoFolderWithoutAnnotationsFailsTheSsdJobNamingNodeAndPath) {
  const std::string coco = DataRoot() + "/coco-without-annotations";
  ASSERT_EQ(mkdir(coco.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((coco + "/train2017").c_str(), 0755), 0);
  CommandResult submit = cluster_->Benchctl(
      {"submit", "--gpus", "2", "--bs", "2", "--iters", "3", "--warmup", "1", "--model",
       "ssd_resnet34", "--image-size", "300", "--data", "coco", "--data-path", coco, "--wait"});
  ASSERT_NE(submit.exit_code, 0) << submit.output;
  const std::string job_id = JobId(submit);
  ASSERT_THAT(job_id, ::testing::StartsWith("job-")) << submit.output;
  CommandResult status = cluster_->Benchctl({"status", job_id});
  ASSERT_EQ(status.exit_code, 0) << status.output;
  EXPECT_THAT(status.stdout_text, HasSubstr("FAILED"));
  EXPECT_THAT(status.stdout_text,
              HasSubstr(absl::StrCat("node agent-a: data path ", coco,
                                     ": no annotations folder (annotations/: No such file or "
                                     "directory)")));
  EXPECT_THAT(status.stdout_text, HasSubstr(absl::StrCat("\ndata:       coco at ", coco)));
  EXPECT_EQ(QueryInt(cluster_->db_path(),
                     "SELECT count(*) FROM rank_summaries WHERE job_id='" + job_id + "'"),
            0);
}

TEST_F(DataEndToEndTest, ATwoRankSsdJobTrainsOnACocoFolderAndStatusShowsItsData) {
  const std::string root = DataRoot() + "/coco";
  CommandResult submit = cluster_->Benchctl(
      SubmitSsd({"--data", "coco", "--data-path", root, "--loader-threads", "2", "--wait"}));
  ASSERT_EQ(submit.exit_code, 0) << submit.output << Logs();
  const std::string job_id = JobId(submit);
  ASSERT_THAT(job_id, ::testing::StartsWith("job-"));

  const std::string& db = cluster_->db_path();
  const std::string where = " WHERE job_id='" + job_id + "'";
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM samples" + where), 2 * 3);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM rank_summaries" + where), 2);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM jobs WHERE id='" + job_id +
                             "' AND state='SUCCEEDED' AND data='coco' AND data_path='" + root +
                             "' AND loader_threads=2"),
            1);
  CommandResult status = cluster_->Benchctl({"status", job_id});
  ASSERT_EQ(status.exit_code, 0) << status.output;
  EXPECT_THAT(status.stdout_text, HasSubstr("ssd_resnet34"));
  EXPECT_THAT(status.stdout_text, HasSubstr(absl::StrCat("\ndata:       coco at ", root,
                                                         ", 2 loader threads per rank\n")));
  EXPECT_THAT(status.stdout_text, HasSubstr("\ndata wait:  "));
  CommandResult json = cluster_->Benchctl({"status", job_id, "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_THAT(json.stdout_text, HasSubstr("\"data\":\"DATA_SOURCE_COCO\""));
  EXPECT_THAT(json.stdout_text, HasSubstr("\"has_throughput\":true"));
}

TEST_F(DataEndToEndTest, ATwoRankSsdJobTrainsOnSyntheticDataThroughTheFleet) {
  CommandResult submit = cluster_->Benchctl(SubmitSsd({"--wait"}));
  ASSERT_EQ(submit.exit_code, 0) << submit.output << Logs();
  const std::string job_id = JobId(submit);
  ASSERT_THAT(job_id, ::testing::StartsWith("job-"));
  const std::string& db = cluster_->db_path();
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM samples WHERE job_id='" + job_id + "'"), 2 * 3);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM jobs WHERE id='" + job_id +
                             "' AND state='SUCCEEDED' AND data='synthetic'"),
            1);
  CommandResult status = cluster_->Benchctl({"status", job_id});
  ASSERT_EQ(status.exit_code, 0) << status.output;
  EXPECT_THAT(status.stdout_text, HasSubstr("\ndata:       synthetic\n"));
  CommandResult json = cluster_->Benchctl({"status", job_id, "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_THAT(json.stdout_text, HasSubstr("\"has_throughput\":true"));
}

// The folder is there (the agent's check passes) but its annotation file is cut short:
// every rank fails before training, naming the file, and no figure is stored.
TEST_F(DataEndToEndTest, ACorruptAnnotationFileFailsTheSsdJobNamingTheFile) {
  const std::string root = DataRoot() + "/coco-corrupt";
  ASSERT_TRUE(MakeCocoFolder(root).ok());
  const std::string file = root + "/annotations/instances_train2017.json";
  std::ofstream(file) << "{\"images\": [{\"id\": 1, \"file_name\": \"00000001.jpg\", ";
  CommandResult submit =
      cluster_->Benchctl(SubmitSsd({"--data", "coco", "--data-path", root, "--wait"}));
  ASSERT_NE(submit.exit_code, 0) << submit.output;
  const std::string job_id = JobId(submit);
  ASSERT_THAT(job_id, ::testing::StartsWith("job-")) << submit.output;
  CommandResult status = cluster_->Benchctl({"status", job_id, "--format", "json"});
  ASSERT_EQ(status.exit_code, 0) << status.output;
  EXPECT_THAT(status.stdout_text, HasSubstr("\"state\":\"JOB_STATE_FAILED\""));
  EXPECT_THAT(status.stdout_text, HasSubstr(absl::StrCat("--data coco: ", file, ": ")))
      << Logs();
  EXPECT_THAT(status.stdout_text, HasSubstr("\"has_throughput\":false"));
  EXPECT_THAT(status.stdout_text, Not(HasSubstr("\"images_per_second\"")));
  const std::string& db = cluster_->db_path();
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM samples WHERE job_id='" + job_id + "'"), 0);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM rank_summaries WHERE job_id='" + job_id + "'"), 0);
}

TEST_F(DataEndToEndTest, AMalformedDataSpecIsInvalidArgumentNamingFieldAndFlag) {
  const int64_t before = QueryInt(cluster_->db_path(), "SELECT count(*) FROM jobs");
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"--data", "imagefolder", "--data-path", "data/imagenet"},
       "data_path (--data-path): data path \"data/imagenet\" is relative"},
      {{"--data-path", "/data/imagenet"},
       "data_path (--data-path): synthetic data reads no folder"},
      {{"--data", "imagefolder"}, "data_path (--data-path): imagefolder data needs the folder"},
      {{"--data", "coco", "--data-path", "/data/coco"},
       "data (--data): resnet18 is a classification model"},
      {{"--loader-threads", "300"}, "loader_threads (--loader-threads): must be between 0"},
  };
  for (const Case& c : cases) {
    CommandResult result = cluster_->Benchctl(Submit(c.args));
    // benchd's INVALID_ARGUMENT (server/core/spec_validation_test.cc checks the code), which
    // benchctl prints as is and exits 1 for.
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("benchctl: " + c.expected));
  }
  EXPECT_EQ(QueryInt(cluster_->db_path(), "SELECT count(*) FROM jobs"), before);
}

}  // namespace
}  // namespace bench::testing
