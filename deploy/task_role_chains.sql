-- Deploy taskpool:task_role_chains to pg
-- requires: task_roles

BEGIN;
SET client_min_messages = 'warning';

-- task_role_chains
-- Which role's completion queues which follow-up, from which field of its result (chaining as data).
CREATE TABLE task_role_chains (
    from_role      text    NOT NULL REFERENCES task_roles (role) ON DELETE CASCADE,
    to_role        text    NOT NULL REFERENCES task_roles (role) ON DELETE CASCADE,
    result_key     text    NOT NULL,
    per_store_ids  boolean NOT NULL DEFAULT false,
    PRIMARY KEY (from_role, to_role),

    CONSTRAINT task_role_chains_result_key_not_blank CHECK (btrim(result_key) <> '')
);

COMMENT ON TABLE task_role_chains IS
    'When a task of from_role completes with result_key in its result, tasks of to_role are '
    'queued in the completing transaction (tg_worker_tasks__chain_follow_ups).';
COMMENT ON COLUMN task_role_chains.per_store_ids IS
    'true: result->result_key is an array of store ids, one to_role task per store. '
    'false: one to_role task for the same store, with payload {result_key: the value}.';

COMMIT;
