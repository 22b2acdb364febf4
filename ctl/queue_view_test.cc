#include "ctl/queue_view.h"

#include <algorithm>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bench::ctl {
namespace {

namespace v1 = benchfleet::v1;
using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1800000000);

int64_t MsAgo(int64_t seconds) { return (1800000000 - seconds) * 1000; }

v1::JobStatus Queued(const std::string& id, int position, const std::string& reason) {
  v1::JobStatus job;
  job.set_id(id);
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_queue_position(position);
  job.set_reason(reason);
  job.set_created_unix_ms(MsAgo(30));
  auto* spec = job.mutable_spec();
  spec->set_model("resnet50");
  spec->set_devices(8);
  spec->set_precision(v1::PRECISION_FP32);
  spec->set_batch_size(128);
  return job;
}

TEST(QueueViewTest, Empty) {
  EXPECT_EQ(FormatQueueTable({}, kNow), "queue is empty\n");
  const std::string csv = RenderQueueCsv({}, kNow);
  EXPECT_THAT(csv, ::testing::StartsWith("position,job_id,"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1);
}

TEST(QueueViewTest, TableInServerOrderWithFullReasons) {
  v1::JobStatus first = Queued("j-3", 1, "waiting for 16 free devices (8 free)");
  first.mutable_spec()->set_name("scaling run");
  first.mutable_spec()->set_devices(16);
  first.mutable_spec()->set_nodes(2);
  first.mutable_spec()->set_devices_per_node(8);
  first.mutable_spec()->set_precision(v1::PRECISION_AMP);
  first.mutable_spec()->add_allowed_nodes("dgx-01");
  first.mutable_spec()->add_allowed_nodes("dgx-02");
  first.mutable_spec()->add_allowed_nodes("dgx-03");
  first.set_created_unix_ms(MsAgo(2 * 3600 + 5 * 60 + 7));
  v1::JobStatus second = Queued("j-9", 2, "behind j-3");
  (*second.mutable_spec()->mutable_node_labels())["gpu"] = "h100";
  second.set_created_unix_ms(MsAgo(3 * 86400 + 4 * 3600));
  v1::JobStatus third = Queued("j-1", 3, "");
  third.set_created_unix_ms(0);
  EXPECT_EQ(FormatQueueTable({first, second, third}, kNow),
            "POS  ID   NAME         MODEL      DEVICES  PRECISION   BS  CONSTRAINTS            "
            "AGE  WAITING FOR\n"
            "  1  j-3  scaling run  resnet50  16 (2x8)  amp        128  on dgx-01,dgx-02,+1  "
            "2h05m  waiting for 16 free devices (8 free)\n"
            "  2  j-9  -            resnet50         8  fp32       128  gpu=h100             "
            "3d04h  behind j-3\n"
            "  3  j-1  -            resnet50         8  fp32       128  -                        "
            "-  -\n");
}

TEST(QueueViewTest, PositionFallsBackToTheRow) {
  const std::string table =
      FormatQueueTable({Queued("j-1", 0, "a"), Queued("j-2", 0, "b")}, kNow);
  EXPECT_THAT(table, HasSubstr("\n  1  j-1 "));
  EXPECT_THAT(table, HasSubstr("\n  2  j-2 "));
}

TEST(QueueViewTest, Cells) {
  v1::JobSpec spec;
  spec.set_devices(8);
  EXPECT_EQ(QueueDevices(spec), "8");
  spec.set_nodes(2);
  EXPECT_EQ(QueueDevices(spec), "8 (2 nodes)");
  spec.set_nodes(1);
  EXPECT_EQ(QueueDevices(spec), "8 (1 node)");
  spec.set_nodes(0);
  spec.set_devices_per_node(4);
  EXPECT_EQ(QueueDevices(spec), "8 (4/node)");

  v1::JobSpec constrained;
  EXPECT_EQ(ShortConstraints(constrained), "-");
  constrained.add_allowed_nodes("a");
  EXPECT_EQ(ShortConstraints(constrained), "on a");
  (*constrained.mutable_node_labels())["site"] = "x";
  (*constrained.mutable_node_labels())["gpu"] = "h100";
  EXPECT_EQ(ShortConstraints(constrained), "on a gpu=h100,site=x");
  EXPECT_EQ(ShortConstraints(constrained, 10), "on a gpu=…");
  // Counted in characters, so a cut never splits one.
  v1::JobSpec wide;
  wide.add_allowed_nodes("nœud-éèêë");
  EXPECT_EQ(ShortConstraints(wide, 6), "on nœ…");

  EXPECT_EQ(FormatAge(0, kNow), "-");
  EXPECT_EQ(FormatAge(MsAgo(59), kNow), "59s");
  EXPECT_EQ(FormatAge(MsAgo(125), kNow), "2m");
  EXPECT_EQ(FormatAge(MsAgo(3600), kNow), "1h00m");
  EXPECT_EQ(FormatAge(MsAgo(86400 + 3600), kNow), "1d01h");
  EXPECT_EQ(FormatAge(MsAgo(-10), kNow), "0s");  // created "in the future": clock skew
}

TEST(QueueViewTest, CsvCarriesEveryField) {
  v1::JobStatus job = Queued("j-3", 1, "needs label gpu=h100, site=a");
  job.mutable_spec()->set_name("a \"quoted\" name");
  job.mutable_spec()->set_nodes(1);
  job.mutable_spec()->set_devices_per_node(8);
  job.mutable_spec()->add_allowed_nodes("dgx-01");
  job.mutable_spec()->add_allowed_nodes("dgx-02");
  (*job.mutable_spec()->mutable_node_labels())["gpu"] = "h100";
  (*job.mutable_spec()->mutable_node_labels())["site"] = "a";
  job.mutable_spec()->set_wall_time_limit_s(3600);
  job.mutable_spec()->set_hang_timeout_s(300);
  job.set_requeues(1);
  EXPECT_EQ(RenderQueueCsv({job}, kNow),
            "position,job_id,name,model,devices,nodes,devices_per_node,precision,batch_size,"
            "allowed_nodes,node_labels,wall_time_limit_s,hang_timeout_s,requeues,"
            "created_unix_ms,age_s,reason\n"
            "1,j-3,\"a \"\"quoted\"\" name\",resnet50,8,1,8,fp32,128,dgx-01;dgx-02,"
            "gpu=h100;site=a,3600,300,1,1799999970000,30,\"needs label gpu=h100, site=a\"\n");
}

}  // namespace
}  // namespace bench::ctl
