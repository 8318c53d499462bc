-- Deploy taskpool:concurrency_limits to pg
-- requires: worker_tasks
-- requires: worker_tasks_headers
-- requires: task_roles

BEGIN;
SET client_min_messages = 'warning';

-- concurrency_limits
-- Caps on how many tasks run at once per key, fleet-wide (issue 29, item 2). A task has a key of
-- each kind that applies to it: its store (dispensary_id), its platform, its role, and the key it
-- names itself in the header concurrency_key (kind key; 'proxy:NAME' is kind proxy, key NAME).
-- key '*' is the kind's default: every key of the kind without a row of its own.
CREATE TABLE concurrency_limits (
    kind        text        NOT NULL,
    key         text        NOT NULL,
    max_running integer     NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT taskpool_now(),
    PRIMARY KEY (kind, key),
    CONSTRAINT concurrency_limits_kind_known CHECK (kind IN ('store', 'platform', 'proxy', 'role', 'key')),
    CONSTRAINT concurrency_limits_key_given CHECK (length(key) BETWEEN 1 AND 200 AND btrim(key) = key),
    CONSTRAINT concurrency_limits_max_running_positive CHECK (max_running >= 1),
    -- a store runs one task at a time: worker_tasks_one_active_per_dispensary_idx enforces it
    CONSTRAINT concurrency_limits_store_one CHECK (kind <> 'store' OR max_running = 1)
);
-- Every store: 1, the store exclusion, as it always was.
INSERT INTO concurrency_limits (kind, key, max_running) VALUES ('store', '*', 1);

COMMENT ON TABLE concurrency_limits IS
    'At most max_running claimed or running tasks per (kind, key), fleet-wide; key ''*'' is the '
    'default of every key of the kind without its own row. Kinds: store (dispensary_id, always 1), '
    'platform, role, key (the header concurrency_key) and proxy (the header concurrency_key '
    '''proxy:NAME''). No row: unlimited. Change with set_concurrency_limit and clear_concurrency_limit.';

-- concurrency_slots
-- The running counts: max_running slots per capped key, each free (task_id NULL) or held by a
-- claimed or running task. A claim takes free slots (SKIP LOCKED) and each task frees only its
-- own when it stops running, so two transactions never wait on one another's counter row, and a
-- batch completing tasks of several keys cannot deadlock with another.
CREATE TABLE concurrency_slots (
    kind    text    NOT NULL,
    key     text    NOT NULL,
    slot    integer NOT NULL,
    task_id bigint,
    PRIMARY KEY (kind, key, slot)
);
CREATE UNIQUE INDEX concurrency_slots_task_idx ON concurrency_slots (task_id, kind) WHERE task_id IS NOT NULL;
-- A key's held slots, counted by the claim (its room) without reading the free ones: a key
-- capped at 1,000 with 8 running reads 8 entries, not 1,000 rows.
CREATE INDEX concurrency_slots_held_idx ON concurrency_slots (kind, key) WHERE task_id IS NOT NULL;
COMMENT ON TABLE concurrency_slots IS
    'The running count of each capped key: a row per slot, held (task_id) by a claimed or running '
    'task. Slots are made by the claim and set_concurrency_limit; recount_concurrency() repairs them.';

COMMIT;
