-- wake_ups_deleted_worker: a worker deleted from the registry (retention's silent_workers,
-- deregister_worker) while it marks itself waiting is "not registered" (P0002, which pyworker
-- answers by registering again), never a foreign-key violation of task_worker_waits (which it
-- could only die of). Two dblink sessions: one deletes the worker in an open transaction, the
-- other marks it waiting meanwhile and waits for the delete's commit; both commit, and what they
-- committed is removed at the end.
BEGIN;
SELECT plan(4);

CREATE EXTENSION IF NOT EXISTS dblink;
SELECT dblink_connect('wdw_deleter', tests.session_conninfo('wdw_deleter'));
SELECT dblink_connect('wdw_marker', tests.session_conninfo('wdw_marker'));

SELECT dblink_exec('wdw_deleter', $$INSERT INTO task_roles (role, description) VALUES ('wdw_role', 'pgTAP deleted worker')$$);
SELECT * FROM dblink('wdw_deleter', $$SELECT count(*) FROM register_worker('wdw_worker', ARRAY['wdw_role'], 'host-a', 4242)$$) AS r(roles bigint);

SELECT dblink_exec('wdw_deleter', 'BEGIN');
SELECT dblink_exec('wdw_deleter', $$DELETE FROM task_workers WHERE worker_id = 'wdw_worker'$$);
SELECT dblink_send_query('wdw_marker', $$SELECT mark_worker_waiting('wdw_worker', 'wdw_role')$$);

-- The mark waits for the delete's transaction (on the worker's row) before it decides.
CREATE FUNCTION pg_temp.wdw_marker_waits_on_a_lock()
RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
    v_until timestamptz := clock_timestamp() + interval '10 seconds';
BEGIN
    LOOP
        IF EXISTS (SELECT FROM pg_stat_activity
                   WHERE application_name = 'wdw_marker' AND wait_event_type = 'Lock') THEN
            RETURN true;
        END IF;
        EXIT WHEN clock_timestamp() > v_until;
        PERFORM pg_sleep(0.02);
    END LOOP;
    RETURN false;
END;
$$;
SELECT ok(pg_temp.wdw_marker_waits_on_a_lock(), 'Should make the mark wait for the open delete of its worker');

SELECT dblink_exec('wdw_deleter', 'COMMIT');
SELECT is((SELECT count(*) FROM dblink_get_result('wdw_marker', false) AS r(marked boolean)), 0::bigint,
    'Should return no answer to the mark of a worker deleted meanwhile');
SELECT is(split_part(dblink_error_message('wdw_marker'), E'\n', 1), 'ERROR:  worker ''wdw_worker'' is not registered',
    'Should say the worker is not registered (P0002), not a foreign-key violation');
SELECT * FROM dblink_get_result('wdw_marker', false) AS r(marked boolean);
SELECT is((SELECT count(*) FROM dblink('wdw_marker', $$SELECT count(*) FROM task_worker_waits WHERE worker_id = 'wdw_worker'$$) AS w(marks bigint)
           WHERE marks = 0), 1::bigint, 'Should leave no mark of the deleted worker');

SELECT dblink_exec('wdw_deleter', $$DELETE FROM task_roles WHERE role = 'wdw_role'$$);
SELECT dblink_disconnect('wdw_deleter');
SELECT dblink_disconnect('wdw_marker');

SELECT * FROM finish();
ROLLBACK;
