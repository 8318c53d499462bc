-- Deploy taskpool:worker_task_history to pg
-- requires: worker_tasks
-- requires: worker_task_attempts
-- requires: worker_tasks_parent_id_unenforced

BEGIN;
SET client_min_messages = 'warning';

-- worker_task_history
-- Finished tasks moved out of worker_tasks (move_tasks_to_history), partitioned by the UTC day
-- they finished on and then by status, so that retention drops a day of one status at once.
CREATE TABLE worker_task_history (
    id                  bigint      NOT NULL,
    role                text        NOT NULL,
    dispensary_id       integer,
    platform            text,
    status              text        NOT NULL,
    priority            integer     NOT NULL,
    scheduled_for       timestamptz NOT NULL,
    payload             jsonb       NOT NULL,
    dedupe_key          text,
    worker_id           text,
    attempt             integer     NOT NULL,
    claimed_at          timestamptz,
    started_at          timestamptz,
    last_heartbeat_at   timestamptz,
    cancel_requested_at timestamptz,
    completed_at        timestamptz NOT NULL,
    result              jsonb,
    error_message       text,
    retry_count         integer     NOT NULL,
    max_retries         integer     NOT NULL,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    claim_token         uuid,
    backoff_base        interval,
    backoff_cap         interval,
    parent_id           bigint,
    headers             jsonb,
    waited              boolean,
    dedupe_window       interval,
    spec_hash           text        NOT NULL,

    CONSTRAINT worker_task_history_finished CHECK (status IN ('completed', 'failed', 'cancelled'))
) PARTITION BY RANGE (completed_at);

COMMENT ON TABLE worker_task_history IS
    'Finished tasks, moved here from worker_tasks by move_tasks_to_history() (the tick) once they '
    'finished longer ago than task_history_settings.history_after: a partition per UTC day of '
    'completed_at, a leaf per status under it (_create_task_history_partitions). Read it with '
    'worker_tasks through the view worker_tasks_with_history; retention drops whole leaves.';
COMMENT ON COLUMN worker_task_history.spec_hash IS
    'task_spec_hash(role, dispensary_id, payload), computed when the task moved: task_spec_runs() '
    'finds the earlier runs of a spec by it.';

-- Each index is created on every leaf. By id: a task looked up by id (worker_tasks_with_history,
-- task pages, retry, delete) and the ids of the last hour (v_worker_capacity's arrivals); by
-- parent: task_chain's walk down; by spec: task_spec_runs.
CREATE INDEX worker_task_history_id_idx ON worker_task_history (id);
CREATE INDEX worker_task_history_parent_id_idx ON worker_task_history (parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX worker_task_history_spec_hash_idx ON worker_task_history (spec_hash, completed_at);
-- By finishing time: the last hours' completions (v_worker_capacity, task_throughput) and a prune
-- younger than a day.
CREATE INDEX worker_task_history_completed_at_idx ON worker_task_history (completed_at);

-- worker_task_attempt_history
-- The attempts of the tasks in worker_task_history, partitioned as their task is (by the task's
-- finishing day and status), so that a dropped leaf of tasks takes its attempts' leaf along.
CREATE TABLE worker_task_attempt_history (
    task_id           bigint      NOT NULL,
    attempt           integer     NOT NULL,
    worker_id         text        NOT NULL,
    claimed_at        timestamptz NOT NULL,
    started_at        timestamptz,
    last_heartbeat_at timestamptz,
    ended_at          timestamptz NOT NULL,
    outcome           text        NOT NULL,
    error_message     text,
    error_details     text,
    claim_token       uuid,
    error_data        jsonb,
    task_completed_at timestamptz NOT NULL,
    task_status       text        NOT NULL
) PARTITION BY RANGE (task_completed_at);

COMMENT ON TABLE worker_task_attempt_history IS
    'The attempts of the tasks in worker_task_history, moved with their task and partitioned as it is '
    '(task_completed_at, task_status).';

CREATE INDEX worker_task_attempt_history_task_idx ON worker_task_attempt_history (task_id, attempt);
-- The last hours' failed attempts (v_worker_capacity, task_throughput).
CREATE INDEX worker_task_attempt_history_ended_at_idx ON worker_task_attempt_history (ended_at);

-- task_history_counts
-- How many tasks each leaf of the history holds, per role: kept by whatever writes the history,
-- so that counts by status (v_task_counts, taskpool_metrics) never read the history's rows.
CREATE TABLE task_history_counts (
    day    date   NOT NULL,
    status text   NOT NULL,
    role   text   NOT NULL,
    tasks  bigint NOT NULL,

    PRIMARY KEY (day, status, role),
    CONSTRAINT task_history_counts_tasks_not_negative CHECK (tasks >= 0)
);

COMMENT ON TABLE task_history_counts IS
    'Tasks in worker_task_history per UTC day of completed_at, status and role: added to by '
    'move_tasks_to_history, taken from by retention and by whatever takes a task out of the history.';

COMMIT;
