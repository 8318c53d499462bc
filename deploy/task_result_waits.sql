-- Deploy taskpool:task_result_waits to pg
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- task_result_waits
-- Who waits for which task to finish: one row per task and waiting session (its backend pid),
-- entered by register_task_waits, left by unregister_task_waits, and taken out when the task
-- finishes, by the AFTER trigger that notifies the waiter (tg_worker_tasks__after_status_change).
--
-- A completion notifies only the sessions here. NOTIFY takes a database-wide lock at commit that
-- serializes every notifying transaction's commit, so a completion that nobody waits for must
-- not notify at all, and must not even look here: worker_tasks.waited, set by the first
-- registration for a task, lets the trigger's WHEN clause pass completions of tasks nobody ever
-- waited for without calling anything.
--
-- No foreign key to worker_tasks: it would add a cascade to every pruned task. A row whose task
-- is gone is never notified; rows of sessions that ended are pruned by register_task_waits.
CREATE TABLE task_result_waits (
    task_id       bigint      NOT NULL,
    backend_pid   integer     NOT NULL,
    registered_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_id, backend_pid)
);

COMMENT ON TABLE task_result_waits IS
    'Sessions waiting for a task to finish (register_task_waits): a finish notifies exactly these, on '
    'task_wait_channel() of each backend, and removes their rows.';

CREATE INDEX task_result_waits_backend_pid_idx ON task_result_waits (backend_pid);
COMMENT ON INDEX task_result_waits_backend_pid_idx IS
    'A session''s own waits (unregister_task_waits) and the pruning of ended sessions.';

-- worker_tasks.waited: someone registered a wait for this task. Sticky (no one clears it); a
-- finish of a task with waited looks up task_result_waits, one without it does nothing more.
ALTER TABLE worker_tasks ADD COLUMN waited boolean;
COMMENT ON COLUMN worker_tasks.waited IS
    'true once a session has waited for the task (register_task_waits): only then does its finish look '
    'up task_result_waits to notify the waiters. Never cleared; NULL for tasks nobody waited for.';

COMMIT;
