-- Deploy taskpool:task_schedules_day_plan to pg
-- requires: task_schedules
-- requires: task_schedules_run_times_finite

BEGIN;
SET client_min_messages = 'warning';

-- A schedule that plans a day names the SQL function that does the planning, so the core no
-- longer knows the crawler's product_resync plan: kind day_plan calls
-- planner(schedule task_schedules, day date) → integer, the day's tasks made.
ALTER TABLE task_schedules ADD COLUMN planner text;

-- The one resync_plan row a database deployed before the split holds is the crawler's
-- daily_resync_plan (an operator's copy is the same plan): the crawler's plan_product_resync
-- plans it the same way, and the crawler's project, deployed after the core's, adds that
-- function. A tick in between records the missing function as the schedule's last_error.
ALTER TABLE task_schedules
    DROP CONSTRAINT task_schedules_kind_known,
    DROP CONSTRAINT task_schedules_resync_plan_makes_resyncs;
UPDATE task_schedules SET kind = 'day_plan', planner = 'plan_product_resync' WHERE kind = 'resync_plan';

ALTER TABLE task_schedules
    ADD CONSTRAINT task_schedules_kind_known CHECK (kind IN ('single', 'per_store', 'day_plan')),
    ADD CONSTRAINT task_schedules_planner_only_for_day_plan CHECK ((kind = 'day_plan') = (planner IS NOT NULL)),
    -- A function name, schema-qualified or not: it is spliced into the call as an identifier.
    ADD CONSTRAINT task_schedules_planner_is_a_name
        CHECK (planner ~ '^[a-z_][a-z0-9_]{0,62}(\.[a-z_][a-z0-9_]{0,62})?$');

COMMENT ON COLUMN task_schedules.kind IS
    'single: one task of the role (payload, plus state_code when set); '
    'per_store: one task per active store (of state_code when set) that has no active task of the role; '
    'day_plan: planner(schedule, today in time_zone), at local midnight, every ceil(interval_hours / 24) days.';
COMMENT ON COLUMN task_schedules.planner IS
    'day_plan only: the function, planner(schedule task_schedules, day date) returning integer (the tasks it made), '
    'that plans a local day. The crawler''s is plan_product_resync.';

COMMIT;
