-- Verify taskpool:resync_plan_entries on pg

BEGIN;

SELECT day, dispensary_id, task_id, slot, scheduled_for FROM resync_plan_entries WHERE FALSE;

ROLLBACK;
