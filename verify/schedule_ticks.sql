-- Verify taskpool:schedule_ticks on pg

BEGIN;

SELECT 1/count(*) FROM schedule_ticks WHERE singleton;
SELECT last_tick_at, created_at FROM schedule_ticks WHERE FALSE;

ROLLBACK;
