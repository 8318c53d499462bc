-- Verify taskpool:task_spec on pg

BEGIN;

SELECT (NULL::task_spec).role, (NULL::task_spec).payload, (NULL::task_spec).dispensary_id,
       (NULL::task_spec).priority, (NULL::task_spec).scheduled_for, (NULL::task_spec).dedupe_key,
       (NULL::task_spec).max_retries, (NULL::task_spec).platform, (NULL::task_spec).headers,
       (NULL::task_spec).backoff_base, (NULL::task_spec).backoff_cap, (NULL::task_spec).dedupe_window,
       (NULL::task_spec).dedupe_by_content;

ROLLBACK;
