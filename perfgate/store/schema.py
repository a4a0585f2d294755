"""The history's schema as frozen SQL: migration N moves a database from version N-1 to N.

Append only. A released migration is never edited: version 1 is the exact SQL the first perfgate
produced (it derived its columns from the dataclasses of the day, which is why that approach broke
every existing history when a field was added). Later migrations only add.
"""

from __future__ import annotations

SCHEMA_VERSION = 2

# Version 1, as written by perfgate 0.1.0 through sqlite-utils (read back from a database it created).
MIGRATION_1 = """
CREATE TABLE "runs" (
   "id" INTEGER PRIMARY KEY,
   "started_at" TEXT,
   "finished_at" TEXT,
   "git_commit" TEXT,
   "git_branch" TEXT,
   "git_dirty" INTEGER,
   "argv" TEXT,
   "profile_settings" TEXT,
   "device_kind" TEXT,
   "device_name" TEXT,
   "device_uuid" TEXT,
   "compute_capability" TEXT,
   "driver_version" TEXT,
   "cuda_version" TEXT,
   "torch_version" TEXT,
   "triton_version" TEXT,
   "python_version" TEXT,
   "perfgate_version" TEXT,
   "hostname" TEXT,
   "platform" TEXT
);
CREATE TABLE "cases" (
   "run_id" INTEGER REFERENCES "runs"("id"),
   "case_id" TEXT,
   "timer" TEXT,
   "n_samples" INTEGER,
   "median_ms" REAL,
   "mean_ms" REAL,
   "stdev_ms" REAL,
   "min_ms" REAL,
   "max_ms" REAL,
   "q1_ms" REAL,
   "q3_ms" REAL,
   "gbps" REAL,
   "tflops" REAL,
   "bytes_moved" INTEGER,
   "flops" INTEGER,
   "profile_errors" TEXT,
   PRIMARY KEY ("run_id", "case_id")
);
CREATE TABLE "samples" (
   "run_id" INTEGER REFERENCES "runs"("id"),
   "case_id" TEXT,
   "idx" INTEGER,
   "time_ms" REAL,
   PRIMARY KEY ("run_id", "case_id", "idx")
);
CREATE TABLE "metrics" (
   "run_id" INTEGER REFERENCES "runs"("id"),
   "case_id" TEXT,
   "source" TEXT,
   "kernel" TEXT,
   "name" TEXT,
   "value" REAL,
   "unit" TEXT,
   PRIMARY KEY ("run_id", "case_id", "source", "kernel", "name")
);
CREATE INDEX "idx_cases_case_id"
    ON "cases" ("case_id");
CREATE INDEX "idx_metrics_case_id_name"
    ON "metrics" ("case_id", "name");
CREATE TABLE "perfgate_meta" (
   "key" TEXT PRIMARY KEY,
   "value" TEXT
);
"""

# Version 2: run identity (merging histories), what a case was gated with (thresholds, confirmation
# runs), GPU state, autotuning, speedups, test locations, and the tests that measured nothing.
MIGRATION_2 = """
ALTER TABLE runs ADD COLUMN run_uid TEXT;
UPDATE runs SET run_uid = printf('v1-%s-%s-%d', coalesce(hostname, ''), coalesce(started_at, ''), id);
CREATE UNIQUE INDEX idx_runs_run_uid ON runs (run_uid);
CREATE INDEX idx_runs_device_name ON runs (device_name, id);
ALTER TABLE cases ADD COLUMN nodeid TEXT;
ALTER TABLE cases ADD COLUMN location_file TEXT;
ALTER TABLE cases ADD COLUMN location_line INTEGER;
ALTER TABLE cases ADD COLUMN device_uuid TEXT;
ALTER TABLE cases ADD COLUMN thresholds TEXT;
ALTER TABLE cases ADD COLUMN confirmation_medians TEXT;
ALTER TABLE cases ADD COLUMN confirmation_speedups TEXT;
ALTER TABLE cases ADD COLUMN profile_notes TEXT;
CREATE INDEX idx_cases_case_id_run_id ON cases (case_id, run_id);
CREATE TABLE gpu_state (
   run_id INTEGER REFERENCES runs (id),
   case_id TEXT,
   polls INTEGER,
   sm_clock_mhz REAL,
   sm_clock_min_mhz REAL,
   mem_clock_mhz REAL,
   temperature_max_c REAL,
   power_median_w REAL,
   power_limit_w REAL,
   throttle_reasons INTEGER,
   throttled_fraction REAL,
   clocks_locked INTEGER,
   cooldown_ms REAL,
   excluded_samples INTEGER,
   PRIMARY KEY (run_id, case_id)
);
CREATE TABLE autotune (
   run_id INTEGER REFERENCES runs (id),
   case_id TEXT,
   kernel TEXT,
   config TEXT,
   PRIMARY KEY (run_id, case_id, kernel)
);
CREATE TABLE speedups (
   run_id INTEGER REFERENCES runs (id),
   case_id TEXT,
   reference TEXT,
   median REAL,
   ci_low REAL,
   ci_high REAL,
   PRIMARY KEY (run_id, case_id)
);
CREATE TABLE reference_samples (
   run_id INTEGER REFERENCES runs (id),
   case_id TEXT,
   idx INTEGER,
   time_ms REAL,
   PRIMARY KEY (run_id, case_id, idx)
);
CREATE TABLE unmeasured_tests (
   run_id INTEGER REFERENCES runs (id),
   nodeid TEXT,
   outcome TEXT,
   reason TEXT,
   PRIMARY KEY (run_id, nodeid)
);
CREATE VIEW case_history AS
SELECT r.id AS run_id, r.run_uid, r.started_at, r.git_commit, r.git_branch, r.git_dirty, r.device_name,
       r.hostname, c.case_id, c.timer, c.n_samples, c.median_ms, c.q1_ms, c.q3_ms, c.min_ms, c.max_ms,
       c.gbps, c.tflops
FROM cases c JOIN runs r ON r.id = c.run_id;
CREATE VIEW latest_case_results AS
SELECT h.* FROM case_history h
WHERE h.run_id = (SELECT max(c2.run_id) FROM cases c2 JOIN runs r2 ON r2.id = c2.run_id
                  WHERE c2.case_id = h.case_id AND r2.device_name IS h.device_name);
"""

MIGRATIONS: tuple[str, ...] = (MIGRATION_1, MIGRATION_2)

# What this version reads and writes; a database that lacks any of these is refused on open.
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "runs": ("id", "run_uid", "started_at", "finished_at", "git_commit", "git_branch", "git_dirty", "argv",
             "profile_settings", "device_kind", "device_name", "device_uuid", "compute_capability",
             "driver_version", "cuda_version", "torch_version", "triton_version", "python_version",
             "perfgate_version", "hostname", "platform"),
    "cases": ("run_id", "case_id", "timer", "n_samples", "median_ms", "mean_ms", "stdev_ms", "min_ms", "max_ms",
              "q1_ms", "q3_ms", "gbps", "tflops", "bytes_moved", "flops", "profile_errors", "nodeid",
              "location_file", "location_line", "device_uuid", "thresholds", "confirmation_medians",
              "confirmation_speedups", "profile_notes"),
    "samples": ("run_id", "case_id", "idx", "time_ms"),
    "metrics": ("run_id", "case_id", "source", "kernel", "name", "value", "unit"),
    "gpu_state": ("run_id", "case_id", "polls", "sm_clock_mhz", "sm_clock_min_mhz", "mem_clock_mhz",
                  "temperature_max_c", "power_median_w", "power_limit_w", "throttle_reasons",
                  "throttled_fraction", "clocks_locked", "cooldown_ms", "excluded_samples"),
    "autotune": ("run_id", "case_id", "kernel", "config"),
    "speedups": ("run_id", "case_id", "reference", "median", "ci_low", "ci_high"),
    "reference_samples": ("run_id", "case_id", "idx", "time_ms"),
    "unmeasured_tests": ("run_id", "nodeid", "outcome", "reason"),
}
