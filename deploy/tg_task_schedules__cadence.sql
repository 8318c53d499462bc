-- Deploy taskpool:tg_task_schedules__cadence to pg
-- requires: task_schedules_cadence

-- tg_task_schedules__cadence's home: its live body, unchanged from task_schedules_cadence.
-- Change tg_task_schedules__cadence here, with `sqitch rework tg_task_schedules__cadence`.

BEGIN;
SET client_min_messages = 'warning';

-- tg_task_schedules__cadence
-- Keeps interval_hours and every in step: writing interval_hours (1..8760) sets every.
CREATE OR REPLACE FUNCTION tg_task_schedules__cadence()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    v_hours_written boolean := NEW.interval_hours IS NOT NULL
                               AND (TG_OP = 'INSERT' OR NEW.interval_hours IS DISTINCT FROM OLD.interval_hours);
BEGIN
    IF v_hours_written AND NEW.interval_hours NOT BETWEEN 1 AND 8760 THEN
        RETURN NEW;  -- for task_schedules_interval_hours_in_range to name
    END IF;
    IF v_hours_written AND (CASE TG_OP WHEN 'INSERT' THEN NEW.every IS NULL AND NEW.cron IS NULL
                                       ELSE NEW.every IS NOT DISTINCT FROM OLD.every END) THEN
        NEW.every := make_interval(hours => NEW.interval_hours);
        NEW.cron := NULL;
    END IF;
    NEW.interval_hours := CASE WHEN extract(epoch FROM NEW.every) % 3600 = 0
                               THEN (extract(epoch FROM NEW.every) / 3600)::integer END;
    RETURN NEW;
END;
$$;

COMMIT;
