// The on-disk schema of the store: the migrations that bring a database from any older
// schema version to Store::kSchemaVersion, one transaction per migration. Migration i
// is applied exactly once and never edited (a database written by an older benchd
// depends on it); a change to the schema is a new migration at the end.
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/store/sqlite_db.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace bench {
namespace {

// Migration i (0-based) brings the schema from version i to i + 1.
const char* const kMigrations[] = {
    R"sql(
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  seq INTEGER NOT NULL UNIQUE,
  request_id TEXT UNIQUE,
  model TEXT NOT NULL,
  devices INTEGER NOT NULL,
  precision TEXT NOT NULL,
  batch_size INTEGER NOT NULL,
  iterations INTEGER NOT NULL,
  warmup_iterations INTEGER NOT NULL,
  image_size INTEGER NOT NULL,
  data TEXT NOT NULL,
  name TEXT NOT NULL,
  state TEXT NOT NULL,
  reason TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  device_kind TEXT NOT NULL,
  parameters INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
);
CREATE TABLE job_labels (
  job_id TEXT NOT NULL REFERENCES jobs(id),
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (job_id, key)
) WITHOUT ROWID;
CREATE TABLE job_history (
  job_id TEXT NOT NULL REFERENCES jobs(id),
  seq INTEGER NOT NULL,
  state TEXT NOT NULL,
  reason TEXT NOT NULL,
  time_ms INTEGER NOT NULL,
  PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;
CREATE TABLE job_ranks (
  job_id TEXT NOT NULL REFERENCES jobs(id),
  attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  agent TEXT NOT NULL,
  device_index INTEGER NOT NULL,
  PRIMARY KEY (job_id, attempt, rank)
) WITHOUT ROWID;
CREATE TABLE rank_summaries (
  job_id TEXT NOT NULL REFERENCES jobs(id),
  attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  measured_iterations INTEGER NOT NULL,
  measured_images INTEGER NOT NULL,
  window_s REAL NOT NULL,
  step_time_median_s REAL NOT NULL,
  PRIMARY KEY (job_id, attempt, rank)
) WITHOUT ROWID;
CREATE TABLE samples (
  job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  iteration INTEGER NOT NULL,
  step_time_s REAL NOT NULL,
  images INTEGER NOT NULL,
  loss REAL NOT NULL,
  data_time_s REAL NOT NULL,
  elapsed_s REAL NOT NULL,
  warmup INTEGER NOT NULL,
  PRIMARY KEY (job_id, attempt, rank, iteration)
) WITHOUT ROWID;
)sql",
    // 2: GPU telemetry (docs/telemetry.md).
    R"sql(
ALTER TABLE samples ADD COLUMN received_unix_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE samples ADD COLUMN power_w_mean REAL;
ALTER TABLE samples ADD COLUMN sm_clock_mhz_mean REAL;
ALTER TABLE jobs ADD COLUMN telemetry_note TEXT NOT NULL DEFAULT '';
CREATE TABLE gpu_samples (
  job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  gpu_uuid TEXT NOT NULL,
  gpu_index INTEGER NOT NULL,
  time_unix_ns INTEGER NOT NULL,
  power_w REAL,
  power_average_w REAL,
  energy_j REAL,
  sm_clock_mhz REAL,
  memory_clock_mhz REAL,
  temperature_c REAL,
  gpu_utilization_pct REAL,
  memory_utilization_pct REAL,
  memory_used_bytes INTEGER,
  throttle_reasons INTEGER,
  PRIMARY KEY (job_id, attempt, rank, seq)
) WITHOUT ROWID;
CREATE TABLE gpu_telemetry (
  job_id TEXT NOT NULL REFERENCES jobs(id),
  attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  agent TEXT NOT NULL,
  gpu_index INTEGER NOT NULL,
  gpu_uuid TEXT NOT NULL,
  samples INTEGER NOT NULL,
  energy_j REAL,
  energy_per_image_j REAL,
  images_per_second_per_watt REAL,
  power_count INTEGER NOT NULL, power_p5 REAL, power_p50 REAL, power_p95 REAL,
  sm_clock_count INTEGER NOT NULL, sm_clock_p5 REAL, sm_clock_p50 REAL, sm_clock_p95 REAL,
  temperature_count INTEGER NOT NULL, temperature_p5 REAL, temperature_p50 REAL,
  temperature_p95 REAL,
  throttle_reasons INTEGER NOT NULL,
  PRIMARY KEY (job_id, attempt, rank)
) WITHOUT ROWID;
)sql",
    // 3: environment fingerprint, rank devices and baselines.
    R"sql(
ALTER TABLE job_ranks ADD COLUMN hostname TEXT NOT NULL DEFAULT '';
ALTER TABLE job_ranks ADD COLUMN gpu_uuid TEXT NOT NULL DEFAULT '';
ALTER TABLE job_ranks ADD COLUMN gpu_name TEXT NOT NULL DEFAULT '';
CREATE TABLE job_versions (
  job_id TEXT NOT NULL REFERENCES jobs(id),
  attempt INTEGER NOT NULL,
  agent TEXT NOT NULL,     -- the reporting agent, or '' for a rank's versions
  rank INTEGER NOT NULL,   -- the reporting rank, or -1 for an agent's versions
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (job_id, attempt, agent, rank, key)
) WITHOUT ROWID;
CREATE TABLE baselines (
  model TEXT NOT NULL,
  precision TEXT NOT NULL,
  batch_size INTEGER NOT NULL,
  devices INTEGER NOT NULL,
  gpu_model TEXT NOT NULL,
  device_kind TEXT NOT NULL,
  job_id TEXT NOT NULL,
  images_per_second REAL NOT NULL,
  lower_tolerance_pct REAL NOT NULL,
  upper_tolerance_pct REAL NOT NULL,
  set_ms INTEGER NOT NULL,
  image_size INTEGER NOT NULL,
  PRIMARY KEY (model, precision, batch_size, devices, gpu_model, device_kind, image_size)
) WITHOUT ROWID;
)sql",
    // 4: scheduling (docs/scheduling.md): placement shape, constraints, limits, requeues.
    R"sql(
ALTER TABLE jobs ADD COLUMN nodes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN devices_per_node INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN allowed_nodes TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN node_labels TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN wall_time_limit_s INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN hang_timeout_s INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN requeues INTEGER NOT NULL DEFAULT 0;
)sql",
    // 5: the database's identity, which agents use to tell their spooled samples of
    // another database (a wiped or replaced one) from samples of this one.
    R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
INSERT INTO meta VALUES ('database_id', lower(hex(randomblob(16))));
)sql",
    // 6: samples keyed by one integer, so that an insert seeks an integer key instead of
    // comparing (job_id, attempt, rank, iteration) records. A series is one rank of one
    // attempt; a sample's key is (series << 32) + iteration + 2^31 (any 32-bit
    // iteration, in iteration order). `samples` stays, as a view with the old columns.
    R"sql(
CREATE TABLE sample_series (
  id INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  UNIQUE (job_id, attempt, rank)
);
CREATE TABLE sample_rows (
  key INTEGER PRIMARY KEY,
  step_time_s REAL NOT NULL,
  images INTEGER NOT NULL,
  loss REAL NOT NULL,
  data_time_s REAL NOT NULL,
  elapsed_s REAL NOT NULL,
  warmup INTEGER NOT NULL,
  received_unix_ns INTEGER NOT NULL DEFAULT 0,
  power_w_mean REAL,
  sm_clock_mhz_mean REAL
);
INSERT INTO sample_series (job_id, attempt, rank)
  SELECT DISTINCT job_id, attempt, rank FROM samples ORDER BY job_id, attempt, rank;
INSERT INTO sample_rows
  SELECT (r.id << 32) + s.iteration + 2147483648, s.step_time_s, s.images, s.loss,
         s.data_time_s, s.elapsed_s, s.warmup, s.received_unix_ns, s.power_w_mean,
         s.sm_clock_mhz_mean
  FROM samples s JOIN sample_series r USING (job_id, attempt, rank)
  ORDER BY 1;
DROP TABLE samples;
CREATE VIEW samples AS
  SELECT r.job_id, r.attempt, r.rank, (s.key & 4294967295) - 2147483648 AS iteration,
         s.step_time_s, s.images, s.loss, s.data_time_s, s.elapsed_s, s.warmup,
         s.received_unix_ns, s.power_w_mean, s.sm_clock_mhz_mean
  FROM sample_series r JOIN sample_rows s
    ON s.key >= r.id << 32 AND s.key < (r.id + 1) << 32;
)sql",
    // 7: non-finite losses are data (docs/results.md). SQLite stores a NaN as NULL (and
    // +/-Inf as REALs), so a NaN loss broke `loss REAL NOT NULL` and INSERT OR IGNORE
    // dropped the row. `loss` becomes nullable, NULL meaning NaN: SQLite cannot drop a
    // NOT NULL constraint in place, so sample_rows is rebuilt (same columns, same keys,
    // every row kept) and the `samples` view made again over it. Rank summaries gain
    // the trainer's skipped steps and non-finite losses; job_ranks the precision in
    // effect.
    R"sql(
DROP VIEW samples;
CREATE TABLE sample_rows_7 (
  key INTEGER PRIMARY KEY,
  step_time_s REAL NOT NULL,
  images INTEGER NOT NULL,
  loss REAL,
  data_time_s REAL NOT NULL,
  elapsed_s REAL NOT NULL,
  warmup INTEGER NOT NULL,
  received_unix_ns INTEGER NOT NULL DEFAULT 0,
  power_w_mean REAL,
  sm_clock_mhz_mean REAL
);
INSERT INTO sample_rows_7 (key, step_time_s, images, loss, data_time_s, elapsed_s, warmup,
                           received_unix_ns, power_w_mean, sm_clock_mhz_mean)
  SELECT key, step_time_s, images, loss, data_time_s, elapsed_s, warmup, received_unix_ns,
         power_w_mean, sm_clock_mhz_mean
  FROM sample_rows ORDER BY key;
DROP TABLE sample_rows;
ALTER TABLE sample_rows_7 RENAME TO sample_rows;
CREATE VIEW samples AS
  SELECT r.job_id, r.attempt, r.rank, (s.key & 4294967295) - 2147483648 AS iteration,
         s.step_time_s, s.images, s.loss, s.data_time_s, s.elapsed_s, s.warmup,
         s.received_unix_ns, s.power_w_mean, s.sm_clock_mhz_mean
  FROM sample_series r JOIN sample_rows s
    ON s.key >= r.id << 32 AND s.key < (r.id + 1) << 32;
ALTER TABLE rank_summaries ADD COLUMN skipped_steps INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rank_summaries ADD COLUMN nonfinite_losses INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_ranks ADD COLUMN precision TEXT NOT NULL DEFAULT '';
)sql",
    // 8: constraints stored so that any bytes round-trip (issue 15). Schema 4 kept
    // allowed_nodes and node_labels in one TEXT column each, items joined with 0x1f and a
    // label as KEY=VALUE, so a value holding 0x1f or '=' came back as another constraint.
    // They move to rows of their own, like job_labels: existing rows are split here
    // byte-wise (as BLOBs) exactly as schema 4's reader split them (a label at its first
    // '='; the first of two equal keys wins), then the old columns are dropped. Jobs also
    // record who submitted them (the principal's name, '' with security off).
    R"sql(
CREATE TABLE job_allowed_nodes (
  job_id TEXT NOT NULL REFERENCES jobs(id),
  position INTEGER NOT NULL,
  node TEXT NOT NULL,
  PRIMARY KEY (job_id, position)
) WITHOUT ROWID;
CREATE TABLE job_node_labels (
  job_id TEXT NOT NULL REFERENCES jobs(id),
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (job_id, key)
) WITHOUT ROWID;
INSERT INTO job_allowed_nodes (job_id, position, node)
  WITH RECURSIVE split(job_id, position, item, rest) AS (
    SELECT id, -1, NULL, CAST(allowed_nodes AS BLOB) FROM jobs WHERE allowed_nodes <> ''
    UNION ALL
    SELECT job_id, position + 1,
           CASE WHEN instr(rest, x'1f') > 0 THEN substr(rest, 1, instr(rest, x'1f') - 1)
                ELSE rest END,
           CASE WHEN instr(rest, x'1f') > 0 THEN substr(rest, instr(rest, x'1f') + 1) END
    FROM split WHERE rest IS NOT NULL)
  SELECT job_id, position, CAST(item AS TEXT) FROM split WHERE position >= 0;
INSERT OR IGNORE INTO job_node_labels (job_id, key, value)
  WITH RECURSIVE split(job_id, position, item, rest) AS (
    SELECT id, -1, NULL, CAST(node_labels AS BLOB) FROM jobs WHERE node_labels <> ''
    UNION ALL
    SELECT job_id, position + 1,
           CASE WHEN instr(rest, x'1f') > 0 THEN substr(rest, 1, instr(rest, x'1f') - 1)
                ELSE rest END,
           CASE WHEN instr(rest, x'1f') > 0 THEN substr(rest, instr(rest, x'1f') + 1) END
    FROM split WHERE rest IS NOT NULL)
  SELECT job_id,
         CAST(CASE WHEN instr(item, x'3d') > 0 THEN substr(item, 1, instr(item, x'3d') - 1)
                   ELSE item END AS TEXT),
         CAST(CASE WHEN instr(item, x'3d') > 0 THEN substr(item, instr(item, x'3d') + 1)
                   ELSE x'' END AS TEXT)
  FROM split WHERE position >= 0 ORDER BY job_id, position;
ALTER TABLE jobs DROP COLUMN allowed_nodes;
ALTER TABLE jobs DROP COLUMN node_labels;
ALTER TABLE jobs ADD COLUMN submitted_by TEXT NOT NULL DEFAULT '';
)sql",
    // 9: where an external allocator (Slurm) got a job its nodes.
    R"sql(
CREATE TABLE job_allocations (
  job_id TEXT PRIMARY KEY REFERENCES jobs(id),
  system TEXT NOT NULL,
  id TEXT NOT NULL,
  state TEXT NOT NULL,
  reason TEXT NOT NULL,
  nodes TEXT NOT NULL,
  ended INTEGER NOT NULL
) WITHOUT ROWID;
)sql",
    // 10: real data through the fleet (issue 17): an imagefolder or coco job's folder on
    // the nodes and its decode threads per rank. Older jobs are synthetic: no path, and
    // 0 threads (bench-train's default).
    R"sql(
ALTER TABLE jobs ADD COLUMN data_path TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN loader_threads INTEGER NOT NULL DEFAULT 0;
)sql",
    // 11: data vs compute: the spec's switch, and each rank's synthetic throughput.
    R"sql(
ALTER TABLE jobs ADD COLUMN data_vs_compute INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rank_summaries ADD COLUMN synthetic_images_per_second REAL NOT NULL DEFAULT 0;
)sql",
    // 12: join tokens for the agents' certificate bootstrap (issue 24): the secret only as
    // its SHA-256, the uses spent counted here so that a restart neither forgets nor refunds.
    R"sql(
CREATE TABLE join_tokens (
  id TEXT PRIMARY KEY,
  secret_hash TEXT NOT NULL,
  description TEXT NOT NULL,
  uses INTEGER NOT NULL,
  used INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL,
  allow_replace INTEGER NOT NULL,
  revoked INTEGER NOT NULL
) WITHOUT ROWID;
)sql",
    // 13: what fleet screening needs of each GPU reading (issue 26): PCIe link generation and width, current and
    // maximum; the maximum clocks; the enforced power limit; ECC and XID error counts.
    // NULL: not read (an older agent, or NVML cannot give it).
    R"sql(
ALTER TABLE gpu_samples ADD COLUMN pcie_gen INTEGER;
ALTER TABLE gpu_samples ADD COLUMN pcie_gen_max INTEGER;
ALTER TABLE gpu_samples ADD COLUMN pcie_width INTEGER;
ALTER TABLE gpu_samples ADD COLUMN pcie_width_max INTEGER;
ALTER TABLE gpu_samples ADD COLUMN max_sm_clock_mhz REAL;
ALTER TABLE gpu_samples ADD COLUMN max_memory_clock_mhz REAL;
ALTER TABLE gpu_samples ADD COLUMN power_limit_w REAL;
ALTER TABLE gpu_samples ADD COLUMN ecc_corrected INTEGER;
ALTER TABLE gpu_samples ADD COLUMN ecc_uncorrected INTEGER;
ALTER TABLE gpu_samples ADD COLUMN xid_errors INTEGER;
)sql",
    // 14: the step split per iteration (issue 26, docs/trainer-events.md): nullable REAL
    // columns, NULL meaning the trainer did not write the figure (no data, never 0); rows
    // stored before have NULL in each. The `samples` view is made again with them.
    R"sql(
ALTER TABLE sample_rows ADD COLUMN compute_time_s REAL;
ALTER TABLE sample_rows ADD COLUMN forward_backward_time_s REAL;
ALTER TABLE sample_rows ADD COLUMN allreduce_wait_time_s REAL;
ALTER TABLE sample_rows ADD COLUMN optimizer_time_s REAL;
DROP VIEW samples;
CREATE VIEW samples AS
  SELECT r.job_id, r.attempt, r.rank, (s.key & 4294967295) - 2147483648 AS iteration,
         s.step_time_s, s.images, s.loss, s.data_time_s, s.elapsed_s, s.warmup,
         s.received_unix_ns, s.power_w_mean, s.sm_clock_mhz_mean, s.compute_time_s,
         s.forward_backward_time_s, s.allreduce_wait_time_s, s.optimizer_time_s
  FROM sample_series r JOIN sample_rows s
    ON s.key >= r.id << 32 AND s.key < (r.id + 1) << 32;
)sql",
    // 15: a job whose trainer said "simulated": true (bench-sim-train):
    // its figures are simulated and never enter real results. Older jobs are real.
    R"sql(
ALTER TABLE jobs ADD COLUMN simulated INTEGER NOT NULL DEFAULT 0;
)sql",
    // 16: each finished job's diagnosis (issue 26: stragglers, excess time by cause,
    // checks; server/results/job_diagnosis.h), per attempt; `result` is its JSON, NULL
    // when there is none ("no data": `note` says why). Jobs that ended before this
    // migration get such a row: they say why they have none.
    R"sql(
CREATE TABLE job_diagnoses (
  job_id TEXT NOT NULL REFERENCES jobs(id),
  attempt INTEGER NOT NULL,
  available INTEGER NOT NULL,
  note TEXT NOT NULL,
  failing_checks INTEGER NOT NULL,
  result TEXT,
  PRIMARY KEY (job_id, attempt)
) WITHOUT ROWID;
INSERT INTO job_diagnoses (job_id, attempt, available, note, failing_checks, result)
  SELECT id, attempt, 0, 'no data: the job ended before this benchd diagnosed jobs', 0, NULL
  FROM jobs WHERE state IN ('SUCCEEDED', 'FAILED') AND attempt > 0;
)sql",
    // 17: each sample series counts its stored samples and their non-finite losses, kept
    // as samples are appended, so that a restart reads every job's counts in one pass
    // over sample_series instead of counting every job's samples (issue 27). Counted here
    // once for the samples stored before (NULL is a NaN loss; 9e999 is +Inf).
    R"sql(
ALTER TABLE sample_series ADD COLUMN samples INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sample_series ADD COLUMN nonfinite_losses INTEGER NOT NULL DEFAULT 0;
UPDATE sample_series SET
  samples = (SELECT count(*) FROM sample_rows s
             WHERE s.key >= sample_series.id << 32 AND s.key < (sample_series.id + 1) << 32),
  nonfinite_losses = (SELECT count(*) FROM sample_rows s
                      WHERE s.key >= sample_series.id << 32
                        AND s.key < (sample_series.id + 1) << 32
                        AND (s.loss IS NULL OR abs(s.loss) = 9e999));
)sql",
    // 18: the variability report's per-job summaries (server/results/variability_summary.h),
    // made when the report first counts a job (issue 27): a restart reads these, not the
    // samples. Jobs that ended before are summarized when the report is next asked for.
    R"sql(
CREATE TABLE job_variability (
  job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  summary BLOB NOT NULL,
  PRIMARY KEY (job_id, attempt)
) WITHOUT ROWID;
)sql",
    // 19: iterations and GPU readings clustered by attempt, then iteration (or reading
    // seq), then rank (issue 27). Keyed by rank first, a fleet of 8,192 busy GPUs had
    // 16,384 B-tree tails growing at once, and every commit rewrote a page for each:
    // ~1.5 pages written per row at 1,024 nodes. The ranks of one job advance together,
    // so job-major keys leave one tail per running attempt. `attempt_series` names each
    // (job, attempt) by an integer; `sample_series` keeps its per-rank counts. Each
    // iteration's mean power and SM clock, known when the job ends, go in a table of
    // their own (appended then) instead of growing every iteration row in place.
    // `samples` and `gpu_samples` stay, as views with the old columns.
    R"sql(
CREATE TABLE attempt_series (
  id INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  UNIQUE (job_id, attempt)
);
INSERT INTO attempt_series (job_id, attempt)
  SELECT job_id, attempt FROM sample_series UNION SELECT job_id, attempt FROM gpu_samples
  ORDER BY 1, 2;
DROP VIEW samples;
CREATE TABLE iteration_rows (
  series INTEGER NOT NULL,
  iteration INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  step_time_s REAL NOT NULL,
  images INTEGER NOT NULL,
  loss REAL,
  data_time_s REAL NOT NULL,
  elapsed_s REAL NOT NULL,
  warmup INTEGER NOT NULL,
  received_unix_ns INTEGER NOT NULL,
  compute_time_s REAL,
  forward_backward_time_s REAL,
  allreduce_wait_time_s REAL,
  optimizer_time_s REAL,
  PRIMARY KEY (series, iteration, rank)
) WITHOUT ROWID;
CREATE TABLE iteration_means (
  series INTEGER NOT NULL,
  iteration INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  power_w_mean REAL,
  sm_clock_mhz_mean REAL,
  PRIMARY KEY (series, iteration, rank)
) WITHOUT ROWID;
INSERT INTO iteration_rows
  SELECT a.id, (s.key & 4294967295) - 2147483648, r.rank, s.step_time_s, s.images, s.loss,
         s.data_time_s, s.elapsed_s, s.warmup, s.received_unix_ns, s.compute_time_s,
         s.forward_backward_time_s, s.allreduce_wait_time_s, s.optimizer_time_s
  FROM sample_series r JOIN attempt_series a USING (job_id, attempt)
  JOIN sample_rows s ON s.key >= r.id << 32 AND s.key < (r.id + 1) << 32
  ORDER BY 1, 2, 3;
INSERT INTO iteration_means
  SELECT a.id, (s.key & 4294967295) - 2147483648, r.rank, s.power_w_mean, s.sm_clock_mhz_mean
  FROM sample_series r JOIN attempt_series a USING (job_id, attempt)
  JOIN sample_rows s ON s.key >= r.id << 32 AND s.key < (r.id + 1) << 32
  WHERE s.power_w_mean IS NOT NULL OR s.sm_clock_mhz_mean IS NOT NULL
  ORDER BY 1, 2, 3;
DROP TABLE sample_rows;
CREATE VIEW samples AS
  SELECT a.job_id, a.attempt, s.rank, s.iteration, s.step_time_s, s.images, s.loss,
         s.data_time_s, s.elapsed_s, s.warmup, s.received_unix_ns, m.power_w_mean,
         m.sm_clock_mhz_mean, s.compute_time_s, s.forward_backward_time_s,
         s.allreduce_wait_time_s, s.optimizer_time_s
  FROM attempt_series a JOIN iteration_rows s ON s.series = a.id
  LEFT JOIN iteration_means m
    ON m.series = s.series AND m.iteration = s.iteration AND m.rank = s.rank;
CREATE TABLE gpu_readings (
  series INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  gpu_uuid TEXT NOT NULL,
  gpu_index INTEGER NOT NULL,
  time_unix_ns INTEGER NOT NULL,
  power_w REAL,
  power_average_w REAL,
  energy_j REAL,
  sm_clock_mhz REAL,
  memory_clock_mhz REAL,
  temperature_c REAL,
  gpu_utilization_pct REAL,
  memory_utilization_pct REAL,
  memory_used_bytes INTEGER,
  throttle_reasons INTEGER,
  pcie_gen INTEGER,
  pcie_gen_max INTEGER,
  pcie_width INTEGER,
  pcie_width_max INTEGER,
  max_sm_clock_mhz REAL,
  max_memory_clock_mhz REAL,
  power_limit_w REAL,
  ecc_corrected INTEGER,
  ecc_uncorrected INTEGER,
  xid_errors INTEGER,
  PRIMARY KEY (series, seq, rank)
) WITHOUT ROWID;
INSERT INTO gpu_readings
  SELECT a.id, g.seq, g.rank, g.gpu_uuid, g.gpu_index, g.time_unix_ns, g.power_w,
         g.power_average_w, g.energy_j, g.sm_clock_mhz, g.memory_clock_mhz, g.temperature_c,
         g.gpu_utilization_pct, g.memory_utilization_pct, g.memory_used_bytes,
         g.throttle_reasons, g.pcie_gen, g.pcie_gen_max, g.pcie_width, g.pcie_width_max,
         g.max_sm_clock_mhz, g.max_memory_clock_mhz, g.power_limit_w, g.ecc_corrected,
         g.ecc_uncorrected, g.xid_errors
  FROM gpu_samples g JOIN attempt_series a USING (job_id, attempt)
  ORDER BY 1, 2, 3;
DROP TABLE gpu_samples;
CREATE VIEW gpu_samples AS
  SELECT a.job_id, a.attempt, g.rank, g.seq, g.gpu_uuid, g.gpu_index, g.time_unix_ns,
         g.power_w, g.power_average_w, g.energy_j, g.sm_clock_mhz, g.memory_clock_mhz,
         g.temperature_c, g.gpu_utilization_pct, g.memory_utilization_pct,
         g.memory_used_bytes, g.throttle_reasons, g.pcie_gen, g.pcie_gen_max, g.pcie_width,
         g.pcie_width_max, g.max_sm_clock_mhz, g.max_memory_clock_mhz, g.power_limit_w,
         g.ecc_corrected, g.ecc_uncorrected, g.xid_errors
  FROM attempt_series a JOIN gpu_readings g ON g.series = a.id;
)sql",
};
constexpr int kMigrationCount = sizeof(kMigrations) / sizeof(kMigrations[0]);
static_assert(kMigrationCount == Store::kSchemaVersion);

}  // namespace

absl::Status MigrateSchema(Database& db) {
  RETURN_IF_ERROR(db.Exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"));
  ASSIGN_OR_RETURN(Statement * read, db.Prepare("SELECT max(version) FROM schema_version"));
  ASSIGN_OR_RETURN(bool has_row, read->Step());
  int version = has_row && !read->IsNull(0) ? static_cast<int>(read->Int(0)) : 0;
  read->Reset();
  if (version > Store::kSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("database ", db.path(), " has schema version ", version,
                     ", newer than this benchd understands (", Store::kSchemaVersion, ")"));
  }
  for (int v = version; v < kMigrationCount; ++v) {
    RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
    absl::Status status = db.Exec(kMigrations[v]);
    if (status.ok()) {
      status = db.Exec(absl::StrCat("INSERT INTO schema_version VALUES (", v + 1, ")"));
    }
    if (!status.ok()) {
      db.Exec("ROLLBACK").IgnoreError();
      return absl::Status(status.code(), absl::StrCat("migrating ", db.path(), " to schema ", v + 1,
                                                      ": ", status.message()));
    }
    RETURN_IF_ERROR(db.Exec("COMMIT"));
  }
  return absl::OkStatus();
}

}  // namespace bench
