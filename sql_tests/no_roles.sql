-- no_roles: a database with no role at all (the core alone, as `pyworker schema apply`
-- leaves it): every function that names the known roles in its error's hint names the unknown
-- role, with "Known roles: none.", instead of failing with "RAISE statement option cannot be null".
BEGIN;
SELECT plan(19);

-- The core's tests run with the crawler's roles as a fixture: gone for this file.
DELETE FROM task_role_chains;
DELETE FROM task_roles;

SELECT is_empty($$SELECT role FROM task_roles$$, 'Should have no role');

-- pg_temp.error_of: the SQLSTATE, message and hint of the error a statement raises.
CREATE FUNCTION pg_temp.error_of(sql text)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    v_state   text;
    v_message text;
    v_hint    text;
BEGIN
    EXECUTE error_of.sql;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT, v_hint = PG_EXCEPTION_HINT;
    RETURN format('%s: %s (%s)', v_state, v_message, v_hint);
END;
$$;

SELECT is(pg_temp.error_of(statement), expected, 'Should name the unknown role on a database with no role: ' || statement)
FROM (VALUES
    ($$SELECT enqueue_task('store_discovery')$$,
     '22023: unknown role ''store_discovery'' (Known roles: none.)'),
    ($$SELECT enqueue_tasks('[{"role": "store_discovery"}]')$$,
     '22023: tasks[0]: unknown role ''store_discovery'' (Known roles: none.)'),
    ($$SELECT * FROM claim_task('store_discovery', 'w60')$$,
     '22023: unknown role ''store_discovery'' (Known roles: none.)'),
    ($$SELECT * FROM claim_tasks('store_discovery', 'w60', 5)$$,
     '22023: unknown role ''store_discovery'' (Known roles: none.)'),
    ($$SELECT * FROM claim_and_start_tasks('store_discovery', 'w60', 5)$$,
     '22023: unknown role ''store_discovery'' (Known roles: none.)'),
    ($$SELECT * FROM register_worker('w60', 'store_discovery', 'host', 1)$$,
     '22023: unknown role ''store_discovery'' (Known roles: none.)'),
    ($$SELECT * FROM register_worker('w60', ARRAY['store_discovery'], 'host', 1)$$,
     '22023: unknown role ''store_discovery'' (Known roles: none.)'),
    ($$SELECT * FROM register_worker('w60', ARRAY['store_discovery'], 'host', 1, 20)$$,
     '22023: unknown role ''store_discovery'' (Known roles: none.)'),
    ($$SELECT worker_capacity('store_discovery')$$,
     '22023: unknown role ''store_discovery'' (Known roles: none.)'),
    ($$SELECT task_slots_wanted('store_discovery')$$,
     '22023: unknown role ''store_discovery'' (Known roles: none.)'),
    ($$SELECT pause_role('store_discovery')$$,
     '22023: unknown role ''store_discovery'' (Known roles: none.)'),
    ($$SELECT resume_role('store_discovery')$$,
     '22023: unknown role ''store_discovery'' (Known roles: none.)'),
    ($$SELECT recover_stale_tasks_of_role('store_discovery')$$,
     '22023: unknown role ''store_discovery'' (Known roles: none.)')
) AS cases (statement, expected);

SELECT is((SELECT count(*) FROM worker_tasks), 0::bigint, 'Should have enqueued nothing');
SELECT is((SELECT count(*) FROM task_workers), 0::bigint, 'Should have registered nothing');

-- A registered worker whose roles were taken from it by hand: the hint says it serves none.
INSERT INTO task_roles (role, description, requires_store, max_retries, stale_threshold, backoff_base, backoff_cap)
VALUES ('t60_role', 'pgTAP no_roles', false, 3, '10 minutes', '30 seconds', '1 hour');
SELECT count(*) AS registered FROM register_worker('w60', ARRAY['t60_role'], 'host', 1, 1);
DELETE FROM task_worker_roles WHERE worker_id = 'w60';
SELECT is(pg_temp.error_of($$SELECT mark_worker_waiting('w60', 'store_discovery')$$),
    '22023: worker ''w60'' does not serve role ''store_discovery'' (It serves: no role.)',
    'Should say a worker serves no role rather than fail on a NULL hint');

-- Every function still reachable names a role it does not know, whatever the known ones.
SELECT is(pg_temp.error_of($$SELECT enqueue_task('store_discovery')$$),
    '22023: unknown role ''store_discovery'' (Known roles: t60_role.)',
    'Should list the known roles once there is one');

-- No RAISE of the schema builds a hint, detail or message by || on a list that can be empty
-- without coalesce: a source that does so would fail like these did.
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.pronamespace = 'public'::regnamespace
        AND p.prosrc ~ '(HINT|DETAIL) = ''[^'']*'' \|\| \(SELECT string_agg'$$,
    'Should build no error hint or detail from a string_agg that is NULL with no rows');

SELECT * FROM finish();
ROLLBACK;
