"""The history's schema as frozen SQL: migration N moves a database from version N-1 to N.

Append only. A released migration is never edited: version 1 is the exact SQL the first perfgate
produced (it derived its columns from the dataclasses of the day, which is why that approach broke
every existing history when a field was added). Later migrations add, or move data without losing any
(version 3 packs every sample into one array per case; store/migrate.py holds the two SQL functions
the migrations call, frozen like the SQL).

The schema a history must have is the one these migrations produce (store/verify.py builds it in memory
and compares): an extra or missing column, a foreign view or trigger, or a table replaced by a view is
refused before anything is read.
"""

from __future__ import annotations

SCHEMA_VERSION = 13

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

# Version 3: bounded, compact history. The samples of a case (and its reference's) become one packed
# array per (run, case): little-endian IEEE 754 float64 in measurement order (numpy.frombuffer(blob,
# "<f8")), instead of one 106-byte row per 8-byte sample. Nothing is lost: the arrays are built from
# every row, numbered 0..n-1, and a sample without its case row refuses the migration. The index on
# cases.case_id alone (covered by case_id, run_id) and the metrics index no query uses are dropped.
MIGRATION_3 = """
ALTER TABLE cases ADD COLUMN samples_f64 BLOB;
ALTER TABLE speedups ADD COLUMN reference_samples_f64 BLOB;
SELECT perfgate_refuse('run ' || s.run_id || ' has samples of case ' || quote(s.case_id) || ', which it does not store')
FROM samples s WHERE NOT EXISTS (SELECT 1 FROM cases c WHERE c.run_id = s.run_id AND c.case_id = s.case_id) LIMIT 1;
SELECT perfgate_refuse('run ' || s.run_id || ' has reference samples of case ' || quote(s.case_id) ||
                       ', which has no speedup row')
FROM reference_samples s
WHERE NOT EXISTS (SELECT 1 FROM speedups p WHERE p.run_id = s.run_id AND p.case_id = s.case_id) LIMIT 1;
UPDATE cases SET samples_f64 = coalesce(
    (SELECT perfgate_pack_f64(s.idx, s.time_ms, 'run ' || s.run_id || ' case ' || quote(s.case_id)) FROM samples s
     WHERE s.run_id = cases.run_id AND s.case_id = cases.case_id), x'');
UPDATE speedups SET reference_samples_f64 = coalesce(
    (SELECT perfgate_pack_f64(s.idx, s.time_ms, 'run ' || s.run_id || ' case ' || quote(s.case_id))
     FROM reference_samples s WHERE s.run_id = speedups.run_id AND s.case_id = speedups.case_id), x'');
DROP TABLE samples;
DROP TABLE reference_samples;
DROP INDEX idx_cases_case_id;
DROP INDEX idx_metrics_case_id_name;
"""

# Version 4: the history as data. What kind of run it was (calibration, gate, import; "ab" reserved for a
# base-vs-head mode; NULL: stored before kinds were recorded, except pytest-benchmark imports, which
# their run_uid names), whether its gate passed (NULL: not gated), each case's verdict (its most severe
# one) and every metric's verdict, and the runs nobody may prune (a change point, a reason).
MIGRATION_4 = """
ALTER TABLE runs ADD COLUMN kind TEXT;
UPDATE runs SET kind = 'import' WHERE run_uid LIKE 'pytest-benchmark-%';
ALTER TABLE runs ADD COLUMN gate_failed INTEGER;
ALTER TABLE cases ADD COLUMN verdict TEXT;
CREATE TABLE verdicts (
   run_id INTEGER NOT NULL REFERENCES runs (id),
   case_id TEXT NOT NULL,
   metric TEXT NOT NULL,
   kernel TEXT NOT NULL,
   verdict TEXT NOT NULL,
   change_pct REAL,
   threshold_pct REAL,
   PRIMARY KEY (run_id, case_id, metric, kernel)
) WITHOUT ROWID;
CREATE TABLE pinned_runs (
   run_id INTEGER PRIMARY KEY REFERENCES runs (id),
   reason TEXT NOT NULL,
   pinned_at TEXT NOT NULL
);
DROP VIEW latest_case_results;
DROP VIEW case_history;
CREATE VIEW case_history AS
SELECT r.id AS run_id, r.run_uid, r.kind, r.started_at, r.git_commit, r.git_branch, r.git_dirty, r.device_name,
       r.hostname, c.case_id, c.verdict, c.timer, c.n_samples, c.median_ms, c.q1_ms, c.q3_ms, c.min_ms, c.max_ms,
       c.gbps, c.tflops
FROM cases c JOIN runs r ON r.id = c.run_id;
CREATE VIEW latest_case_results AS
SELECT h.* FROM case_history h
WHERE h.run_id = (SELECT max(c2.run_id) FROM cases c2 JOIN runs r2 ON r2.id = c2.run_id
                  WHERE c2.case_id = h.case_id AND r2.device_name IS h.device_name);
"""

# Version 5: the machine around each case (load, CPUs, threads, CPU clock, stolen time: JSON, NULL when not
# recorded) and the peak memory each confirmation process measured (a JSON list, like the confirmation
# medians), so a memory regression is confirmed like a time regression.
MIGRATION_5 = """
ALTER TABLE cases ADD COLUMN host_state TEXT;
ALTER TABLE cases ADD COLUMN confirmation_memory TEXT;
"""

# Version 6: change points someone accepted (`perfgate history --changes --accept`): a case's noise window
# starts at the run after the step, so the processes before and after a real change are not mixed.
MIGRATION_6 = """
CREATE TABLE change_points (
   case_id TEXT NOT NULL,
   device_name TEXT NOT NULL,
   run_id INTEGER NOT NULL REFERENCES runs (id),
   change_pct REAL NOT NULL,
   accepted_at TEXT NOT NULL,
   reason TEXT NOT NULL,
   PRIMARY KEY (case_id, device_name, run_id)
) WITHOUT ROWID;
"""

# Version 7: the compiled kernels of each case (perfgate/compiled/, store/kernels.py): what the case was called
# with and what compiled it, and per kernel and launch configuration its registers, spills, shared memory,
# launch, theoretical occupancy with each limit, and its SASS hash. Standard types only (SQLite and PostgreSQL).
MIGRATION_7 = """
CREATE TABLE compiled_cases (
   run_id INTEGER NOT NULL REFERENCES runs (id),
   case_id TEXT NOT NULL,
   inputs_sha TEXT NOT NULL,
   inputs TEXT NOT NULL,
   arch TEXT NOT NULL,
   versions TEXT NOT NULL,
   notes TEXT NOT NULL,
   PRIMARY KEY (run_id, case_id)
);
CREATE TABLE kernels (
   run_id INTEGER NOT NULL REFERENCES runs (id),
   case_id TEXT NOT NULL,
   idx INTEGER NOT NULL,
   kernel_key TEXT NOT NULL,
   name TEXT NOT NULL,
   source TEXT NOT NULL,
   registers_per_thread INTEGER,
   spill_store_bytes INTEGER,
   spill_load_bytes INTEGER,
   stack_bytes_per_thread INTEGER,
   static_shared_bytes INTEGER,
   dynamic_shared_bytes INTEGER,
   num_warps INTEGER,
   num_stages INTEGER,
   block_x INTEGER,
   block_y INTEGER,
   block_z INTEGER,
   grid_x INTEGER,
   grid_y INTEGER,
   grid_z INTEGER,
   occupancy_pct REAL,
   occupancy_limiter TEXT,
   blocks_per_sm INTEGER,
   warps_per_block INTEGER,
   max_warps_per_sm INTEGER,
   by_registers INTEGER,
   by_shared_memory INTEGER,
   by_warps INTEGER,
   by_blocks INTEGER,
   sass_sha TEXT,
   launches INTEGER NOT NULL,
   detail TEXT,
   PRIMARY KEY (run_id, case_id, idx)
);
CREATE INDEX idx_kernels_case_key ON kernels (case_id, kernel_key, run_id);
"""

# Version 8: where the code each case measured came from (A/B mode's provenance, perfgate/ab/provenance.py):
# a JSON list of {role, name, path, tree, loader}; NULL or empty when not recorded.
MIGRATION_8 = """
ALTER TABLE cases ADD COLUMN code TEXT;
"""

# Version 9: the host CPU of each run (measure/machine.py): its brand string and model id (what a host
# device_name is made from), logical cores, caches and OS release (NULL: not recorded).
MIGRATION_9 = """
ALTER TABLE runs ADD COLUMN cpu_brand TEXT;
ALTER TABLE runs ADD COLUMN cpu_model TEXT;
ALTER TABLE runs ADD COLUMN cpu_cores TEXT;
ALTER TABLE runs ADD COLUMN cpu_caches TEXT;
ALTER TABLE runs ADD COLUMN os_release TEXT;
"""

# Version 10: A/B runs as A/B runs. Both sides of an A/B comparison were stored as gate runs (the base side, an
# older commit, then sat among newer gate runs in trends and change points); each side now has its own kind
# ('ab-base', 'ab-head') and both carry the identity of their pair (the head's verdicts, the base's commit). The
# runs an earlier perfgate stored are recognised by what it wrote: profile_settings 'ab: ...' and a run_uid
# '<pair>-head' / '<pair>-base'. Portable SQL (SQLite and PostgreSQL): substr, length, LIKE.
MIGRATION_10 = """
ALTER TABLE runs ADD COLUMN ab_pair TEXT;
UPDATE runs SET kind = 'ab-head', ab_pair = substr(run_uid, 1, length(run_uid) - 5)
WHERE (kind = 'gate' OR kind IS NULL) AND profile_settings LIKE 'ab: %' AND run_uid LIKE '%-head';
UPDATE runs SET kind = 'ab-base', ab_pair = substr(run_uid, 1, length(run_uid) - 5)
WHERE (kind = 'gate' OR kind IS NULL) AND profile_settings LIKE 'ab: %' AND run_uid LIKE '%-base';
CREATE INDEX idx_runs_ab_pair ON runs (ab_pair);
"""

# Version 11: each case's samples in SM cycles (measure/sm_clock.py): the median of time x the SM clock each
# sample ran at (millions of cycles), that clock's median, lowest and highest reading (MHz), how many samples had
# one, and the median cycles of each confirmation process (a JSON list); NULL where no clock was read (the host
# clock, runs stored before). Standard types only (SQLite and PostgreSQL).
MIGRATION_11 = """
ALTER TABLE cases ADD COLUMN median_mcycles REAL;
ALTER TABLE cases ADD COLUMN sm_clock_mhz REAL;
ALTER TABLE cases ADD COLUMN sm_clock_min_mhz REAL;
ALTER TABLE cases ADD COLUMN sm_clock_max_mhz REAL;
ALTER TABLE cases ADD COLUMN probed_samples INTEGER;
ALTER TABLE cases ADD COLUMN confirmation_mcycles TEXT;
"""

# Version 12: anchor runs (perfgate ab --anchor, ab/anchor.py): an A/B comparison whose base is the commit the
# baseline was calibrated at, so its ratios are each case's cumulative change since; both sides say so (1), so the
# history lists anchor runs over time. NULL: an earlier run, never an anchor run. Standard SQL (SQLite, PostgreSQL).
MIGRATION_12 = """
ALTER TABLE runs ADD COLUMN ab_anchor INTEGER;
"""

# Version 13: reads bounded whatever the history holds (a fleet's year). The gate reads each case's newest runs
# of its device model, run kind and branch: those runs are found through idx_runs_gate, newest first, without
# visiting another model's, kind's or branch's; the first run after a baseline update through
# idx_runs_started_at. Like every migration after 6, one text for SQLite and PostgreSQL (standard types and
# statements; store/server_schema.py translates the type words).
MIGRATION_13 = """
CREATE INDEX idx_runs_gate ON runs (device_name, kind, git_branch, id);
CREATE INDEX idx_runs_started_at ON runs (started_at, id);
"""

MIGRATIONS: tuple[str, ...] = (
    MIGRATION_1,
    MIGRATION_2,
    MIGRATION_3,
    MIGRATION_4,
    MIGRATION_5,
    MIGRATION_6,
    MIGRATION_7,
    MIGRATION_8,
    MIGRATION_9,
    MIGRATION_10,
    MIGRATION_11,
    MIGRATION_12,
    MIGRATION_13,
)
