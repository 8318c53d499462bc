-- Deploy taskpool:task_metric_totals to pg
-- requires: worker_tasks
-- requires: worker_task_attempts

BEGIN;
SET client_min_messages = 'warning';

-- task_metric_totals
-- The counters that must outlive the rows they count: what the tick folded in, what a prune deleted, stale recoveries.
CREATE TABLE task_metric_totals (
    role     text   NOT NULL,
    counter  text   NOT NULL,
    total    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (role, counter),

    CONSTRAINT task_metric_totals_counter_known
        CHECK (counter IN ('completed', 'attempts_retried', 'attempts_failed', 'stale_recovered', 'pruned_completed')),
    CONSTRAINT task_metric_totals_total_not_negative
        CHECK (total >= 0)
);

COMMENT ON TABLE task_metric_totals IS
    'Per role, counts that only go up. completed, attempts_retried and attempts_failed hold the '
    'completed tasks and failed attempts that finished before task_metric_watermark.folded_before, '
    'or that a prune deleted after it; the rows newer than the watermark are counted where they are '
    '(taskpool_metrics adds the two). stale_recovered: tasks recover_stale_tasks took back. '
    'pruned_completed: completed tasks prune_tasks deleted.';

-- No role references task_roles: the history of a role outlives the role.

-- task_metric_watermark
-- How far the tick has folded the finished rows into task_metric_totals.
CREATE TABLE task_metric_watermark (
    singleton      boolean     PRIMARY KEY DEFAULT true,
    folded_before  timestamptz NOT NULL DEFAULT '-infinity',

    CONSTRAINT task_metric_watermark_one_row CHECK (singleton)
);

INSERT INTO task_metric_watermark DEFAULT VALUES;

COMMENT ON TABLE task_metric_watermark IS
    'One row. Completed tasks (completed_at) and failed attempts (ended_at) before folded_before are '
    'in task_metric_totals; a scrape counts only the newer ones, through the completed_at and '
    'ended_at indexes. Moved by _fold_task_metric_totals (each tick).';

COMMIT;
