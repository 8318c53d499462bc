-- Deploy taskpool:task_spec to pg
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- task_spec
-- One task to enqueue, typed: what enqueue_specs takes, an array at a time. Every field may be
-- NULL but role; NULL takes the default (payload {}, priority 0, scheduled_for now, max_retries
-- and backoff the role's, platform the store's). backoff_base, backoff_cap and dedupe_window
-- are intervals here; the JSON specs of enqueue_tasks give the backoffs in seconds.
CREATE TYPE task_spec AS (
    role              text,
    payload           jsonb,
    dispensary_id     integer,
    priority          integer,
    scheduled_for     timestamptz,
    dedupe_key        text,
    max_retries       integer,
    platform          text,
    headers           jsonb,
    backoff_base      interval,
    backoff_cap       interval,
    dedupe_window     interval,
    dedupe_by_content boolean
);

COMMENT ON TYPE task_spec IS $$One task to enqueue, typed, as enqueue_specs takes it: role, payload, dispensary_id, priority, scheduled_for, dedupe_key, max_retries, platform, headers, backoff_base, backoff_cap, dedupe_window, dedupe_by_content; NULL takes the default.
Example:
  SELECT id FROM enqueue_specs(ARRAY[ROW('product_resync', '{}', 42, 5, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)::task_spec]);$$;

COMMIT;
