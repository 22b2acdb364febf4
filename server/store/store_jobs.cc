// Store operations that write jobs: a new job's rows, and each update's mutable state,
// one writer per table (jobs, job_labels, job_allowed_nodes, job_node_labels,
// job_history, job_ranks, job_versions, rank_summaries, gpu_telemetry), all on the writer
// thread. Store::LoadJobs reads them back
// (store_jobs_load.cc).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/store/sqlite_db.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace bench {

namespace {

// SpecColumns' rows for a field stored as it is.
template <auto kField>
SpecColumn IntColumn(const char* name) {
  return {name,
          [](Statement& statement, int index, const JobSpec& spec) {
            statement.Bind(index, int64_t{spec.*kField});
          },
          [](const Statement& statement, int column, JobSpec& spec) {
            spec.*kField = static_cast<int>(statement.Int(column));
          }};
}

template <auto kField>
SpecColumn TextColumn(const char* name) {
  return {name,
          [](Statement& statement, int index, const JobSpec& spec) {
            statement.Bind(index, spec.*kField);
          },
          [](const Statement& statement, int column, JobSpec& spec) {
            spec.*kField = statement.Text(column);
          }};
}

template <auto kField>
SpecColumn BoolColumn(const char* name) {
  return {name,
          [](Statement& statement, int index, const JobSpec& spec) {
            statement.Bind(index, int64_t{spec.*kField ? 1 : 0});
          },
          [](const Statement& statement, int column, JobSpec& spec) {
            spec.*kField = statement.Int(column) != 0;
          }};
}

}  // namespace

const std::vector<SpecColumn>& SpecColumns() {
  static const auto* columns = new std::vector<SpecColumn>{
      // NULL when empty: request_id is UNIQUE, and NULLs never collide.
      {"request_id",
       [](Statement& statement, int index, const JobSpec& spec) {
         if (spec.request_id.empty()) {
           statement.BindNull(index);
         } else {
           statement.Bind(index, spec.request_id);
         }
       },
       [](const Statement& statement, int column, JobSpec& spec) {
         spec.request_id = statement.Text(column);
       }},
      TextColumn<&JobSpec::model>("model"),
      IntColumn<&JobSpec::devices>("devices"),
      {"precision",
       [](Statement& statement, int index, const JobSpec& spec) {
         statement.Bind(index, PrecisionText(spec.precision));
       },
       [](const Statement& statement, int column, JobSpec& spec) {
         spec.precision =
             PrecisionFromText(statement.Text(column)).value_or(Precision::kUnspecified);
       }},
      IntColumn<&JobSpec::batch_size>("batch_size"),
      IntColumn<&JobSpec::iterations>("iterations"),
      IntColumn<&JobSpec::warmup_iterations>("warmup_iterations"),
      IntColumn<&JobSpec::image_size>("image_size"),
      TextColumn<&JobSpec::data>("data"),
      TextColumn<&JobSpec::name>("name"),
      IntColumn<&JobSpec::nodes>("nodes"),
      IntColumn<&JobSpec::devices_per_node>("devices_per_node"),
      IntColumn<&JobSpec::wall_time_limit_s>("wall_time_limit_s"),
      IntColumn<&JobSpec::hang_timeout_s>("hang_timeout_s"),
      TextColumn<&JobSpec::data_path>("data_path"),
      IntColumn<&JobSpec::loader_threads>("loader_threads"),
      BoolColumn<&JobSpec::data_vs_compute>("data_vs_compute"),
  };
  return *columns;
}

namespace {

// The job's mutable columns; NOT_FOUND when no row has its id.
absl::Status UpdateJobRow(Database& db, const Job& job) {
  ASSIGN_OR_RETURN(Statement * update,
                   db.Prepare("UPDATE jobs SET state=?2, reason=?3, attempt=?4, "
                              "device_kind=?5, parameters=?6, updated_ms=?7, "
                              "telemetry_note=?8, requeues=?9, simulated=?10 WHERE id=?1"));
  update->Bind(1, job.id);
  update->Bind(2, JobStateText(job.state));
  update->Bind(3, job.reason);
  update->Bind(4, int64_t{job.attempt});
  update->Bind(5, DeviceKindText(job.device_kind));
  update->Bind(6, job.parameters);
  update->Bind(7, ToMs(absl::Now()));
  update->Bind(8, job.telemetry_note);
  update->Bind(9, int64_t{job.requeues});
  update->Bind(10, int64_t{job.simulated ? 1 : 0});
  RETURN_IF_ERROR(update->Run());
  if (update->changes() != 1) return absl::NotFoundError(absl::StrCat("job ", job.id));
  return absl::OkStatus();
}

// The history entries not stored yet (an entry, once stored, never changes).
absl::Status WriteHistoryRows(Database& db, const Job& job) {
  ASSIGN_OR_RETURN(Statement * history,
                   db.Prepare("INSERT OR IGNORE INTO job_history VALUES (?1, ?2, ?3, ?4, ?5)"));
  for (size_t i = 0; i < job.history.size(); ++i) {
    history->Reset();
    history->Bind(1, job.id);
    history->Bind(2, static_cast<int64_t>(i));
    history->Bind(3, JobStateText(job.history[i].state));
    history->Bind(4, job.history[i].reason);
    history->Bind(5, ToMs(job.history[i].time));
    RETURN_IF_ERROR(history->Run());
  }
  return absl::OkStatus();
}

// The current attempt's ranks (written once per attempt) and their precisions.
absl::Status WriteRankRows(Database& db, const Job& job) {
  ASSIGN_OR_RETURN(Statement * rank,
                   db.Prepare("INSERT OR IGNORE INTO job_ranks (job_id, attempt, rank, agent, "
                              "device_index, hostname, gpu_uuid, gpu_name) VALUES (?1, ?2, ?3, "
                              "?4, ?5, ?6, ?7, ?8)"));
  std::map<int, const RankDevice*> devices;
  for (const RankDevice& device : job.rank_devices) devices[device.rank] = &device;
  for (const Placement& placement : job.placements) {
    for (size_t i = 0; i < placement.ranks.size(); ++i) {
      rank->Reset();
      rank->Bind(1, job.id);
      rank->Bind(2, int64_t{job.attempt});
      rank->Bind(3, int64_t{placement.ranks[i]});
      rank->Bind(4, placement.agent);
      rank->Bind(5, int64_t{placement.device_indices[i]});
      auto device = devices.find(placement.ranks[i]);
      bool known = device != devices.end();
      rank->Bind(6, known ? device->second->hostname : std::string());
      rank->Bind(7, known ? device->second->gpu_uuid : std::string());
      rank->Bind(8, known ? device->second->gpu_name : std::string());
      RETURN_IF_ERROR(rank->Run());
    }
  }
  ASSIGN_OR_RETURN(Statement * precision,
                   db.Prepare("UPDATE job_ranks SET precision=?4 WHERE job_id=?1 AND "
                              "attempt=?2 AND rank=?3 AND precision<>?4"));
  for (const auto& [rank_index, text] : job.rank_precisions) {
    precision->Reset();
    precision->Bind(1, job.id);
    precision->Bind(2, int64_t{job.attempt});
    precision->Bind(3, int64_t{rank_index});
    precision->Bind(4, text);
    RETURN_IF_ERROR(precision->Run());
  }
  return absl::OkStatus();
}

// The current attempt's versions, by agent and by rank.
absl::Status WriteVersionRows(Database& db, const Job& job) {
  ASSIGN_OR_RETURN(Statement * version,
                   db.Prepare("INSERT OR REPLACE INTO job_versions VALUES (?1, ?2, ?3, ?4, ?5, "
                              "?6)"));
  auto write_versions = [&](const std::string& agent, int rank_index,
                            const Versions& versions) -> absl::Status {
    for (const auto& [key, value] : versions) {
      version->Reset();
      version->Bind(1, job.id);
      version->Bind(2, int64_t{job.attempt});
      version->Bind(3, agent);
      version->Bind(4, int64_t{rank_index});
      version->Bind(5, key);
      version->Bind(6, value);
      RETURN_IF_ERROR(version->Run());
    }
    return absl::OkStatus();
  };
  for (const auto& [agent, versions] : job.agent_versions) {
    RETURN_IF_ERROR(write_versions(agent, -1, versions));
  }
  for (const auto& [rank_index, versions] : job.rank_versions) {
    RETURN_IF_ERROR(write_versions("", rank_index, versions));
  }
  return absl::OkStatus();
}

// The current attempt's rank summaries.
absl::Status WriteRankSummaryRows(Database& db, const Job& job) {
  ASSIGN_OR_RETURN(
      Statement * summary,
      db.Prepare("INSERT OR REPLACE INTO rank_summaries VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
                 "?8, ?9, ?10)"));
  for (const auto& [rank_index, s] : job.summaries) {
    summary->Reset();
    summary->Bind(1, job.id);
    summary->Bind(2, int64_t{job.attempt});
    summary->Bind(3, int64_t{rank_index});
    summary->Bind(4, int64_t{s.measured_iterations});
    summary->Bind(5, s.measured_images);
    summary->Bind(6, s.window_s);
    summary->Bind(7, s.step_time_median_s);
    summary->Bind(8, s.skipped_steps);
    summary->Bind(9, s.nonfinite_losses);
    summary->Bind(10, s.synthetic_images_per_second);
    RETURN_IF_ERROR(summary->Run());
  }
  return absl::OkStatus();
}

// `job_allocations`: the job's external allocation, once it has one.
absl::Status WriteAllocationRow(Database& db, const Job& job) {
  const Allocation& a = job.allocation;
  if (a.id.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(Statement * upsert, db.Prepare("INSERT OR REPLACE INTO job_allocations "
                                                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
  upsert->Bind(1, job.id);
  upsert->Bind(2, a.system);
  upsert->Bind(3, a.id);
  upsert->Bind(4, a.state);
  upsert->Bind(5, a.reason);
  upsert->Bind(6, a.nodes);
  upsert->Bind(7, int64_t{a.ended ? 1 : 0});
  return upsert->Run();
}

// Everything UpdateJob persists, table by table.
absl::Status WriteMutableJobState(Database& db, const Job& job) {
  RETURN_IF_ERROR(UpdateJobRow(db, job));
  RETURN_IF_ERROR(WriteAllocationRow(db, job));
  RETURN_IF_ERROR(WriteHistoryRows(db, job));
  RETURN_IF_ERROR(WriteRankRows(db, job));
  RETURN_IF_ERROR(WriteVersionRows(db, job));
  RETURN_IF_ERROR(WriteRankSummaryRows(db, job));
  return WriteGpuTelemetryRows(db, job);
}

// What UpdateRanks writes: the job's row and the given ranks' rows (`job` is RanksOnly's).
absl::Status WriteRankState(Database& db, const Job& job) {
  RETURN_IF_ERROR(UpdateJobRow(db, job));
  RETURN_IF_ERROR(WriteRankRows(db, job));
  RETURN_IF_ERROR(WriteVersionRows(db, job));
  return WriteRankSummaryRows(db, job);
}

// The job's row fields and, of its per-rank state, only `ranks`': what WriteRankState
// needs, copied in time proportional to `ranks` (plus the placements' count).
Job RanksOnly(const Job& job, const std::set<int>& ranks) {
  Job slim;
  slim.id = job.id;
  slim.state = job.state;
  slim.reason = job.reason;
  slim.attempt = job.attempt;
  slim.device_kind = job.device_kind;
  slim.parameters = job.parameters;
  slim.telemetry_note = job.telemetry_note;
  slim.requeues = job.requeues;
  slim.simulated = job.simulated;
  for (const Placement& placement : job.placements) {
    Placement kept{placement.agent, {}, {}};
    for (size_t i = 0; i < placement.ranks.size(); ++i) {
      if (ranks.count(placement.ranks[i]) == 0) continue;
      kept.ranks.push_back(placement.ranks[i]);
      kept.device_indices.push_back(placement.device_indices[i]);
    }
    if (!kept.ranks.empty()) slim.placements.push_back(std::move(kept));
  }
  for (int rank : ranks) {
    // rank_devices is sorted by rank (job_manager_placement.cc); looked up, not walked.
    auto device = std::lower_bound(job.rank_devices.begin(), job.rank_devices.end(), rank,
                                   [](const RankDevice& d, int r) { return d.rank < r; });
    if (device != job.rank_devices.end() && device->rank == rank) {
      slim.rank_devices.push_back(*device);
    } else {
      for (const RankDevice& d : job.rank_devices) {  // not sorted: find it anyway
        if (d.rank == rank) slim.rank_devices.push_back(d);
      }
    }
    if (auto it = job.rank_versions.find(rank); it != job.rank_versions.end()) {
      slim.rank_versions.insert(*it);
    }
    if (auto it = job.rank_precisions.find(rank); it != job.rank_precisions.end()) {
      slim.rank_precisions.insert(*it);
    }
    if (auto it = job.summaries.find(rank); it != job.summaries.end()) {
      slim.summaries.insert(*it);
    }
  }
  return slim;
}

// The job's row, its labels and constraints, and everything WriteMutableJobState writes.
absl::Status InsertJobRows(Database& db, const Job& job) {
  // The job's own columns (?1..?10; updated_ms is created_ms, no telemetry note yet),
  // then the spec's from ?11 on.
  static const std::string* const kInsert = [] {
    std::string columns =
        "id, seq, state, reason, attempt, device_kind, parameters, created_ms, requeues, "
        "submitted_by, updated_ms, telemetry_note";
    std::string values = "?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?8, ''";
    int index = 10;
    for (const SpecColumn& column : SpecColumns()) {
      absl::StrAppend(&columns, ", ", column.name);
      absl::StrAppend(&values, ", ?", ++index);
    }
    return new std::string(absl::StrCat("INSERT INTO jobs (", columns, ") VALUES (", values, ")"));
  }();
  ASSIGN_OR_RETURN(Statement * insert, db.Prepare(*kInsert));
  const JobSpec& spec = job.spec;
  insert->Bind(1, job.id);
  insert->Bind(2, job.seq);
  insert->Bind(3, JobStateText(job.state));
  insert->Bind(4, job.reason);
  insert->Bind(5, int64_t{job.attempt});
  insert->Bind(6, DeviceKindText(job.device_kind));
  insert->Bind(7, job.parameters);
  insert->Bind(8, ToMs(job.created));
  insert->Bind(9, int64_t{job.requeues});
  insert->Bind(10, job.submitted_by);
  int index = 10;
  for (const SpecColumn& column : SpecColumns()) column.write(*insert, ++index, spec);
  RETURN_IF_ERROR(insert->Run());
  // Labels and constraints, one row per item: any bytes round-trip.
  ASSIGN_OR_RETURN(Statement * label, db.Prepare("INSERT INTO job_labels VALUES (?1, ?2, ?3)"));
  for (const auto& [key, value] : spec.labels) {
    label->Reset();
    label->Bind(1, job.id);
    label->Bind(2, key);
    label->Bind(3, value);
    RETURN_IF_ERROR(label->Run());
  }
  ASSIGN_OR_RETURN(Statement * node,
                   db.Prepare("INSERT INTO job_allowed_nodes (job_id, position, node) VALUES "
                              "(?1, ?2, ?3)"));
  for (size_t i = 0; i < spec.allowed_nodes.size(); ++i) {
    node->Reset();
    node->Bind(1, job.id);
    node->Bind(2, static_cast<int64_t>(i));
    node->Bind(3, spec.allowed_nodes[i]);
    RETURN_IF_ERROR(node->Run());
  }
  ASSIGN_OR_RETURN(Statement * node_label,
                   db.Prepare("INSERT INTO job_node_labels (job_id, key, value) VALUES (?1, "
                              "?2, ?3)"));
  for (const auto& [key, value] : spec.node_labels) {
    node_label->Reset();
    node_label->Bind(1, job.id);
    node_label->Bind(2, key);
    node_label->Bind(3, value);
    RETURN_IF_ERROR(node_label->Run());
  }
  return WriteMutableJobState(db, job);
}

}  // namespace

absl::Status Store::InsertJob(const Job& job) {
  return Write([job](Database& db) { return InsertJobRows(db, job); });
}

void Store::InsertJobAsync(const Job& job, Done done) {
  Enqueue({[job](Database& db) { return InsertJobRows(db, job); }, std::move(done)});
}

absl::Status Store::UpdateJob(const Job& job) {
  return Write([job](Database& db) { return WriteMutableJobState(db, job); });
}

void Store::UpdateJobAsync(const Job& job, Done done) {
  Enqueue({[job](Database& db) { return WriteMutableJobState(db, job); }, std::move(done)});
}

absl::Status Store::UpdateRanks(const Job& job, const std::set<int>& ranks) {
  return Write([slim = RanksOnly(job, ranks)](Database& db) { return WriteRankState(db, slim); });
}

void Store::UpdateRanksAsync(const Job& job, const std::set<int>& ranks, Done done) {
  Enqueue({[slim = RanksOnly(job, ranks)](Database& db) { return WriteRankState(db, slim); },
           std::move(done)});
}

}  // namespace bench
