-- Verify taskpool:task_roles on pg

BEGIN;

SELECT role, description, max_retries, stale_threshold, backoff_base, backoff_cap,
       max_payload_bytes, requires_store, run_timeout, created_at
FROM task_roles
WHERE FALSE;

ROLLBACK;
