-- Verify taskpool:worker_registration on pg

BEGIN;

SELECT (r).worker_id, (r).role, (r).host, (r).pid, (r).started_at, (r).last_seen_at,
       (r).max_retries, (r).stale_threshold, (r).run_timeout, (r).requires_store
FROM (SELECT NULL::worker_registration AS r) s
WHERE false;

ROLLBACK;
