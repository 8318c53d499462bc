-- Verify taskpool:v_waiting_tasks on pg

BEGIN;

SELECT id, role, status, dispensary_id, platform, worker_id, attempt, retry_count, max_retries,
       waiting_for, ready_at, error_message
FROM v_waiting_tasks
WHERE FALSE;
-- a paused role's and a disabled platform's tasks are told apart
SELECT 1/COUNT(*) FROM pg_catalog.pg_views
WHERE schemaname = 'public' AND viewname = 'v_waiting_tasks'
  AND definition LIKE '%''paused''%' AND definition LIKE '%''disabled''%'
  AND definition LIKE '%''rate_limit''%';

ROLLBACK;
