// Store::LoadJobs: every job rebuilt from its tables at startup, one loader per table
// (jobs, job_labels, job_allowed_nodes and job_node_labels, job_history, job_ranks, job_versions,
// rank_summaries, gpu_telemetry), on the reader connection. Rows of a job's earlier attempts are
// kept in the tables but not loaded. Store::LoadRankDetail: the per-rank tables' rows and the
// diagnosis of one job's attempt, with the same loaders. The writers are in store_jobs.cc.
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "server/store/sqlite_db.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace bench {

std::string RowFilter::Sql(absl::string_view select, absl::string_view order_by) const {
  return absl::StrCat(select, only == nullptr ? "" : " WHERE job_id = ?1 AND attempt = ?2",
                      order_by);
}

void RowFilter::Bind(Statement* statement) const {
  if (only == nullptr) return;
  statement->Bind(1, only->id);
  statement->Bind(2, int64_t{only->attempt});
}

namespace {

JobState ParseState(const std::string& text) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                     JobState::kCancelled}) {
    if (text == JobStateText(s)) return s;
  }
  return JobState::kFailed;
}

// The jobs loaded so far, in submission order, and where each id is among them.
struct LoadedJobs {
  std::vector<Job> jobs;
  std::map<std::string, size_t> index;

  // The job `id`, or null when a row belongs to no job (nothing is loaded for it).
  Job* Find(const std::string& id) {
    auto it = index.find(id);
    return it == index.end() ? nullptr : &jobs[it->second];
  }
};

// `jobs`: one Job per row, ordered by submission, with its mutable columns and its spec
// (SpecColumns(), from column 12 on).
absl::Status LoadJobRows(Database& db, LoadedJobs& loaded) {
  static const std::string* const kSelect = [] {
    std::string columns =
        "id, seq, state, reason, attempt, device_kind, parameters, created_ms, telemetry_note, "
        "requeues, submitted_by, simulated";
    for (const SpecColumn& column : SpecColumns()) absl::StrAppend(&columns, ", ", column.name);
    return new std::string(absl::StrCat("SELECT ", columns, " FROM jobs ORDER BY seq"));
  }();
  constexpr int kFirstSpecColumn = 12;
  ASSIGN_OR_RETURN(Statement * select, db.Prepare(*kSelect));
  while (true) {
    ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) break;
    Job job;
    job.id = select->Text(0);
    job.seq = select->Int(1);
    job.state = ParseState(select->Text(2));
    job.reason = select->Text(3);
    job.attempt = static_cast<int>(select->Int(4));
    job.device_kind = DeviceKindFromText(select->Text(5));
    job.parameters = select->Int(6);
    job.created = FromMs(select->Int(7));
    job.telemetry_note = select->Text(8);
    job.requeues = static_cast<int>(select->Int(9));
    job.submitted_by = select->Text(10);
    job.simulated = select->Int(11) != 0;
    int column = kFirstSpecColumn;
    for (const SpecColumn& spec_column : SpecColumns()) {
      spec_column.read(*select, column++, job.spec);
    }
    loaded.index[job.id] = loaded.jobs.size();
    loaded.jobs.push_back(std::move(job));
  }
  return absl::OkStatus();
}

// `job_labels`: each job's spec labels.
absl::Status LoadLabels(Database& db, LoadedJobs& loaded) {
  ASSIGN_OR_RETURN(Statement * labels, db.Prepare("SELECT job_id, key, value FROM job_labels"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, labels->Step());
    if (!row) break;
    if (Job* job = loaded.Find(labels->Text(0))) {
      job->spec.labels[labels->Text(1)] = labels->Text(2);
    }
  }
  return absl::OkStatus();
}

// `job_allowed_nodes` and `job_node_labels`: each job's placement constraints.
absl::Status LoadConstraints(Database& db, LoadedJobs& loaded) {
  ASSIGN_OR_RETURN(Statement * nodes, db.Prepare("SELECT job_id, node FROM job_allowed_nodes "
                                                 "ORDER BY job_id, position"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, nodes->Step());
    if (!row) break;
    if (Job* job = loaded.Find(nodes->Text(0))) job->spec.allowed_nodes.push_back(nodes->Text(1));
  }
  ASSIGN_OR_RETURN(Statement * labels,
                   db.Prepare("SELECT job_id, key, value FROM job_node_labels"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, labels->Step());
    if (!row) break;
    if (Job* job = loaded.Find(labels->Text(0))) {
      job->spec.node_labels[labels->Text(1)] = labels->Text(2);
    }
  }
  return absl::OkStatus();
}

// `job_history`: each job's state changes, in order.
absl::Status LoadHistory(Database& db, LoadedJobs& loaded) {
  ASSIGN_OR_RETURN(
      Statement * history,
      db.Prepare("SELECT job_id, state, reason, time_ms FROM job_history ORDER BY job_id, seq"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, history->Step());
    if (!row) break;
    Job* job = loaded.Find(history->Text(0));
    if (job == nullptr) continue;
    job->history.push_back(
        {ParseState(history->Text(1)), history->Text(2), FromMs(history->Int(3))});
  }
  return absl::OkStatus();
}

// `job_ranks` of the current attempt: placements (agents in order of their lowest
// rank), rank devices and the precision each rank reported.
absl::Status LoadRanks(Database& db, LoadedJobs& loaded, const RowFilter& filter) {
  ASSIGN_OR_RETURN(Statement * ranks,
                   db.Prepare(filter.Sql("SELECT job_id, attempt, rank, agent, device_index, "
                                         "hostname, gpu_uuid, gpu_name, precision FROM job_ranks",
                                         " ORDER BY job_id, attempt, rank")));
  filter.Bind(ranks);
  while (true) {
    ASSIGN_OR_RETURN(bool row, ranks->Step());
    if (!row) break;
    Job* found = loaded.Find(ranks->Text(0));
    if (found == nullptr) continue;
    Job& job = *found;
    if (ranks->Int(1) != job.attempt) continue;
    std::string agent = ranks->Text(3);
    auto placement = std::find_if(job.placements.begin(), job.placements.end(),
                                  [&](const Placement& p) { return p.agent == agent; });
    if (placement == job.placements.end()) {
      job.placements.push_back(Placement{agent, {}, {}});
      placement = job.placements.end() - 1;
    }
    placement->ranks.push_back(static_cast<int>(ranks->Int(2)));
    placement->device_indices.push_back(static_cast<int>(ranks->Int(4)));
    job.rank_devices.push_back(RankDevice{static_cast<int>(ranks->Int(2)), agent, ranks->Text(5),
                                          static_cast<int>(ranks->Int(4)), ranks->Text(6),
                                          ranks->Text(7)});
    if (std::string precision = ranks->Text(8); !precision.empty()) {
      job.rank_precisions[static_cast<int>(ranks->Int(2))] = std::move(precision);
    }
  }
  return absl::OkStatus();
}

// `job_versions` of the current attempt: by agent (rank -1) and by rank.
absl::Status LoadVersions(Database& db, LoadedJobs& loaded, const RowFilter& filter) {
  ASSIGN_OR_RETURN(Statement * versions,
                   db.Prepare(filter.Sql(
                       "SELECT job_id, attempt, agent, rank, key, value FROM job_versions", "")));
  filter.Bind(versions);
  while (true) {
    ASSIGN_OR_RETURN(bool row, versions->Step());
    if (!row) break;
    Job* job = loaded.Find(versions->Text(0));
    if (job == nullptr) continue;
    if (versions->Int(1) != job->attempt) continue;
    int rank_index = static_cast<int>(versions->Int(3));
    if (rank_index < 0) {
      job->agent_versions[versions->Text(2)][versions->Text(4)] = versions->Text(5);
    } else {
      job->rank_versions[rank_index][versions->Text(4)] = versions->Text(5);
    }
  }
  return absl::OkStatus();
}

// `rank_summaries` of the current attempt.
absl::Status LoadRankSummaries(Database& db, LoadedJobs& loaded, const RowFilter& filter) {
  ASSIGN_OR_RETURN(Statement * summaries,
                   db.Prepare(filter.Sql("SELECT job_id, attempt, rank, measured_iterations, "
                                         "measured_images, window_s, step_time_median_s, "
                                         "skipped_steps, nonfinite_losses, "
                                         "synthetic_images_per_second FROM rank_summaries",
                                         "")));
  filter.Bind(summaries);
  while (true) {
    ASSIGN_OR_RETURN(bool row, summaries->Step());
    if (!row) break;
    Job* job = loaded.Find(summaries->Text(0));
    if (job == nullptr) continue;
    if (summaries->Int(1) != job->attempt) continue;
    RankSummary s;
    s.rank = static_cast<int>(summaries->Int(2));
    s.measured_iterations = static_cast<int>(summaries->Int(3));
    s.measured_images = summaries->Int(4);
    s.window_s = summaries->Double(5);
    s.step_time_median_s = summaries->Double(6);
    s.skipped_steps = summaries->Int(7);
    s.nonfinite_losses = summaries->Int(8);
    s.synthetic_images_per_second = summaries->Double(9);
    job->summaries[s.rank] = s;
  }
  return absl::OkStatus();
}

// `job_allocations`: each job's external allocation (Slurm), where it has one.
absl::Status LoadAllocations(Database& db, LoadedJobs& loaded) {
  ASSIGN_OR_RETURN(Statement * select,
                   db.Prepare("SELECT job_id, system, id, state, reason, nodes, ended "
                              "FROM job_allocations"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) break;
    Job* job = loaded.Find(select->Text(0));
    if (job == nullptr) continue;
    Allocation& a = job->allocation;
    a.system = select->Text(1);
    a.id = select->Text(2);
    a.state = select->Text(3);
    a.reason = select->Text(4);
    a.nodes = select->Text(5);
    a.ended = select->Int(6) != 0;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Job>> Store::LoadJobs() {
  std::lock_guard<std::mutex> lock(reader_mu_);
  Database& db = *reader_db_;
  LoadedJobs loaded;
  RETURN_IF_ERROR(LoadJobRows(db, loaded));
  RETURN_IF_ERROR(LoadLabels(db, loaded));
  RETURN_IF_ERROR(LoadConstraints(db, loaded));
  RETURN_IF_ERROR(LoadHistory(db, loaded));
  RETURN_IF_ERROR(LoadRanks(db, loaded, RowFilter{}));
  RETURN_IF_ERROR(LoadVersions(db, loaded, RowFilter{}));
  RETURN_IF_ERROR(LoadRankSummaries(db, loaded, RowFilter{}));
  RETURN_IF_ERROR(LoadAllocations(db, loaded));
  RETURN_IF_ERROR(LoadGpuTelemetry(db, loaded.index, loaded.jobs));
  RETURN_IF_ERROR(LoadDiagnoses(db, loaded.index, loaded.jobs));
  return std::move(loaded.jobs);
}

absl::StatusOr<Job> Store::LoadRankDetail(const std::string& job_id, int attempt) {
  std::lock_guard<std::mutex> lock(reader_mu_);
  Database& db = *reader_db_;
  LoadedJobs loaded;
  loaded.jobs.emplace_back();
  loaded.jobs[0].id = job_id;
  loaded.jobs[0].attempt = attempt;
  loaded.index[job_id] = 0;
  const RowFilter filter{&loaded.jobs[0]};
  RETURN_IF_ERROR(LoadRanks(db, loaded, filter));
  RETURN_IF_ERROR(LoadVersions(db, loaded, filter));
  RETURN_IF_ERROR(LoadRankSummaries(db, loaded, filter));
  RETURN_IF_ERROR(LoadGpuTelemetry(db, loaded.index, loaded.jobs, filter));
  RETURN_IF_ERROR(LoadDiagnoses(db, loaded.index, loaded.jobs, filter));
  return std::move(loaded.jobs[0]);
}

}  // namespace bench
