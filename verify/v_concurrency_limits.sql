-- Verify taskpool:v_concurrency_limits on pg

BEGIN;

SELECT kind, key, max_running, running, limit_source, updated_at FROM v_concurrency_limits WHERE false;

ROLLBACK;
