#include "report/job_figures.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report/diagnosis_view.h"
#include "report/json_output.h"

namespace bench::report {

std::string DataVsComputeText(const benchfleet::v1::JobStatus& job) {
  if (!(job.synthetic_images_per_second() > 0) || !job.has_throughput()) {
    return "no data (every rank's run on synthetic data is needed)";
  }
  return absl::StrFormat("%.2f of compute: %.1f images/s on its data, %.1f on synthetic data",
                         job.data_vs_compute(), job.images_per_second(),
                         job.synthetic_images_per_second());
}

std::string JobFiguresJson(const benchfleet::v1::JobStatus& job) {
  return absl::StrCat(
      JsonObject()
          .Add("vs_compute", job.spec().data_vs_compute() ? DataVsComputeText(job) : "")
          .Add("diagnosis", job.has_diagnosis() ? DiagnosisText(job.diagnosis()) : "")
          .Build(),
      "\n");
}

}  // namespace bench::report
