// A job's text figures: data vs compute as benchctl status words it, and the JSON the web
// API answers with it.
#include "report/job_figures.h"

#include "gtest/gtest.h"

namespace bench::report {
namespace {

benchfleet::v1::JobStatus MeasuredJob() {
  benchfleet::v1::JobStatus job;
  job.mutable_spec()->set_data_vs_compute(true);
  job.set_has_throughput(true);
  job.set_images_per_second(120.25);
  job.set_synthetic_images_per_second(193.125);
  job.set_data_vs_compute(120.25 / 193.125);
  return job;
}

TEST(JobFiguresTest, DataVsComputeReadsAsBenchctlStatus) {
  EXPECT_EQ(DataVsComputeText(MeasuredJob()),
            "0.62 of compute: 120.2 images/s on its data, 193.1 on synthetic data");
  benchfleet::v1::JobStatus waiting = MeasuredJob();
  waiting.set_synthetic_images_per_second(0);
  EXPECT_EQ(DataVsComputeText(waiting), "no data (every rank's run on synthetic data is needed)");
  waiting = MeasuredJob();
  waiting.set_has_throughput(false);
  EXPECT_EQ(DataVsComputeText(waiting), "no data (every rank's run on synthetic data is needed)");
}

TEST(JobFiguresTest, TheJsonCarriesTheTextOnlyWhenTheSpecAsksForIt) {
  EXPECT_EQ(JobFiguresJson(MeasuredJob()),
            "{\"vs_compute\": \"0.62 of compute: 120.2 images/s on its data, 193.1 on synthetic "
            "data\", \"diagnosis\": \"\"}\n");
  benchfleet::v1::JobStatus plain = MeasuredJob();
  plain.mutable_spec()->set_data_vs_compute(false);
  EXPECT_EQ(JobFiguresJson(plain), "{\"vs_compute\": \"\", \"diagnosis\": \"\"}\n");
}

// A diagnosed job's figures carry status's diagnosis section, unindented.
TEST(JobFiguresTest, TheJsonCarriesTheDiagnosisOnceTheJobHasOne) {
  benchfleet::v1::JobStatus job = MeasuredJob();
  job.mutable_diagnosis()->set_note("no data: the job ended before this benchd diagnosed jobs");
  EXPECT_EQ(JobFiguresJson(job),
            "{\"vs_compute\": \"0.62 of compute: 120.2 images/s on its data, 193.1 on synthetic "
            "data\", \"diagnosis\": \"no data: the job ended before this benchd diagnosed "
            "jobs\\n\"}\n");
}

}  // namespace
}  // namespace bench::report
