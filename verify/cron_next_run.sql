-- Verify taskpool:cron_next_run on pg

BEGIN;

SELECT 1 / (cron_next_run('*/15 * * * *', '2026-01-01 00:07+00', 'UTC') = '2026-01-01 00:15+00')::integer;

ROLLBACK;
