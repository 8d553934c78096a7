"""Append-only, named schema migrations.

Each migration is a name and a tuple of SQL statements, applied once, in order,
inside one transaction, and recorded in `schema_migrations`. Never edit or
reorder a migration that has shipped: add a new one.
"""

from __future__ import annotations

_APPEND_ONLY = (
    "CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table} "
    "BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END",
    "CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table} "
    "BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END",
)


def _append_only(table: str) -> tuple[str, ...]:
    return tuple(stmt.format(table=table) for stmt in _APPEND_ONLY)


M001_INITIAL: tuple[str, ...] = (
    """CREATE TABLE trajectories (
        id TEXT PRIMARY KEY,
        timestamp REAL NOT NULL,
        session_id TEXT NOT NULL,
        task_kind TEXT NOT NULL,
        cluster TEXT,
        tier TEXT,
        outcome TEXT NOT NULL CHECK (outcome IN ('passed', 'failed', 'unknown')),
        record TEXT NOT NULL CHECK (json_valid(record))
    )""",
    "CREATE INDEX trajectories_timestamp ON trajectories(timestamp)",
    "CREATE INDEX trajectories_session ON trajectories(session_id)",
    "CREATE INDEX trajectories_kind ON trajectories(task_kind, timestamp)",
    "CREATE INDEX trajectories_cluster ON trajectories(cluster, tier)",
    "CREATE INDEX trajectories_outcome ON trajectories(outcome)",
    *_append_only("trajectories"),
    """CREATE TABLE corrections (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        trajectory_id TEXT NOT NULL REFERENCES trajectories(id),
        timestamp REAL NOT NULL,
        outcome TEXT NOT NULL CHECK (outcome IN ('passed', 'failed', 'unknown')),
        failure_reason TEXT,
        source TEXT NOT NULL,
        authority TEXT NOT NULL CHECK (authority IN ('human', 'machine')),
        record TEXT NOT NULL CHECK (json_valid(record)),
        CHECK (NOT (outcome = 'passed' AND failure_reason IS NOT NULL))
    )""",
    "CREATE INDEX corrections_trajectory ON corrections(trajectory_id)",
    *_append_only("corrections"),
    # The correction that counts: human before machine, then the latest.
    """CREATE VIEW effective_corrections AS
        SELECT * FROM (
            SELECT c.*, ROW_NUMBER() OVER (
                PARTITION BY trajectory_id
                ORDER BY (authority = 'human') DESC, timestamp DESC, id DESC
            ) AS rank_in_trajectory
            FROM corrections c
        ) WHERE rank_in_trajectory = 1""",
    """CREATE VIEW trajectories_effective AS
        SELECT t.id, t.timestamp, t.session_id, t.task_kind, t.cluster, t.tier,
               COALESCE(c.outcome, t.outcome) AS outcome,
               t.outcome AS recorded_outcome, t.record, c.record AS correction
        FROM trajectories t LEFT JOIN effective_corrections c ON c.trajectory_id = t.id""",
    """CREATE TABLE frontier_runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        timestamp REAL NOT NULL,
        cluster TEXT NOT NULL,
        template TEXT NOT NULL,
        tier TEXT NOT NULL,
        seed INTEGER NOT NULL,
        challenge_hash TEXT NOT NULL,
        passed INTEGER NOT NULL CHECK (passed IN (0, 1)),
        attempts INTEGER NOT NULL CHECK (attempts >= 1),
        duplicate INTEGER NOT NULL CHECK (duplicate IN (0, 1)),
        compression_delta REAL NOT NULL,
        tool_errors INTEGER NOT NULL DEFAULT 0,
        score REAL NOT NULL,
        trajectory_id TEXT REFERENCES trajectories(id)
    )""",
    "CREATE INDEX frontier_runs_cluster ON frontier_runs(cluster, id)",
    "CREATE INDEX frontier_runs_hash ON frontier_runs(challenge_hash)",
    *_append_only("frontier_runs"),
)

_LESSON_COLUMNS = """
        id TEXT PRIMARY KEY,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        trigger TEXT NOT NULL,
        anti_pattern TEXT NOT NULL,
        correct_pattern TEXT NOT NULL,
        code_example TEXT NOT NULL DEFAULT '',
        domains TEXT NOT NULL CHECK (json_valid(domains)),
        confidence REAL NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
        verified INTEGER NOT NULL DEFAULT 0 CHECK (verified IN (0, 1)),
        source TEXT NOT NULL,
        source_trajectory_id TEXT NOT NULL DEFAULT '',
        challenge_hash TEXT NOT NULL DEFAULT '',
        times_shown INTEGER NOT NULL DEFAULT 0,
        times_helpful INTEGER NOT NULL DEFAULT 0,
        times_followed_by_pass INTEGER NOT NULL DEFAULT 0,
        times_followed_by_failure INTEGER NOT NULL DEFAULT 0,
        reinforcements INTEGER NOT NULL DEFAULT 0,
        embedding BLOB,
        extra TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(extra))"""

M002_LESSONS: tuple[str, ...] = (
    f"CREATE TABLE lessons ({_LESSON_COLUMNS})",
    "CREATE INDEX lessons_source_trajectory ON lessons(source_trajectory_id)",
    "CREATE INDEX lessons_challenge ON lessons(challenge_hash)",
    # External-content FTS5 index over the text a query should match (BM25).
    """CREATE VIRTUAL TABLE lessons_fts USING fts5(
        trigger, anti_pattern, correct_pattern, domains,
        content='lessons', content_rowid='rowid', tokenize='porter unicode61')""",
    """CREATE TRIGGER lessons_fts_insert AFTER INSERT ON lessons BEGIN
        INSERT INTO lessons_fts(rowid, trigger, anti_pattern, correct_pattern, domains)
        VALUES (new.rowid, new.trigger, new.anti_pattern, new.correct_pattern, new.domains);
    END""",
    """CREATE TRIGGER lessons_fts_delete AFTER DELETE ON lessons BEGIN
        INSERT INTO lessons_fts(lessons_fts, rowid, trigger, anti_pattern, correct_pattern,
                                domains)
        VALUES ('delete', old.rowid, old.trigger, old.anti_pattern, old.correct_pattern,
                old.domains);
    END""",
    """CREATE TRIGGER lessons_fts_update AFTER UPDATE OF trigger, anti_pattern,
            correct_pattern, domains ON lessons BEGIN
        INSERT INTO lessons_fts(lessons_fts, rowid, trigger, anti_pattern, correct_pattern,
                                domains)
        VALUES ('delete', old.rowid, old.trigger, old.anti_pattern, old.correct_pattern,
                old.domains);
        INSERT INTO lessons_fts(rowid, trigger, anti_pattern, correct_pattern, domains)
        VALUES (new.rowid, new.trigger, new.anti_pattern, new.correct_pattern, new.domains);
    END""",
    # Retracted lessons are archived here before deletion: nothing is lost.
    f"""CREATE TABLE lessons_archive ({_LESSON_COLUMNS.replace("PRIMARY KEY", "NOT NULL")},
        archived_at REAL NOT NULL,
        archive_reason TEXT NOT NULL)""",
    "CREATE INDEX lessons_archive_id ON lessons_archive(id)",
    *_append_only("lessons_archive"),
    # Each time lessons are shown to a task: which lessons, which trajectory.
    """CREATE TABLE lesson_exposures (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        lesson_id TEXT NOT NULL,
        trajectory_id TEXT NOT NULL,
        timestamp REAL NOT NULL,
        rank INTEGER NOT NULL,
        score REAL NOT NULL
    )""",
    "CREATE INDEX lesson_exposures_lesson ON lesson_exposures(lesson_id)",
    "CREATE INDEX lesson_exposures_trajectory ON lesson_exposures(trajectory_id)",
)

M003_REFLECTIONS: tuple[str, ...] = (
    # One row per source trajectory: the dedup record shared by reflect_one and
    # the backlog run. `in_progress` is written before the model call and
    # deleted again on error so a later pass retries.
    """CREATE TABLE reflection_claims (
        trajectory_id TEXT PRIMARY KEY REFERENCES trajectories(id),
        status TEXT NOT NULL CHECK (status IN ('in_progress', 'done', 'unparseable')),
        claimed_at REAL NOT NULL,
        finished_at REAL,
        reflection_trajectory_id TEXT,
        detail TEXT NOT NULL DEFAULT ''
    )""",
)

M004_LESSON_MEMORY: tuple[str, ...] = (
    # Which embedding model wrote `lessons.embedding`: vectors of another model
    # are re-embedded when the playbook is loaded with a different embedder.
    "ALTER TABLE lessons ADD COLUMN embedding_model TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE lessons_archive ADD COLUMN embedding_model TEXT NOT NULL DEFAULT ''",
    # The outcome that followed an exposure; set once, so `record_outcome` is
    # idempotent per trajectory.
    """ALTER TABLE lesson_exposures ADD COLUMN outcome TEXT
        CHECK (outcome IS NULL OR outcome IN ('passed', 'failed'))""",
    # A value redrawn (random()) by every change to the set of lesson vectors,
    # so an in-memory vector cache can tell cheaply that another writer changed
    # it. Random rather than +1: after a rolled-back write, a later write can
    # never land on the value a cache already saw.
    """CREATE TABLE lesson_index_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        generation INTEGER NOT NULL
    )""",
    "INSERT INTO lesson_index_state(id, generation) VALUES (1, 0)",
    """CREATE TRIGGER lessons_generation_insert AFTER INSERT ON lessons BEGIN
        UPDATE lesson_index_state SET generation = random() WHERE id = 1;
    END""",
    """CREATE TRIGGER lessons_generation_delete AFTER DELETE ON lessons BEGIN
        UPDATE lesson_index_state SET generation = random() WHERE id = 1;
    END""",
    """CREATE TRIGGER lessons_generation_update AFTER UPDATE OF embedding, embedding_model
            ON lessons BEGIN
        UPDATE lesson_index_state SET generation = random() WHERE id = 1;
    END""",
)

M005_EVAL_RUNS: tuple[str, ...] = (
    # One row per eval run; updated as the run progresses (status, counts).
    """CREATE TABLE eval_runs (
        id TEXT PRIMARY KEY,
        suite TEXT NOT NULL,
        runner TEXT NOT NULL,
        model TEXT NOT NULL,
        seed INTEGER NOT NULL,
        version TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        status TEXT NOT NULL
            CHECK (status IN ('running', 'completed', 'interrupted', 'aborted')),
        n INTEGER NOT NULL DEFAULT 0,
        passed INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        config TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(config))
    )""",
    "CREATE INDEX eval_runs_suite ON eval_runs(suite, started_at)",
    # One row per task of a run; (run_id, task_id) pairs two runs task by task.
    """CREATE TABLE eval_results (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES eval_runs(id),
        task_id TEXT NOT NULL,
        passed INTEGER NOT NULL CHECK (passed IN (0, 1)),
        score REAL NOT NULL CHECK (score >= 0 AND score <= 1),
        tokens_in INTEGER NOT NULL DEFAULT 0,
        tokens_out INTEGER NOT NULL DEFAULT 0,
        duration_s REAL NOT NULL DEFAULT 0,
        error TEXT,
        trajectory_id TEXT,
        detail TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(detail)),
        UNIQUE (run_id, task_id)
    )""",
    "CREATE INDEX eval_results_task ON eval_results(task_id)",
    *_append_only("eval_results"),
)

_SKILL_COLUMNS = (
    # What a row is: a lesson (advice) or a skill (task summary + verified code).
    "kind TEXT NOT NULL DEFAULT 'lesson' CHECK (kind IN ('lesson', 'skill'))",
    # The challenge template and tier a self-play skill came from ('' otherwise).
    "template TEXT NOT NULL DEFAULT ''",
    "tier TEXT NOT NULL DEFAULT ''",
    # sha256 of a skill's normalised code: the exact-duplicate check of learn_skill.
    "code_hash TEXT NOT NULL DEFAULT ''",
)

M006_SKILLS: tuple[str, ...] = (
    # Skills live in the lessons table, so retraction by trajectory, the archive,
    # exposure counters and verification work the same for both kinds.
    *(f"ALTER TABLE lessons ADD COLUMN {column}" for column in _SKILL_COLUMNS),
    *(f"ALTER TABLE lessons_archive ADD COLUMN {column}" for column in _SKILL_COLUMNS),
    "CREATE INDEX lessons_kind_code ON lessons(kind, code_hash)",
    "CREATE INDEX lessons_kind_template ON lessons(kind, template)",
    "CREATE INDEX lessons_archive_source_trajectory ON lessons_archive(source_trajectory_id)",
)

M007_GENERATED_CHALLENGES: tuple[str, ...] = (
    # Challenges written by the model (or mined from the journal) that passed
    # every quality gate; id is the challenge hash. `record` holds the
    # challenge's fields and the gate reports of the attempt that passed.
    """CREATE TABLE generated_challenges (
        id TEXT PRIMARY KEY,
        created_at REAL NOT NULL,
        cluster TEXT NOT NULL,
        tier TEXT NOT NULL,
        source TEXT NOT NULL CHECK (source IN ('llm', 'journal')),
        source_trajectory_id TEXT,
        model TEXT NOT NULL,
        generator_attempts INTEGER NOT NULL CHECK (generator_attempts >= 1),
        record TEXT NOT NULL CHECK (json_valid(record))
    )""",
    "CREATE INDEX generated_challenges_cluster ON generated_challenges(cluster, tier)",
    "CREATE INDEX generated_challenges_source ON generated_challenges(source_trajectory_id)",
    *_append_only("generated_challenges"),
    # Every rejected generator attempt, every unsafe journal turn, and every
    # accepted challenge later retired (challenge_id set): the named kind says
    # which gate refused it.
    """CREATE TABLE challenge_rejections (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        created_at REAL NOT NULL,
        cluster TEXT NOT NULL,
        tier TEXT NOT NULL,
        source TEXT NOT NULL CHECK (source IN ('llm', 'journal')),
        kind TEXT NOT NULL,
        detail TEXT NOT NULL DEFAULT '',
        attempt INTEGER NOT NULL DEFAULT 1,
        challenge_id TEXT,
        source_trajectory_id TEXT,
        record TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(record))
    )""",
    "CREATE INDEX challenge_rejections_kind ON challenge_rejections(kind, created_at)",
    "CREATE INDEX challenge_rejections_challenge ON challenge_rejections(challenge_id)",
    "CREATE INDEX challenge_rejections_source ON challenge_rejections(source_trajectory_id)",
    *_append_only("challenge_rejections"),
)

M008_PHASE_RUNS: tuple[str, ...] = (
    # The idle watchdog's log: a `started` row is written before a phase runs
    # and a closing row (ok / failed / interrupted / skipped) in `finally`. A
    # phase's cooldown anchor is its latest row's timestamp, so anchors survive
    # restarts and a crashing phase does not re-fire every tick.
    """CREATE TABLE phase_runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        timestamp REAL NOT NULL,
        phase TEXT NOT NULL,
        run_id TEXT NOT NULL,
        status TEXT NOT NULL
            CHECK (status IN ('started', 'ok', 'failed', 'interrupted', 'skipped')),
        detail TEXT NOT NULL DEFAULT '',
        record TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(record))
    )""",
    "CREATE INDEX phase_runs_phase ON phase_runs(phase, id)",
    *_append_only("phase_runs"),
)

M009_DIARY: tuple[str, ...] = (
    # The selfhood diary: first-person `entry` rows written after phases, and
    # `narrative` rows (the consolidated self-story). Append-only.
    """CREATE TABLE diary (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        timestamp REAL NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('entry', 'narrative')),
        phase TEXT NOT NULL DEFAULT '',
        text TEXT NOT NULL,
        record TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(record))
    )""",
    "CREATE INDEX diary_kind ON diary(kind, id)",
    *_append_only("diary"),
)

M010_STRATEGY_CHAMPIONS: tuple[str, ...] = (
    # The strategy-champion registry (`nightschool.strategies.champions`): one
    # row per change of the current champion, append-only. `promotion` registers
    # a strategy the promotion gate promoted; `rollback` re-activates an earlier
    # promotion (`restores`); `baseline` goes back to the built-in solver (no
    # champion). The current champion is the latest row's. `previous` is the
    # champion that was current when the row was written (NULL: none).
    """CREATE TABLE strategy_champions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        timestamp REAL NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('promotion', 'rollback', 'baseline')),
        name TEXT NOT NULL,
        source TEXT NOT NULL DEFAULT '',
        lineage TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(lineage)),
        verdict TEXT CHECK (verdict IS NULL OR json_valid(verdict)),
        run_id TEXT,
        restores INTEGER REFERENCES strategy_champions(id),
        previous INTEGER REFERENCES strategy_champions(id),
        note TEXT NOT NULL DEFAULT '',
        record TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(record)),
        CHECK ((kind = 'rollback') = (restores IS NOT NULL)),
        CHECK (kind != 'promotion' OR (verdict IS NOT NULL AND source != ''))
    )""",
    "CREATE INDEX strategy_champions_run ON strategy_champions(run_id)",
    *_append_only("strategy_champions"),
)

M011_PROMPTS: tuple[str, ...] = (
    # The prompt registry (`nightschool.prompts.registry`): one row per change of
    # a slot's live prompt (`solver`, `reflection`, `planning`), append-only.
    # `promotion` registers a prompt the promotion gate promoted (its text, the
    # verdict, the optimisation run, `parent` = the prompt it was optimised
    # from and measured against, NULL: the built-in one); `rollback` re-activates
    # an earlier promotion of the same slot (`restores`, its text copied);
    # `baseline` goes back to the built-in prompt. A slot's live prompt is its
    # latest row's. `previous` is the prompt live when the row was written.
    """CREATE TABLE prompts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        timestamp REAL NOT NULL,
        slot TEXT NOT NULL CHECK (slot IN ('solver', 'reflection', 'planning')),
        kind TEXT NOT NULL CHECK (kind IN ('promotion', 'rollback', 'baseline')),
        text TEXT NOT NULL DEFAULT '',
        verdict TEXT CHECK (verdict IS NULL OR json_valid(verdict)),
        run_id TEXT,
        parent INTEGER REFERENCES prompts(id),
        restores INTEGER REFERENCES prompts(id),
        previous INTEGER REFERENCES prompts(id),
        note TEXT NOT NULL DEFAULT '',
        record TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(record)),
        CHECK ((kind = 'rollback') = (restores IS NOT NULL)),
        CHECK (kind != 'promotion' OR (verdict IS NOT NULL AND text != '')),
        CHECK (kind != 'baseline' OR text = '')
    )""",
    "CREATE INDEX prompts_slot ON prompts(slot, id)",
    "CREATE INDEX prompts_run ON prompts(run_id)",
    *_append_only("prompts"),
)

M012_DASHBOARD_INDEXES: tuple[str, ...] = (
    # Covers the dashboard's overview aggregate (`server.dashboard._aggregates`):
    # counts by day, kind, cluster, tier and outcome read this index instead of
    # the JSON records (100,000 trajectories: ~5 MB scanned instead of ~200 MB,
    # GROUP BY 145 ms -> 72 ms warm, measured by `bench/bench_dashboard.py`).
    "CREATE INDEX trajectories_dashboard ON trajectories(task_kind, cluster, tier, outcome, "
    "timestamp)",
)

M013_HARMFUL: tuple[str, ...] = (
    # Paired outcomes where a playbook entry hurt (failed with it, solved without
    # it); `times_helpful` counts the reverse. Retrieval never shows an entry
    # whose harmful count exceeds its helpful count.
    "ALTER TABLE lessons ADD COLUMN times_harmful INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE lessons_archive ADD COLUMN times_harmful INTEGER NOT NULL DEFAULT 0",
)

M014_VERIFICATION_QUEUE: tuple[str, ...] = (
    # Lesson candidates waiting for their comparison under a dream's verification
    # budget (`nightschool.dream.queue`): a row is written when a candidate waits and
    # deleted when its comparison finishes, so a dream that ends or is stopped loses
    # none; the next run starts with them. Not the playbook: these are never shown.
    """CREATE TABLE pending_lessons (
        id TEXT PRIMARY KEY,
        created_at REAL NOT NULL,
        template TEXT NOT NULL,
        tier TEXT NOT NULL,
        seed INTEGER NOT NULL,
        passed INTEGER NOT NULL CHECK (passed IN (0, 1)),
        attempts INTEGER NOT NULL,
        trajectory_id TEXT NOT NULL,
        candidate TEXT NOT NULL CHECK (json_valid(candidate))
    )""",
    "CREATE INDEX pending_lessons_created ON pending_lessons(created_at)",
    # The verification budget's ledger (`nightschool.dream.budget`): after each
    # budgeted cycle, the seconds of dreaming since the previous row and, of those,
    # the seconds of comparisons. A run's budget counts the last day's rows, so
    # short runs share one budget. Append-only.
    """CREATE TABLE verification_ledger (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        ended_at REAL NOT NULL,
        session_id TEXT NOT NULL,
        elapsed_s REAL NOT NULL CHECK (elapsed_s >= 0),
        verification_s REAL NOT NULL CHECK (verification_s >= 0),
        comparisons INTEGER NOT NULL CHECK (comparisons >= 0)
    )""",
    "CREATE INDEX verification_ledger_ended ON verification_ledger(ended_at)",
    *_append_only("verification_ledger"),
)

MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("m001_initial", M001_INITIAL),
    ("m002_lessons", M002_LESSONS),
    ("m003_reflections", M003_REFLECTIONS),
    ("m004_lesson_memory", M004_LESSON_MEMORY),
    ("m005_eval_runs", M005_EVAL_RUNS),
    ("m006_skills", M006_SKILLS),
    ("m007_generated_challenges", M007_GENERATED_CHALLENGES),
    ("m008_phase_runs", M008_PHASE_RUNS),
    ("m009_diary", M009_DIARY),
    ("m010_strategy_champions", M010_STRATEGY_CHAMPIONS),
    ("m011_prompts", M011_PROMPTS),
    ("m012_dashboard_indexes", M012_DASHBOARD_INDEXES),
    ("m013_harmful", M013_HARMFUL),
    ("m014_verification_queue", M014_VERIFICATION_QUEUE),
)
"""All migrations this version knows, oldest first."""
