-- Revert taskpool:enqueue_task from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the v0.5.0 body: every call a one-spec batch through _enqueue_specs.

-- enqueue_task
-- Adds one task to the pool and returns it; with a dedupe_key, returns the active task that already has it.
CREATE OR REPLACE FUNCTION enqueue_task(
    role          text,
    payload       jsonb       DEFAULT '{}',
    dispensary_id integer     DEFAULT NULL,
    priority      integer     DEFAULT 0,
    scheduled_for timestamptz DEFAULT NULL,
    dedupe_key    text        DEFAULT NULL,
    max_retries   integer     DEFAULT NULL,
    platform      text        DEFAULT NULL)
RETURNS worker_tasks
LANGUAGE sql
AS $$
    -- Example:
    --   SELECT id, status FROM enqueue_task('product_resync', '{"reason": "manual"}',
    --                                       dispensary_id := 42, priority := 10);
    -- Omitted arguments take the role's defaults (max_retries) and the store's (platform);
    -- scheduled_for defaults to now. Bad input raises, naming the value and what is allowed.
    SELECT t.*
    FROM _enqueue_specs(
        (SELECT jsonb_build_array(jsonb_object_agg(f.name, f.value))
         FROM (VALUES ('role',          to_jsonb(enqueue_task.role)),
                      ('payload',       enqueue_task.payload),
                      ('dispensary_id', to_jsonb(enqueue_task.dispensary_id)),
                      ('priority',      to_jsonb(enqueue_task.priority)),
                      ('scheduled_for', to_jsonb(enqueue_task.scheduled_for)),
                      ('dedupe_key',    to_jsonb(enqueue_task.dedupe_key)),
                      ('max_retries',   to_jsonb(enqueue_task.max_retries)),
                      ('platform',      to_jsonb(enqueue_task.platform))) AS f(name, value)
         WHERE f.value IS NOT NULL),
        NULL) AS t;
$$;

REVOKE ALL ON FUNCTION enqueue_task(text, jsonb, integer, integer, timestamptz, text, integer, text) FROM PUBLIC;

COMMIT;
