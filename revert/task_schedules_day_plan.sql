-- Revert taskpool:task_schedules_day_plan from pg

BEGIN;
SET client_min_messages = 'warning';

-- Only the product_resync plan had a kind of its own before: any other day plan has no
-- equivalent, so the revert refuses rather than drop an operator's schedule.
DO $$
DECLARE
    v_names text;
BEGIN
    SELECT string_agg(name, ', ' ORDER BY name) INTO v_names
    FROM task_schedules
    WHERE kind = 'day_plan' AND NOT (planner = 'plan_product_resync' AND role = 'product_resync');
    IF v_names IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '55000',
            MESSAGE = format('cannot revert day_plan schedules: %s plan with a function other than plan_product_resync', v_names),
            HINT = 'Delete or change those schedules first.';
    END IF;
END;
$$;

ALTER TABLE task_schedules
    DROP CONSTRAINT task_schedules_kind_known,
    DROP CONSTRAINT task_schedules_planner_only_for_day_plan,
    DROP CONSTRAINT task_schedules_planner_is_a_name;
UPDATE task_schedules SET kind = 'resync_plan' WHERE kind = 'day_plan';
ALTER TABLE task_schedules DROP COLUMN planner;
ALTER TABLE task_schedules
    ADD CONSTRAINT task_schedules_kind_known CHECK (kind IN ('single', 'per_store', 'resync_plan')),
    ADD CONSTRAINT task_schedules_resync_plan_makes_resyncs CHECK (kind <> 'resync_plan' OR role = 'product_resync');

COMMENT ON COLUMN task_schedules.kind IS
    'single: one task of the role (payload, plus state_code when set); '
    'per_store: one task per active store (of state_code when set) that has no active task of the role; '
    'resync_plan: generate_resync_tasks(batches, today in time_zone).';

COMMIT;
