-- Deploy taskpool:tg_worker_tasks__notify_enqueued to pg
-- requires: tg_worker_tasks__notify_enqueued@v0.2.0
-- requires: _wake_waiting_workers

BEGIN;
SET client_min_messages = 'warning';

-- tg_worker_tasks__notify_enqueued
-- Wakes one waiting worker of the role per ready task an INSERT statement added.
CREATE OR REPLACE FUNCTION tg_worker_tasks__notify_enqueued()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_ready record;
BEGIN
    -- Only workers that said they wait (task_worker_waits) are notified, each on its own channel:
    -- a busy pool pays no NOTIFY, and one task does not wake every idle worker of its role.
    -- Tasks scheduled later wake nobody; workers find them by polling. Roles in a fixed order,
    -- so that two enqueuers take the wake-up locks in the same order.
    FOR v_ready IN
        SELECT n.role, count(*) AS tasks
        FROM new_tasks n
        WHERE n.scheduled_for <= taskpool_now()
        GROUP BY n.role
        ORDER BY n.role
    LOOP
        PERFORM _wake_waiting_workers(v_ready.role, v_ready.tasks);
    END LOOP;
    RETURN NULL;
END;
$$;

COMMIT;
