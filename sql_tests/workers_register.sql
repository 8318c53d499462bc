-- workers_register: register_worker hands a worker its role's settings (a worker login has no
-- access to task_roles, and needs nothing but its grants), and refuses a pid that is no process
-- id with a clear 22023.
BEGIN;
SELECT plan(14);

/****************************************************************************/
-- Structure

SELECT has_type('worker_registration', 'Should have type worker_registration');
SELECT function_returns('register_worker', ARRAY['text', 'text', 'text', 'integer'], 'worker_registration',
    'Should return the registration, settings included, from register_worker');
SELECT is_definer('register_worker', ARRAY['text', 'text', 'text', 'integer'],
    'Should keep register_worker SECURITY DEFINER');
SELECT ok(has_function_privilege('taskpool_worker', 'register_worker(text, text, text, integer)', 'execute'),
    'Should let taskpool_worker execute register_worker');

/****************************************************************************/
-- Behaviour: what a worker login gets back

INSERT INTO task_roles (role, max_retries, stale_threshold, run_timeout, requires_store)
VALUES ('t28_role', 7, interval '45 seconds', interval '90 seconds', true);
CREATE TEMP TABLE t28_shipped AS
    SELECT max_retries, stale_threshold, run_timeout, requires_store FROM task_roles WHERE role = 'analytics_refresh';
GRANT SELECT ON t28_shipped TO taskpool_worker;

SET ROLE taskpool_worker;
SELECT throws_ok($$SELECT max_retries FROM task_roles$$, '42501', NULL,
    'Should not let a worker read task_roles (what register_worker answers instead)');
SELECT results_eq(
    $$SELECT worker_id, role, host, pid, started_at, last_seen_at,
             max_retries, stale_threshold, run_timeout, requires_store
      FROM register_worker('t28-w1', 't28_role', 'host-a', 4242)$$,
    $$VALUES ('t28-w1'::text, 't28_role'::text, 'host-a'::text, 4242, now(), now(),
              7, interval '45 seconds', interval '90 seconds', true)$$,
    'Should answer a worker login with its registry row and its role''s settings');
SELECT results_eq(
    $$SELECT max_retries, stale_threshold, run_timeout, requires_store
      FROM register_worker('t28-w2', 'analytics_refresh', 'host-a', 1)$$,
    $$SELECT * FROM t28_shipped$$,
    'Should answer the settings of a shipped role as task_roles holds them');
SELECT is((SELECT length(host) FROM register_worker('t28-w3', 't28_role', repeat('h', 300), 1)), 255,
    'Should keep the first 255 characters of a longer host');

/****************************************************************************/
-- Bad input

SELECT throws_ok($$SELECT register_worker('t28-w4', 't28_role', 'h', 0)$$, '22023',
    'pid must be a positive process id, not 0', 'Should refuse pid 0 with a clear message');
SELECT throws_ok($$SELECT register_worker('t28-w4', 't28_role', 'h', -12)$$, '22023',
    'pid must be a positive process id, not -12', 'Should refuse a negative pid with a clear message');
SELECT throws_ok($$SELECT register_worker('t28-w4', 't28_role', '', 1)$$, '22023',
    'host must not be empty', 'Should refuse an empty host with a clear message');
SELECT throws_ok($$SELECT register_worker('t28-w4', 'nope', 'h', 1)$$, '22023', 'unknown role ''nope''',
    'Should still refuse an unknown role');
RESET ROLE;

SELECT is((SELECT count(*) FROM task_workers WHERE worker_id = 't28-w4'), 0::bigint,
    'Should register nothing for bad input');
SELECT is((SELECT count(*) FROM task_workers WHERE worker_id LIKE 't28-w_'), 3::bigint,
    'Should have registered the three good calls');

SELECT * FROM finish();
ROLLBACK;
