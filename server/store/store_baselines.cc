// Store operations on the `baselines` table: a baseline per configuration, replaced
// whole by the next one of the same configuration (server/results/baseline.h says what one is).
#include "common/status_macros.h"
#include "server/store/sqlite_db.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace bench {

void Store::PutBaselineAsync(const Baseline& baseline, Done done) {
  Enqueue({[baseline](Database& db) -> absl::Status {
             ASSIGN_OR_RETURN(Statement * insert,
                              db.Prepare("INSERT OR REPLACE INTO baselines VALUES (?1, ?2, ?3, "
                                         "?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"));
             const ConfigurationKey& c = baseline.configuration;
             insert->Bind(1, c.model);
             insert->Bind(2, PrecisionText(c.precision));
             insert->Bind(3, int64_t{c.batch_size});
             insert->Bind(4, int64_t{c.devices});
             insert->Bind(5, c.gpu_model);
             insert->Bind(6, DeviceKindText(c.device_kind));
             insert->Bind(7, baseline.job_id);
             insert->Bind(8, baseline.images_per_second);
             insert->Bind(9, baseline.lower_tolerance_pct);
             insert->Bind(10, baseline.upper_tolerance_pct);
             insert->Bind(11, ToMs(baseline.set));
             insert->Bind(12, int64_t{c.image_size});
             return insert->Run();
           },
           std::move(done)});
}

absl::StatusOr<std::vector<Baseline>> Store::LoadBaselines() {
  std::lock_guard<std::mutex> lock(reader_mu_);
  ASSIGN_OR_RETURN(Statement * select,
                   reader_db_->Prepare("SELECT model, precision, batch_size, devices, "
                                       "gpu_model, device_kind, job_id, images_per_second, "
                                       "lower_tolerance_pct, upper_tolerance_pct, set_ms, "
                                       "image_size FROM baselines"));
  std::vector<Baseline> baselines;
  while (true) {
    ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) break;
    Baseline b;
    b.configuration.model = select->Text(0);
    b.configuration.precision =
        PrecisionFromText(select->Text(1)).value_or(Precision::kUnspecified);
    b.configuration.batch_size = static_cast<int>(select->Int(2));
    b.configuration.devices = static_cast<int>(select->Int(3));
    b.configuration.gpu_model = select->Text(4);
    b.configuration.device_kind = DeviceKindFromText(select->Text(5));
    b.job_id = select->Text(6);
    b.images_per_second = select->Double(7);
    b.lower_tolerance_pct = select->Double(8);
    b.upper_tolerance_pct = select->Double(9);
    b.set = FromMs(select->Int(10));
    b.configuration.image_size = static_cast<int>(select->Int(11));
    baselines.push_back(std::move(b));
  }
  return baselines;
}

}  // namespace bench
