-- Deploy taskpool:task_schedules_run_times_finite to pg
-- requires: task_schedules

BEGIN;
SET client_min_messages = 'warning';

-- task_schedules_run_times_finite
-- A schedule's run times are real times: an infinite next_run_at made the tick's cadence
-- arithmetic raise ("cannot subtract infinite timestamps") and, before the tick caught that per
-- schedule, stopped every schedule and the tick's stale recovery with it.
-- Rows written before this change are repaired first, keeping what they meant: -infinity was
-- due, so it runs at the next tick; infinity never ran, so that schedule is disabled (with
-- last_error saying why) until an operator enables it; an infinite last_run_at is no known run.
UPDATE task_schedules
SET next_run_at = taskpool_now()
WHERE next_run_at = '-infinity';
UPDATE task_schedules
SET next_run_at = taskpool_now(),
    enabled = false,
    last_error = 'next_run_at was infinity (never due): disabled by the upgrade that refuses infinite run times'
WHERE next_run_at = 'infinity';
UPDATE task_schedules
SET last_run_at = NULL
WHERE NOT isfinite(last_run_at);

ALTER TABLE task_schedules
    ADD CONSTRAINT task_schedules_run_times_finite
        CHECK (isfinite(next_run_at) AND isfinite(last_run_at));

COMMENT ON CONSTRAINT task_schedules_run_times_finite ON task_schedules IS
    'next_run_at and last_run_at are finite: the tick computes the cadence from them.';

COMMIT;
