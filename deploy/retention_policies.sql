-- Deploy taskpool:retention_policies to pg
-- requires: worker_tasks
-- requires: taskpool_now

BEGIN;
SET client_min_messages = 'warning';

-- retention_policies
-- What the pool keeps and for how long: one row per kind of row that retention deletes.
CREATE TABLE retention_policies (
    name          text        PRIMARY KEY,
    pruner        text        NOT NULL,
    keep          interval    NOT NULL,
    statuses      text[],
    enabled       boolean     NOT NULL DEFAULT true,
    batch_size    integer     NOT NULL DEFAULT 1000,
    description   text        NOT NULL,
    last_run_at   timestamptz,
    last_pruned   bigint      NOT NULL DEFAULT 0,
    pruned_total  bigint      NOT NULL DEFAULT 0,
    last_error    text,

    CONSTRAINT retention_policies_name_format CHECK (name ~ '^[a-z][a-z0-9_]{0,62}$'),
    CONSTRAINT retention_policies_pruner_format CHECK (pruner ~ '^[A-Za-z_][A-Za-z0-9_]{0,62}$'),
    CONSTRAINT retention_policies_keep_positive CHECK (keep > interval '0'),
    CONSTRAINT retention_policies_keep_at_most_a_century CHECK (keep <= interval '100 years'),
    CONSTRAINT retention_policies_statuses_finished
        CHECK (statuses IS NULL OR (cardinality(statuses) > 0
                                    AND statuses <@ ARRAY['completed', 'failed', 'cancelled'])),
    CONSTRAINT retention_policies_batch_size_in_range CHECK (batch_size BETWEEN 1 AND 100000)
);

COMMENT ON TABLE retention_policies IS
    'Retention as data: what goes after how long. apply_retention() (each tick, a batch per policy) '
    'calls each enabled policy''s pruner; set_retention_policy() changes one; count_retention() is the dry run.';
COMMENT ON COLUMN retention_policies.pruner IS
    'A function pruner(policy retention_policies, max_rows integer, dry_run boolean) returning bigint: '
    'deletes up to max_rows rows older than policy.keep and says how many; with dry_run, counts '
    'every row it would delete and deletes nothing. Another project adds its policies by naming its own.';
COMMENT ON COLUMN retention_policies.keep IS 'How long a row is kept (by the age its pruner reads: a task''s completed_at, ...).';
COMMENT ON COLUMN retention_policies.statuses IS
    'For the task policies: which finished statuses the policy prunes; NULL for the others.';
COMMENT ON COLUMN retention_policies.batch_size IS
    'The most rows one batch deletes, in one statement: what the tick deletes per policy each minute.';
COMMENT ON COLUMN retention_policies.last_pruned IS 'How many rows the last apply_retention call deleted.';
COMMENT ON COLUMN retention_policies.pruned_total IS 'How many rows the policy has deleted since it was created.';
COMMENT ON COLUMN retention_policies.last_error IS 'Why the last run failed; NULL when it did not.';

INSERT INTO retention_policies (name, pruner, keep, statuses, batch_size, description) VALUES
    ('completed_tasks', '_prune_policy_tasks', interval '7 days', ARRAY['completed'], 1000,
     'completed tasks, by completed_at, with their attempt history'),
    ('failed_tasks', '_prune_policy_tasks', interval '30 days', ARRAY['failed', 'cancelled'], 1000,
     'failed and cancelled tasks, by completed_at, with their attempt history'),
    ('task_attempts', '_prune_policy_attempts', interval '30 days', NULL, 1000,
     'attempts of tasks still kept (a task retried for weeks), by ended_at'),
    ('silent_workers', '_prune_policy_workers', interval '7 days', NULL, 1000,
     'registry rows of workers not heard from (no heartbeat), by last_seen_at');

COMMIT;
