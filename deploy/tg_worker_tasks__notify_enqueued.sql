-- Deploy taskpool:tg_worker_tasks__notify_enqueued to pg
-- requires: tg_worker_tasks__notify_enqueued@v0.5.0

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
BEGIN
    -- Only workers that said they wait (task_worker_waits) are notified, each on its own channel:
    -- a busy pool pays no NOTIFY, and one task does not wake every idle worker of its role.
    -- Tasks scheduled later wake nobody; workers find them by polling. The wake-ups are only
    -- recorded here and done at commit (task_wake_requests): what _wake_waiting_workers does,
    -- for all roles in one statement rather than a call per role, each planned afresh, which
    -- cost a single-task enqueue as much as its own insert.
    INSERT INTO task_wake_requests AS r (backend_pid, role, ready)
    SELECT pg_backend_pid(), n.role, count(*)
    FROM new_tasks n
    WHERE n.scheduled_for <= taskpool_now()
    GROUP BY n.role
    ON CONFLICT ON CONSTRAINT task_wake_requests_pkey DO UPDATE SET ready = r.ready + excluded.ready;
    RETURN NULL;
END;
$$;

COMMIT;
