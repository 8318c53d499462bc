-- Deploy taskpool:tg_worker_tasks__notify_cancel_requested to pg
-- requires: notify_workers_of_taken_tasks

-- tg_worker_tasks__notify_cancel_requested's home: its live body, unchanged from notify_workers_of_taken_tasks.
-- Change tg_worker_tasks__notify_cancel_requested here, with `sqitch rework tg_worker_tasks__notify_cancel_requested`.

BEGIN;
SET client_min_messages = 'warning';

-- tg_worker_tasks__notify_cancel_requested
-- A claimed or running task's cancel requested (cancel_task, cancel_tasks, a store deleted): tell its worker now.
CREATE OR REPLACE FUNCTION tg_worker_tasks__notify_cancel_requested()
RETURNS trigger
LANGUAGE plpgsql
-- worker_wake_channel is the owner's and taskpool_worker's: whoever cancels reaches the worker.
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
BEGIN
    PERFORM pg_notify(worker_wake_channel(NEW.worker_id), 'abort:' || NEW.id);
    RETURN NULL;
END;
$$;

COMMIT;
