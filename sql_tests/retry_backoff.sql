-- retry_backoff: retries as peers do them. A role's retry delay grows by its backoff_multiplier
-- up to backoff_cap and is spread by its backoff_jitter (full by default, equal, none); a task may
-- carry its own backoff_base and backoff_cap (enqueue_task, enqueue_tasks), which fail_task uses.
-- Bad settings and bad enqueue arguments are refused, naming the value, and change nothing.
BEGIN;
SELECT plan(41);

-- t55_none: deterministic, tripling from 10 s up to 5 minutes. t55_full and t55_equal: 100 s
-- capped at 1000 s, doubling, with full and equal jitter. t55_flat: multiplier 1.
INSERT INTO task_roles (role, description, max_retries, backoff_base, backoff_cap, backoff_multiplier, backoff_jitter)
VALUES ('t55_none',  'pgTAP retry_backoff: no jitter',     5, '10 seconds',  '5 minutes',   3, 'none'),
       ('t55_equal', 'pgTAP retry_backoff: equal jitter',  5, '100 seconds', '1000 seconds', 2, 'equal'),
       ('t55_flat',  'pgTAP retry_backoff: multiplier 1',  5, '7 seconds',   '1 hour',       1, 'none');
-- A role given no backoff settings: the defaults.
INSERT INTO task_roles (role, description, max_retries, backoff_base, backoff_cap)
VALUES ('t55_full', 'pgTAP retry_backoff: the default jitter', 5, '100 seconds', '1000 seconds');

/****************************************************************************/
-- Structure and defaults

SELECT col_default_is('task_roles', 'backoff_multiplier', '2'::text, 'Should default task_roles.backoff_multiplier to 2');
SELECT col_default_is('task_roles', 'backoff_jitter', 'full'::text, 'Should default task_roles.backoff_jitter to full');
SELECT col_type_is('worker_tasks', 'backoff_base', 'interval', 'Should type worker_tasks.backoff_base as interval');
SELECT col_type_is('worker_tasks', 'backoff_cap', 'interval', 'Should type worker_tasks.backoff_cap as interval');
SELECT is((SELECT backoff_jitter || ' ' || backoff_multiplier FROM task_roles WHERE role = 't55_full'), 'full 2',
    'Should give a role inserted without backoff settings full jitter and a multiplier of 2');

/****************************************************************************/
-- _retry_delay: the capped exponential delay, spread by the role's jitter

SELECT results_eq(
    $$SELECT n, _retry_delay('t55_none', n)
      FROM unnest(ARRAY[0, 1, 2, 3, 50, 2147483647]) AS n ORDER BY n$$,
    $$VALUES (0, interval '10 seconds'), (1, interval '30 seconds'), (2, interval '90 seconds'),
             (3, interval '4 minutes 30 seconds'), (50, interval '5 minutes'), (2147483647, interval '5 minutes')$$,
    'Should multiply backoff_base by backoff_multiplier per retry and stop at backoff_cap, without jitter or overflow');
SELECT results_eq(
    $$SELECT n, _retry_delay('t55_flat', n) FROM unnest(ARRAY[0, 1, 10]) AS n ORDER BY n$$,
    $$VALUES (0, interval '7 seconds'), (1, interval '7 seconds'), (10, interval '7 seconds')$$,
    'Should wait backoff_base every time with a multiplier of 1');

-- 200 draws of the delay before the second retry (capped: 200 s) and of one past the cap (1000 s).
CREATE TEMP TABLE draws AS
SELECT r.role, n, extract(epoch FROM _retry_delay(r.role, n)) AS seconds
FROM unnest(ARRAY['t55_full', 't55_equal']) AS r(role)
CROSS JOIN unnest(ARRAY[1, 20]) AS n
CROSS JOIN generate_series(1, 200);

SELECT is((SELECT count(*) FROM draws WHERE role = 't55_full' AND n = 1 AND seconds >= 0 AND seconds <= 200), 200::bigint,
    'Should draw full jitter between 0 and the capped delay');
SELECT is((SELECT count(*) FROM draws WHERE role = 't55_full' AND n = 20 AND seconds >= 0 AND seconds <= 1000), 200::bigint,
    'Should draw full jitter below the cap once the delay reaches it');
-- Each of these fails by chance with a probability of 2^-200 or less.
SELECT ok((SELECT count(*) > 0 FROM draws WHERE role = 't55_full' AND n = 1 AND seconds < 100),
    'Should draw some full-jitter delays below half the capped delay');
SELECT ok((SELECT count(DISTINCT seconds) > 100 FROM draws WHERE role = 't55_full' AND n = 1),
    'Should spread full-jitter delays, not repeat one');
SELECT is((SELECT count(*) FROM draws WHERE role = 't55_equal' AND n = 1 AND seconds >= 100 AND seconds <= 200), 200::bigint,
    'Should draw equal jitter between half the capped delay and all of it');
SELECT is((SELECT count(*) FROM draws WHERE role = 't55_equal' AND n = 20 AND seconds >= 500 AND seconds <= 1000), 200::bigint,
    'Should draw equal jitter between half the cap and the cap once the delay reaches it');
SELECT ok((SELECT count(DISTINCT seconds) > 100 FROM draws WHERE role = 't55_equal' AND n = 1),
    'Should spread equal-jitter delays, not repeat one');

-- A task's own base and cap, each alone or both; the role's multiplier and jitter still apply.
SELECT results_eq(
    $$SELECT _retry_delay('t55_none', 0, interval '1 second', interval '20 seconds'),
             _retry_delay('t55_none', 2, interval '1 second', interval '20 seconds'),
             _retry_delay('t55_none', 3, interval '1 second', interval '20 seconds'),
             _retry_delay('t55_none', 1, interval '2 seconds'),
             _retry_delay('t55_none', 1, NULL, interval '15 seconds')$$,
    $$VALUES (interval '1 second', interval '9 seconds', interval '20 seconds', interval '6 seconds', interval '15 seconds')$$,
    'Should take a task''s own backoff_base and backoff_cap where given, the role''s otherwise');
SELECT ok((SELECT bool_and(_retry_delay('t55_full', 5, interval '1 second', interval '4 seconds') <= interval '4 seconds')
           FROM generate_series(1, 50)),
    'Should cap full jitter by the task''s own backoff_cap');

/****************************************************************************/
-- enqueue: a task's own backoff, in enqueue_task (intervals) and enqueue_tasks (seconds)

SELECT results_eq(
    $$SELECT backoff_base, backoff_cap
      FROM enqueue_task('t55_none', backoff_base := interval '2 seconds', backoff_cap := interval '1 minute')$$,
    $$VALUES (interval '2 seconds', interval '1 minute')$$,
    'Should keep the backoff_base and backoff_cap given to enqueue_task');
SELECT results_eq(
    $$SELECT backoff_base, backoff_cap FROM enqueue_task('t55_none', dedupe_key := 't55-keyed', backoff_cap := interval '30 seconds')$$,
    $$VALUES (NULL::interval, interval '30 seconds')$$,
    'Should keep a backoff_cap given alone, through the dedupe path of enqueue_task');
SELECT results_eq(
    $$SELECT backoff_base, backoff_cap FROM enqueue_tasks('[{"role": "t55_none", "backoff_base": 1.5, "backoff_cap": 90},
                                                          {"role": "t55_none"}]') ORDER BY id$$,
    $$VALUES (interval '1.5 seconds', interval '90 seconds'), (NULL::interval, NULL::interval)$$,
    'Should read a spec''s backoff_base and backoff_cap as seconds, and leave them NULL when absent');

/****************************************************************************/
-- fail_task: a task's own backoff, and the role's jitter

SELECT id AS own_id FROM enqueue_task('t55_none', priority := 100,
                                      backoff_base := interval '2 seconds', backoff_cap := interval '10 seconds') \gset
SELECT id AS own_claimed FROM claim_task('t55_none', 'w55') \gset
SELECT is(:own_claimed::bigint, :own_id::bigint, 'Should claim the task with its own backoff (fixture)');
SELECT results_eq(
    format($$SELECT status, retry_count, scheduled_for FROM fail_task(%s, 'w55', 1, tests.claim_token(%1$s, 1), 'HTTP 503')$$, :own_id),
    $$VALUES ('pending'::text, 1, now() + interval '2 seconds')$$,
    'Should retry a task with its own backoff_base after that delay, not the role''s');
UPDATE worker_tasks SET scheduled_for = now() WHERE id = :own_id;
SELECT id AS own_claimed FROM claim_task('t55_none', 'w55') \gset
SELECT results_eq(
    format($$SELECT status, retry_count, scheduled_for FROM fail_task(%s, 'w55', 2, tests.claim_token(%1$s, 2), 'HTTP 503')$$, :own_id),
    $$VALUES ('pending'::text, 2, now() + interval '6 seconds')$$,
    'Should grow a task''s own backoff_base by the role''s multiplier (2 s, then 6 s)');
UPDATE worker_tasks SET scheduled_for = now() WHERE id = :own_id;
SELECT id AS own_claimed FROM claim_task('t55_none', 'w55') \gset
SELECT results_eq(
    format($$SELECT status, retry_count, scheduled_for FROM fail_task(%s, 'w55', 3, tests.claim_token(%1$s, 3), 'HTTP 503')$$, :own_id),
    $$VALUES ('pending'::text, 3, now() + interval '10 seconds')$$,
    'Should stop a task''s own backoff at its own backoff_cap (18 s capped at 10 s)');

SELECT id AS full_id FROM tests.make_claimed_task(worker_id := 'w55', role := 't55_full') \gset
SELECT ok(
    (SELECT scheduled_for >= now() AND scheduled_for <= now() + interval '100 seconds' AND status = 'pending'
     FROM fail_task(:full_id, 'w55', 1, tests.claim_token(:full_id, 1), 'HTTP 503')),
    'Should retry a task of a full-jitter role between now and backoff_base from now');

/****************************************************************************/
-- Bad role settings: the table's checks

SELECT throws_ok(
    $$INSERT INTO task_roles (role, backoff_multiplier) VALUES ('t55_bad', 0.5)$$,
    '23514', 'new row for relation "task_roles" violates check constraint "task_roles_backoff_multiplier_from_1_to_10"',
    'Should refuse a backoff_multiplier below 1 (a delay that shrinks)');
SELECT throws_ok(
    $$INSERT INTO task_roles (role, backoff_multiplier) VALUES ('t55_bad', 11)$$,
    '23514', 'new row for relation "task_roles" violates check constraint "task_roles_backoff_multiplier_from_1_to_10"',
    'Should refuse a backoff_multiplier above 10');
SELECT throws_ok(
    $$UPDATE task_roles SET backoff_jitter = 'half' WHERE role = 't55_none'$$,
    '23514', 'new row for relation "task_roles" violates check constraint "task_roles_backoff_jitter_known"',
    'Should refuse a backoff_jitter other than full, equal or none');
SELECT throws_ok(
    $$UPDATE task_roles SET backoff_multiplier = NULL WHERE role = 't55_none'$$,
    '23502', NULL, 'Should refuse a NULL backoff_multiplier');

/****************************************************************************/
-- Bad enqueue arguments: refused, naming the value, nothing written

SELECT tests.rejects(
    $$SELECT enqueue_task('t55_none', backoff_base := interval '0 seconds')$$,
    '22023', 'backoff_base must be a number of seconds, more than 0 and at most 31557600 (a year), not 0',
    'a backoff_base of 0 in enqueue_task');
SELECT tests.rejects(
    $$SELECT enqueue_task('t55_none', backoff_cap := interval '2 years')$$,
    '22023', 'backoff_cap must be a number of seconds, more than 0 and at most 31557600 (a year), not 63115200',
    'a backoff_cap of more than a year in enqueue_task');
SELECT tests.rejects(
    $$SELECT enqueue_task('t55_none', backoff_base := interval '10 seconds', backoff_cap := interval '5 seconds')$$,
    '22023', 'backoff_cap 5 is below backoff_base 10',
    'a backoff_cap below the backoff_base in enqueue_task');
SELECT tests.rejects(
    $$SELECT enqueue_tasks('[{"role": "t55_none"}, {"role": "t55_none", "backoff_base": "30 seconds"}]')$$,
    '22023', 'tasks[1]: backoff_base must be a number of seconds, more than 0 and at most 31557600 (a year), not "30 seconds"',
    'a backoff_base given as text in enqueue_tasks');
SELECT tests.rejects(
    $$SELECT enqueue_tasks('[{"role": "t55_none", "backoff_cap": -1}]')$$,
    '22023', 'tasks[0]: backoff_cap must be a number of seconds, more than 0 and at most 31557600 (a year), not -1',
    'a negative backoff_cap in enqueue_tasks');
SELECT tests.rejects(
    $$SELECT enqueue_tasks('[{"role": "t55_none", "backoff_base": 60, "backoff_cap": 30}]')$$,
    '22023', 'tasks[0]: backoff_cap 30 is below backoff_base 60',
    'a backoff_cap below the backoff_base in enqueue_tasks');
SELECT is(
    tests.error_hint($$SELECT enqueue_tasks('[{"role": "t55_none", "backoff_base": true}]')$$),
    'Omit it to take the role''s (task_roles.backoff_base, backoff_cap).',
    'Should say in the hint what an omitted backoff means');

SELECT * FROM finish();
ROLLBACK;
