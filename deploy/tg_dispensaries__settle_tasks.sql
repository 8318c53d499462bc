-- Deploy taskpool:tg_dispensaries__settle_tasks to pg
-- requires: worker_tasks_dispensary_fk_set_null

BEGIN;
SET client_min_messages = 'warning';

-- tg_dispensaries__settle_tasks
-- Ends the tasks of a store being deleted: waiting ones are cancelled saying why, running ones are asked to stop.
CREATE FUNCTION tg_dispensaries__settle_tasks()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    -- Before the foreign key clears dispensary_id, while the store's tasks can still be found.
    UPDATE worker_tasks t
    SET status = 'cancelled',
        error_message = format('store %s was deleted while the task waited', OLD.id)
    WHERE t.dispensary_id = OLD.id AND t.status = 'pending';

    -- A running attempt learns it from its next heartbeat, and ends cancelled however it ends
    -- (its handler no longer finds the store).
    UPDATE worker_tasks t
    SET cancel_requested_at = coalesce(t.cancel_requested_at, taskpool_now())
    WHERE t.dispensary_id = OLD.id AND t.status IN ('claimed', 'running');
    RETURN OLD;
END;
$$;

REVOKE ALL ON FUNCTION tg_dispensaries__settle_tasks() FROM PUBLIC;

CREATE TRIGGER _100_settle_tasks
    BEFORE DELETE ON dispensaries
    FOR EACH ROW EXECUTE FUNCTION tg_dispensaries__settle_tasks();

COMMIT;
