-- Deploy taskpool_crawler:plan_product_resync to pg
-- requires: crawler_schedules
-- requires: generate_resync_tasks
-- requires: taskpool:task_schedules_day_plan

BEGIN;
SET client_min_messages = 'warning';

-- plan_product_resync
-- The planner of a day_plan schedule of product_resync: generate_resync_tasks for the day, with the schedule's batches, time zone and priority.
CREATE FUNCTION plan_product_resync(schedule task_schedules, day date)
RETURNS integer
LANGUAGE sql
AS $$
    -- Example:
    --   UPDATE task_schedules SET kind = 'day_plan', planner = 'plan_product_resync' WHERE name = 'my_plan';
    --   SELECT trigger_schedule('daily_resync_plan');   -- the tick calls plan_product_resync(schedule, today)
    SELECT generate_resync_tasks(plan_product_resync.schedule.batches, plan_product_resync.day,
                                 plan_product_resync.schedule.time_zone, plan_product_resync.schedule.priority);
$$;

REVOKE ALL ON FUNCTION plan_product_resync(task_schedules, date) FROM PUBLIC;
COMMENT ON FUNCTION plan_product_resync(task_schedules, date) IS $$Plans a day of product_resync for a day_plan schedule: generate_resync_tasks(schedule.batches, day, schedule.time_zone, schedule.priority); returns the tasks made.
Example:
  SELECT trigger_schedule('daily_resync_plan');  -- the tick calls plan_product_resync(schedule, today in its time zone)$$;

COMMIT;
