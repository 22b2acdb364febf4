// Store operations on job diagnoses (server/results/job_diagnosis.h): computed on the
// analysis thread when an attempt ends and written by the writer, kept in `job_diagnoses` (one row per job and
// attempt, the result as job_diagnosis_json.h's JSON), loaded with the jobs, and
// recomputed on the reader for `benchctl diagnose`.
#include <functional>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/results/job_diagnosis_json.h"
#include "server/store/sqlite_db.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace bench {
namespace {

absl::Status WriteDiagnosisRow(Database& db, const std::string& job_id,
                               const JobDiagnosis& diagnosis) {
  ASSIGN_OR_RETURN(Statement * insert,
                   db.Prepare("INSERT OR REPLACE INTO job_diagnoses (job_id, attempt, "
                              "available, note, failing_checks, result) "
                              "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
  insert->Bind(1, job_id);
  insert->Bind(2, int64_t{diagnosis.attempt});
  insert->Bind(3, int64_t{diagnosis.available ? 1 : 0});
  insert->Bind(4, diagnosis.note);
  insert->Bind(5, int64_t{diagnosis.FailingChecks()});
  if (diagnosis.available) {
    insert->Bind(6, DiagnosisToJson(diagnosis));
  } else {
    insert->BindNull(6);
  }
  return insert->Run();
}

}  // namespace

absl::Status LoadDiagnoses(Database& db, const std::map<std::string, size_t>& index,
                           std::vector<Job>& jobs, const RowFilter& filter) {
  ASSIGN_OR_RETURN(Statement * select,
                   db.Prepare(filter.Sql("SELECT job_id, attempt, available, note, result "
                                         "FROM job_diagnoses",
                                         "")));
  filter.Bind(select);
  while (true) {
    ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) break;
    auto it = index.find(select->Text(0));
    if (it == index.end()) continue;
    Job& job = jobs[it->second];
    if (select->Int(1) != job.attempt) continue;
    auto diagnosis = std::make_shared<JobDiagnosis>();
    diagnosis->attempt = job.attempt;
    diagnosis->note = select->Text(3);
    if (select->Int(2) != 0 && !select->IsNull(4)) {
      absl::StatusOr<JobDiagnosis> parsed = DiagnosisFromJson(select->Text(4));
      if (parsed.ok()) {
        *diagnosis = *std::move(parsed);
      } else {
        Log("job ", job.id, ": ", parsed.status().message());
        diagnosis->note = absl::StrCat("no data: ", parsed.status().message());
      }
    }
    job.diagnosis = std::move(diagnosis);
  }
  return absl::OkStatus();
}

bool Store::DiagnoseJobAsync(diagnosis::JobInputs facts, int attempt, DiagnosisDone done) {
  auto answer = std::make_shared<DiagnosisDone>(std::move(done));
  std::string job_id = facts.job_id;
  return AnalyzeAttemptRows(
      job_id, attempt,
      [this, facts = std::move(facts), attempt, answer](const AttemptRows& rows) {
        return DiagnoseWith(facts, attempt, rows, answer);
      },
      [answer](absl::Status status) { (*answer)(status); });
}

bool Store::AnalyzeAttemptAsync(TelemetryRequest request, diagnosis::JobInputs facts,
                                TelemetryDone telemetry_done, DiagnosisDone diagnosis_done) {
  auto telemetry = std::make_shared<TelemetryDone>(std::move(telemetry_done));
  auto diagnosis = std::make_shared<DiagnosisDone>(std::move(diagnosis_done));
  std::string job_id = request.job_id;
  int attempt = request.attempt;
  return AnalyzeAttemptRows(
      job_id, attempt,
      [this, request = std::move(request), facts = std::move(facts), telemetry,
       diagnosis](const AttemptRows& rows) -> std::function<void()> {
        std::function<void()> write_telemetry = JoinTelemetryOf(request, rows, telemetry);
        std::function<void()> write_diagnosis =
            DiagnoseWith(facts, request.attempt, rows, diagnosis);
        return [write_telemetry = std::move(write_telemetry),
                write_diagnosis = std::move(write_diagnosis)] {
          write_telemetry();
          write_diagnosis();
        };
      },
      [telemetry, diagnosis](absl::Status status) {
        (*telemetry)(status);
        (*diagnosis)(status);
      });
}

std::function<void()> Store::DiagnoseWith(const diagnosis::JobInputs& facts, int attempt,
                                          const AttemptRows& rows,
                                          std::shared_ptr<DiagnosisDone> answer) {
  // Diagnosed on the analysis thread; only the result is written.
  diagnosis::JobInputs inputs = facts;
  AddSamples(inputs, rows.samples, rows.gpu_samples);
  auto result = std::make_shared<JobDiagnosis>(Diagnose(inputs, attempt));
  return [this, answer, result, job_id = facts.job_id] {
    Enqueue({[result, job_id](Database& db) { return WriteDiagnosisRow(db, job_id, *result); },
             [answer, result](absl::Status status) {
               if (status.ok()) {
                 (*answer)(std::move(*result));
               } else {
                 (*answer)(status);
               }
             }});
  };
}

absl::StatusOr<JobDiagnosis> Store::RediagnoseJob(const diagnosis::JobInputs& facts, int attempt) {
  AttemptRows rows;
  {
    std::lock_guard<std::mutex> lock(reader_mu_);
    ASSIGN_OR_RETURN(rows, SelectAttemptRows(*reader_db_, facts.job_id, attempt));
  }
  diagnosis::JobInputs inputs = facts;
  AddSamples(inputs, rows.samples, rows.gpu_samples);
  return Diagnose(inputs, attempt);
}

}  // namespace bench
