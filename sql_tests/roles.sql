-- roles: create_role, update_role, remove_role and diff_role, the functions
-- `pyworker roles sync` applies the handlers' declarations through. A role made with the
-- settings given and the table's defaults for the rest; an update that changes only what it is
-- given; a diff that names each declared setting that differs; a removal refused while the role
-- has live tasks or live workers, unless forced. Each bad value raises naming its field and
-- changes nothing. The operator (the owner) calls them; the workers' login only diff_role.
BEGIN;
SELECT plan(57);

/****************************************************************************/
-- structure

SELECT has_function('public', 'create_role',
    ARRAY['text', 'text', 'integer', 'interval', 'interval', 'interval', 'interval', 'numeric', 'text', 'integer', 'boolean'],
    'Should have create_role(role, description, max_retries, stale_threshold, run_timeout, backoff_base, backoff_cap, backoff_multiplier, backoff_jitter, max_payload_bytes, requires_store)');
SELECT has_function('public', 'update_role',
    ARRAY['text', 'text', 'integer', 'interval', 'interval', 'interval', 'interval', 'numeric', 'text', 'integer', 'boolean'],
    'Should have update_role with the same arguments');
SELECT has_function('public', 'diff_role',
    ARRAY['text', 'text', 'integer', 'interval', 'interval', 'interval', 'interval', 'numeric', 'text', 'integer', 'boolean'],
    'Should have diff_role with the same arguments');
SELECT has_function('public', 'remove_role', ARRAY['text', 'boolean'], 'Should have remove_role(role, force)');
SELECT function_returns('public', 'create_role',
    ARRAY['text', 'text', 'integer', 'interval', 'interval', 'interval', 'interval', 'numeric', 'text', 'integer', 'boolean'],
    'task_roles', 'create_role should return the role''s row');
SELECT volatility_is('public', 'diff_role',
    ARRAY['text', 'text', 'integer', 'interval', 'interval', 'interval', 'interval', 'numeric', 'text', 'integer', 'boolean'],
    'stable', 'diff_role should change nothing (STABLE)');

/****************************************************************************/
-- create_role: the settings given, the defaults for the rest

SELECT is((SELECT ROW(r.role, r.description, r.max_retries, r.stale_threshold, r.run_timeout, r.backoff_base,
                      r.backoff_cap, r.backoff_multiplier, r.backoff_jitter, r.max_payload_bytes, r.requires_store)
           FROM create_role('t63_welcome', max_retries := 5, stale_threshold := '5 min', run_timeout := '1 min',
                            backoff_jitter := 'none') r),
          ROW('t63_welcome'::text, ''::text, 5, interval '5 minutes', interval '1 minute', interval '30 seconds',
              interval '1 hour', 2::numeric, 'none'::text, 65536, false),
          'create_role should give the role the settings named and the table''s defaults for the others');
SELECT is((SELECT ROW(r.description, r.requires_store, r.backoff_base, r.backoff_cap, r.backoff_multiplier, r.max_payload_bytes)
           FROM create_role('t63_store', description := 'per store', requires_store := true, backoff_base := '1 min',
                            backoff_cap := '2 hours', backoff_multiplier := 3, max_payload_bytes := 1024) r),
          ROW('per store'::text, true, interval '1 minute', interval '2 hours', 3::numeric, 1024),
          'create_role should take every setting');
SELECT ok(EXISTS (SELECT FROM task_roles WHERE role = 't63_welcome' AND max_retries = 5),
          'create_role should write the row');
SELECT ok((SELECT t.max_retries = 5 FROM enqueue_task('t63_welcome') t),
          'A task of a created role should take its max_retries');

SELECT tests.rejects($$SELECT create_role('t63_welcome')$$, '23505', 'role ''t63_welcome'' already exists',
                     'a role that exists', '{task_roles}');
SELECT tests.rejects($$SELECT create_role('T63 bad')$$, '22023', 'role ''T63 bad'' is not a role name',
                     'a name that is not a role name', '{task_roles}');
SELECT tests.rejects($$SELECT create_role(NULL)$$, '22004', 'role is required', 'no role', '{task_roles}');
SELECT tests.rejects($$SELECT create_role('t63_bad', max_retries := -1)$$, '22023',
                     'max_retries must be 0 to 1000, not -1', 'a negative max_retries', '{task_roles}');
SELECT tests.rejects($$SELECT create_role('t63_bad', stale_threshold := '2 years')$$, '22023',
                     'stale_threshold must be more than 0 and at most 1 year, not 2 years',
                     'a stale_threshold past a year', '{task_roles}');
SELECT tests.rejects($$SELECT create_role('t63_bad', run_timeout := '0 s')$$, '22023',
                     'run_timeout must be more than 0, not 00:00:00', 'a run_timeout of 0', '{task_roles}');
SELECT tests.rejects($$SELECT create_role('t63_bad', backoff_cap := '1 s')$$, '22023',
                     'backoff_cap must be at least backoff_base (00:00:30), not 00:00:01',
                     'a backoff_cap below the default backoff_base', '{task_roles}');
SELECT tests.rejects($$SELECT create_role('t63_bad', backoff_multiplier := 11)$$, '22023',
                     'backoff_multiplier must be 1 to 10, not 11', 'a backoff_multiplier of 11', '{task_roles}');
SELECT tests.rejects($$SELECT create_role('t63_bad', backoff_jitter := 'some')$$, '22023',
                     'backoff_jitter must be full, equal or none, not ''some''', 'an unknown jitter', '{task_roles}');
SELECT tests.rejects($$SELECT create_role('t63_bad', max_payload_bytes := 0)$$, '22023',
                     'max_payload_bytes must be more than 0, not 0', 'a max_payload_bytes of 0', '{task_roles}');

/****************************************************************************/
-- update_role: what is given changes, the rest stays

SELECT is((SELECT ROW(r.max_retries, r.run_timeout, r.stale_threshold, r.backoff_jitter)
           FROM update_role('t63_welcome', max_retries := 7, run_timeout := '2 min') r),
          ROW(7, interval '2 minutes', interval '5 minutes', 'none'::text),
          'update_role should change the settings given and keep the others');
SELECT is((SELECT max_retries FROM task_roles WHERE role = 't63_welcome'), 7, 'update_role should write the row');
SELECT tests.rejects($$SELECT update_role('t63_nope', max_retries := 1)$$, '22023', 'unknown role ''t63_nope''',
                     'an unknown role', '{task_roles}');
SELECT tests.rejects($$SELECT update_role('t63_welcome', backoff_base := '2 hours')$$, '22023',
                     'backoff_cap must be at least backoff_base (02:00:00), not 01:00:00',
                     'a backoff_base above the role''s backoff_cap', '{task_roles}');

/****************************************************************************/
-- diff_role: each declared setting that differs, none when they agree

SELECT results_eq(
    $$SELECT field, in_database, declared
      FROM diff_role('t63_welcome', max_retries := 5, stale_threshold := '300 seconds', run_timeout := '1 min',
                     requires_store := false)$$,
    $$VALUES ('max_retries', '7', '5'), ('run_timeout', '00:02:00', '00:01:00')$$,
    'diff_role should list the settings that differ, in argument order, intervals compared as intervals');
SELECT is_empty($$SELECT * FROM diff_role('t63_welcome')$$,
    'diff_role should compare nothing that is not given');
SELECT is_empty($$SELECT * FROM diff_role('t63_welcome', max_retries := 7, stale_threshold := '5 min')$$,
    'diff_role should list nothing when the settings given agree');
SELECT results_eq($$SELECT field, in_database, declared FROM diff_role('t63_store', description := 'other')$$,
    $$VALUES ('description', 'per store', 'other')$$, 'diff_role should compare the description');
SELECT throws_ok($$SELECT * FROM diff_role('t63_nope')$$, 'P0002', 'unknown role ''t63_nope''',
    'diff_role should raise P0002 for a role that does not exist, which a worker tells from a bad value');

/****************************************************************************/
-- remove_role: refused while live tasks or workers hold it, unless forced

SELECT tests.rejects($$SELECT remove_role('t63_welcome')$$, '55000',
                     'role ''t63_welcome'' has 1 live tasks and 0 live workers',
                     'removing a role with a pending task', '{task_roles,worker_tasks}');
SELECT register_worker('t63-w1', ARRAY['t63_store'], 'host', 1, 1);
SELECT tests.rejects($$SELECT remove_role('t63_store')$$, '55000',
                     'role ''t63_store'' has 0 live tasks and 1 live workers (t63-w1)',
                     'removing a role a live worker serves', '{task_roles,task_workers}');
SELECT tests.rejects($$SELECT remove_role('t63_nope')$$, '22023', 'unknown role ''t63_nope''',
                     'removing an unknown role', '{task_roles}');

SELECT is((SELECT role FROM remove_role('t63_welcome', force := true)), 't63_welcome',
          'remove_role with force should remove a role with live tasks, returning its row');
SELECT ok(NOT EXISTS (SELECT FROM task_roles WHERE role = 't63_welcome')
          AND NOT EXISTS (SELECT FROM worker_tasks WHERE role = 't63_welcome'),
          'remove_role should take the role''s tasks with it');

-- a silent worker does not hold the role: its registration goes with it
UPDATE task_workers SET last_seen_at = taskpool_now() - interval '1 day' WHERE worker_id = 't63-w1';
SELECT create_schedule('t63_hourly', 't63_store', every := '1 hour');
SELECT is((SELECT role FROM remove_role('t63_store')), 't63_store',
          'remove_role should remove a role whose only worker is silent');
SELECT ok(NOT EXISTS (SELECT FROM task_workers WHERE worker_id = 't63-w1')
          AND NOT EXISTS (SELECT FROM task_schedules WHERE name = 't63_hourly'),
          'remove_role should take the silent worker''s registration and the role''s schedules with it');

/****************************************************************************/
-- privileges: the operator's functions, diff_role the workers' too

SELECT function_privs_are('public', 'diff_role',
    ARRAY['text', 'text', 'integer', 'interval', 'interval', 'interval', 'interval', 'numeric', 'text', 'integer', 'boolean'],
    'taskpool_worker', ARRAY['EXECUTE'], 'Should let taskpool_worker execute diff_role');
SELECT ok(NOT has_function_privilege('taskpool_worker',
              'create_role(text, text, integer, interval, interval, interval, interval, numeric, text, integer, boolean)', 'EXECUTE')
          AND NOT has_function_privilege('taskpool_worker',
              'update_role(text, text, integer, interval, interval, interval, interval, numeric, text, integer, boolean)', 'EXECUTE')
          AND NOT has_function_privilege('taskpool_worker', 'remove_role(text, boolean)', 'EXECUTE'),
          'Should not let taskpool_worker execute create_role, update_role or remove_role');

SELECT create_role('t63_private');
SET LOCAL ROLE taskpool_worker;
SELECT throws_ok($$SELECT create_role('t63_by_worker')$$, '42501', NULL, 'A worker login should not create a role');
SELECT throws_ok($$SELECT update_role('t63_private', max_retries := 9)$$, '42501', NULL,
    'A worker login should not update a role');
SELECT throws_ok($$SELECT remove_role('t63_private')$$, '42501', NULL, 'A worker login should not remove a role');
SELECT results_eq($$SELECT field, in_database, declared FROM diff_role('t63_private', max_retries := 9)$$,
    $$VALUES ('max_retries', '3', '9')$$, 'A worker login should compare its declaration with diff_role');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
