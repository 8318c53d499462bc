-- resync_plan: generate_resync_tasks plans a day of product_resync, one task per active store,
-- the stores dealt in id order over `batches` slots of the local day; resync_plan_entries keeps
-- what was planned, so a day is never planned twice for a store. Time zones, daylight saving,
-- the skips (busy, inactive, planned already) and bad input.
BEGIN;
SELECT plan(66);

-- Each scenario gets stores of its own, and is the only set of active stores while it runs:
-- stores of other tests or of the dev database must not take slots (this rolls back).
UPDATE dispensaries SET active = false WHERE active;

-- stores: this file's stores by scenario.
CREATE TEMP TABLE stores (scenario text NOT NULL, id integer PRIMARY KEY);

-- pg_temp.new_stores: deactivates every store, then adds how_many active stores for a scenario.
CREATE FUNCTION pg_temp.new_stores(scenario text, how_many integer)
RETURNS integer
LANGUAGE sql
AS $$
    UPDATE dispensaries SET active = false WHERE active;
    INSERT INTO stores (scenario, id)
    SELECT new_stores.scenario, tests.make_store(name := format('t11 %s %s', new_stores.scenario, k), platform := 'dutchie')
    FROM generate_series(1, new_stores.how_many) AS k;
    SELECT new_stores.how_many;
$$;

-- pg_temp.store: the id of the scenario's n-th store, in id order.
CREATE FUNCTION pg_temp.store(scenario text, n integer)
RETURNS integer
LANGUAGE sql
STABLE
AS $$
    SELECT s.id FROM stores s WHERE s.scenario = store.scenario ORDER BY s.id OFFSET store.n - 1 LIMIT 1;
$$;

-- pg_temp.planned: the scenario's stores (n-th in id order) with their planned product_resync:
-- its slot (from the payload) and when it runs.
CREATE FUNCTION pg_temp.planned(scenario text)
RETURNS TABLE (n integer, slot integer, scheduled_for timestamptz)
LANGUAGE sql
STABLE
AS $$
    SELECT s.n, (t.payload ->> 'slot')::integer, t.scheduled_for
    FROM (SELECT st.id, row_number() OVER (ORDER BY st.id)::integer AS n
          FROM stores st WHERE st.scenario = planned.scenario) AS s
    JOIN worker_tasks t ON t.dispensary_id = s.id AND t.role = 'product_resync' AND t.payload ? 'plan_day'
    ORDER BY s.n;
$$;

-- What a rejected call must leave as it was (tests.rejects' tables).
\set written_tables '''{worker_tasks, resync_plan_entries}'''

/****************************************************************************/
-- Structure

SELECT has_table('resync_plan_entries', 'Should have table resync_plan_entries');
SELECT col_is_pk('resync_plan_entries', ARRAY['day', 'dispensary_id'],
    'Should key resync_plan_entries by (day, dispensary_id): one entry per store per day');
SELECT fk_ok('resync_plan_entries', 'dispensary_id', 'dispensaries', 'id',
    'Should tie a plan entry to its store');
SELECT fk_ok('resync_plan_entries', 'task_id', 'worker_tasks', 'id',
    'Should tie a plan entry to its task');
SELECT col_is_null('resync_plan_entries', 'task_id',
    'Should allow a NULL task_id: an entry outlives its pruned task');
SELECT has_index('resync_plan_entries', 'resync_plan_entries_task_idx', ARRAY['task_id'],
    'Should index resync_plan_entries by task_id for the ON DELETE SET NULL');
SELECT has_function('public', 'generate_resync_tasks', ARRAY['integer', 'date', 'text', 'integer'],
    'Should have generate_resync_tasks(batches, day, time_zone, priority)');
SELECT function_returns('public', 'generate_resync_tasks', ARRAY['integer', 'date', 'text', 'integer'], 'integer',
    'generate_resync_tasks should return the count of tasks it created');
SELECT volatility_is('public', 'generate_resync_tasks', ARRAY['integer', 'date', 'text', 'integer'], 'volatile',
    'generate_resync_tasks should be volatile');

/****************************************************************************/
-- Slots: 12 stores, a count that divides evenly

SELECT pg_temp.new_stores('even_1', 12) AS made \gset
SELECT is(generate_resync_tasks(1, '2026-01-15', 'UTC'), 12,
    'Should return 12 for 12 active stores in 1 batch');
SELECT results_eq(
    $$SELECT n, slot, scheduled_for FROM pg_temp.planned('even_1')$$,
    $$SELECT k, 0, '2026-01-15 00:00:00+00'::timestamptz FROM generate_series(1, 12) AS k$$,
    'Should put every store in slot 0 at local midnight with 1 batch');

SELECT pg_temp.new_stores('even_6', 12) AS made \gset
SELECT is(generate_resync_tasks(6, '2026-01-15', 'UTC'), 12,
    'Should return 12 for 12 active stores in 6 batches');
SELECT results_eq(
    $$SELECT n, slot, scheduled_for FROM pg_temp.planned('even_6')$$,
    $$VALUES (1, 0, '2026-01-15 00:00:00+00'::timestamptz), (2, 0, '2026-01-15 00:00:00+00'),
             (3, 1, '2026-01-15 04:00:00+00'), (4, 1, '2026-01-15 04:00:00+00'),
             (5, 2, '2026-01-15 08:00:00+00'), (6, 2, '2026-01-15 08:00:00+00'),
             (7, 3, '2026-01-15 12:00:00+00'), (8, 3, '2026-01-15 12:00:00+00'),
             (9, 4, '2026-01-15 16:00:00+00'), (10, 4, '2026-01-15 16:00:00+00'),
             (11, 5, '2026-01-15 20:00:00+00'), (12, 5, '2026-01-15 20:00:00+00')$$,
    'Should deal 12 stores in id order two to a slot, a slot every 4 hours, with 6 batches');

SELECT pg_temp.new_stores('even_24', 48) AS made \gset
SELECT is(generate_resync_tasks(24, '2026-01-15', 'UTC'), 48,
    'Should return 48 for 48 active stores in 24 batches');
SELECT results_eq(
    $$SELECT slot, count(*), min(n), max(n), min(scheduled_for), max(scheduled_for)
      FROM pg_temp.planned('even_24') GROUP BY slot ORDER BY slot$$,
    $$SELECT k, 2::bigint, 2 * k + 1, 2 * k + 2,
             '2026-01-15 00:00:00+00'::timestamptz + k * interval '1 hour',
             '2026-01-15 00:00:00+00'::timestamptz + k * interval '1 hour'
      FROM generate_series(0, 23) AS k$$,
    'Should deal 48 stores in id order two to a slot, a slot every hour, with 24 batches');

/****************************************************************************/
-- Slots: counts that do not divide (the first slots take one store more), fewer stores than slots

SELECT pg_temp.new_stores('odd_3', 7) AS made \gset
SELECT is(generate_resync_tasks(3, '2026-01-15', 'UTC'), 7,
    'Should return 7 for 7 active stores in 3 batches');
SELECT results_eq(
    $$SELECT n, slot, scheduled_for FROM pg_temp.planned('odd_3')$$,
    $$VALUES (1, 0, '2026-01-15 00:00:00+00'::timestamptz), (2, 0, '2026-01-15 00:00:00+00'),
             (3, 0, '2026-01-15 00:00:00+00'),
             (4, 1, '2026-01-15 08:00:00+00'), (5, 1, '2026-01-15 08:00:00+00'),
             (6, 2, '2026-01-15 16:00:00+00'), (7, 2, '2026-01-15 16:00:00+00')$$,
    'Should deal 7 stores over 3 slots as 3, 2 and 2, the first slot taking the extra store');

SELECT pg_temp.new_stores('odd_6', 7) AS made \gset
SELECT is(generate_resync_tasks(6, '2026-01-15', 'UTC'), 7,
    'Should return 7 for 7 active stores in 6 batches');
SELECT results_eq(
    $$SELECT n, slot, scheduled_for FROM pg_temp.planned('odd_6')$$,
    $$VALUES (1, 0, '2026-01-15 00:00:00+00'::timestamptz), (2, 0, '2026-01-15 00:00:00+00'),
             (3, 1, '2026-01-15 04:00:00+00'), (4, 2, '2026-01-15 08:00:00+00'),
             (5, 3, '2026-01-15 12:00:00+00'), (6, 4, '2026-01-15 16:00:00+00'),
             (7, 5, '2026-01-15 20:00:00+00')$$,
    'Should deal 7 stores over 6 slots as 2, 1, 1, 1, 1, 1');

SELECT pg_temp.new_stores('few_24', 7) AS made \gset
SELECT is(generate_resync_tasks(24, '2026-01-15', 'UTC'), 7,
    'Should return 7 for 7 active stores in 24 batches');
SELECT results_eq(
    $$SELECT n, slot, scheduled_for FROM pg_temp.planned('few_24')$$,
    $$SELECT k, k - 1, '2026-01-15 00:00:00+00'::timestamptz + (k - 1) * interval '1 hour'
      FROM generate_series(1, 7) AS k$$,
    'Should give each of 7 stores a slot of its own, the first 7 of 24, and leave the later slots empty');

/****************************************************************************/
-- What a planned task and its entry hold

SELECT results_eq(
    $$SELECT t.status, t.priority, t.platform, t.max_retries, t.payload
      FROM worker_tasks t WHERE t.dispensary_id = pg_temp.store('even_6', 3) AND t.role = 'product_resync'$$,
    $$VALUES ('pending'::text, 0, 'dutchie'::text, (SELECT max_retries FROM task_roles WHERE role = 'product_resync'),
              '{"plan_day": "2026-01-15", "slot": 1}'::jsonb)$$,
    'Should make a pending task at priority 0 by default, with the store''s platform, the role''s max_retries and {plan_day, slot}');
SELECT results_eq(
    $$SELECT e.day, e.slot, e.scheduled_for, e.task_id = t.id
      FROM resync_plan_entries e
      JOIN worker_tasks t ON t.dispensary_id = e.dispensary_id AND t.role = 'product_resync'
      WHERE e.dispensary_id = pg_temp.store('even_6', 3)$$,
    $$VALUES ('2026-01-15'::date, 1, '2026-01-15 04:00:00+00'::timestamptz, true)$$,
    'Should record the store''s day, slot, time and task in resync_plan_entries');
SELECT is_empty(
    $$SELECT s.id
      FROM stores s
      JOIN worker_tasks t ON t.dispensary_id = s.id AND t.role = 'product_resync'
      LEFT JOIN resync_plan_entries e ON e.task_id = t.id
      WHERE e.task_id IS NULL OR e.dispensary_id <> t.dispensary_id OR e.scheduled_for <> t.scheduled_for
         OR e.slot <> (t.payload ->> 'slot')::integer OR e.day::text <> t.payload ->> 'plan_day'$$,
    'Should give every planned task an entry with the same store, day, slot and time');

/****************************************************************************/
-- Time zones: wall-clock slots of the local day

SELECT pg_temp.new_stores('new_york', 6) AS made \gset
SELECT is(generate_resync_tasks(6, '2026-01-15', 'America/New_York'), 6,
    'Should return 6 for 6 stores planned in America/New_York');
SELECT results_eq(
    $$SELECT n, slot, scheduled_for, (scheduled_for AT TIME ZONE 'America/New_York')::time
      FROM pg_temp.planned('new_york')$$,
    $$VALUES (1, 0, '2026-01-15 05:00:00+00'::timestamptz, '00:00'::time),
             (2, 1, '2026-01-15 09:00:00+00', '04:00'),
             (3, 2, '2026-01-15 13:00:00+00', '08:00'),
             (4, 3, '2026-01-15 17:00:00+00', '12:00'),
             (5, 4, '2026-01-15 21:00:00+00', '16:00'),
             (6, 5, '2026-01-16 01:00:00+00', '20:00')$$,
    'Should start a winter day in America/New_York at 00:00 EST, 05:00 UTC, a slot every 4 local hours');

SELECT pg_temp.new_stores('spring', 5) AS made \gset
SELECT is(generate_resync_tasks(24, '2026-03-08', 'America/New_York'), 5,
    'Should return 5 for 5 stores planned on the spring-forward day');
SELECT results_eq(
    $$SELECT n, slot, scheduled_for, scheduled_for AT TIME ZONE 'America/New_York'
      FROM pg_temp.planned('spring')$$,
    $$VALUES (1, 0, '2026-03-08 05:00:00+00'::timestamptz, '2026-03-08 00:00'::timestamp),
             (2, 1, '2026-03-08 06:00:00+00', '2026-03-08 01:00'),
             (3, 2, '2026-03-08 07:00:00+00', '2026-03-08 03:00'),
             (4, 3, '2026-03-08 07:00:00+00', '2026-03-08 03:00'),
             (5, 4, '2026-03-08 08:00:00+00', '2026-03-08 04:00')$$,
    'Should run the 02:00 slot of 2026-03-08 in America/New_York at 03:00 EDT, the instant of the 03:00 slot');

SELECT pg_temp.new_stores('fall', 3) AS made \gset
SELECT is(generate_resync_tasks(24, '2026-11-01', 'America/New_York'), 3,
    'Should return 3 for 3 stores planned on the fall-back day');
SELECT results_eq(
    $$SELECT n, slot, scheduled_for, to_char(scheduled_for AT TIME ZONE 'America/New_York', 'HH24:MI'),
             scheduled_for - lag(scheduled_for) OVER (ORDER BY n)
      FROM pg_temp.planned('fall')$$,
    $$VALUES (1, 0, '2026-11-01 04:00:00+00'::timestamptz, '00:00'::text, NULL::interval),
             (2, 1, '2026-11-01 06:00:00+00', '01:00', interval '2 hours'),
             (3, 2, '2026-11-01 07:00:00+00', '02:00', interval '1 hour')$$,
    'Should run the 01:00 slot of 2026-11-01 in America/New_York at 01:00 EST, two hours after the 00:00 slot');

-- Without a time zone: the session's TimeZone.
SET LOCAL TimeZone = 'Asia/Tokyo';
SELECT pg_temp.new_stores('session', 2) AS made \gset
SELECT is(generate_resync_tasks(2, '2026-01-15'), 2,
    'Should return 2 for 2 stores planned in the session time zone');
SELECT results_eq(
    $$SELECT n, slot, scheduled_for FROM pg_temp.planned('session')$$,
    $$VALUES (1, 0, '2026-01-14 15:00:00+00'::timestamptz), (2, 1, '2026-01-15 03:00:00+00')$$,
    'Should default the time zone to the session''s TimeZone (Asia/Tokyo: 00:00 JST is 15:00 UTC the day before)');
SELECT pg_temp.new_stores('session_null', 1) AS made \gset
SELECT is(generate_resync_tasks(2, '2026-01-15', NULL), 1,
    'Should return 1 for 1 store planned with a NULL time zone');
SELECT results_eq(
    $$SELECT n, slot, scheduled_for FROM pg_temp.planned('session_null')$$,
    $$VALUES (1, 0, '2026-01-14 15:00:00+00'::timestamptz)$$,
    'Should read a NULL time zone as the session''s TimeZone');
SELECT pg_temp.new_stores('explicit_utc', 1) AS made \gset
SELECT is(generate_resync_tasks(2, '2026-01-15', 'UTC'), 1,
    'Should return 1 for 1 store planned in UTC under an Asia/Tokyo session');
SELECT results_eq(
    $$SELECT n, slot, scheduled_for FROM pg_temp.planned('explicit_utc')$$,
    $$VALUES (1, 0, '2026-01-15 00:00:00+00'::timestamptz)$$,
    'Should follow an explicit UTC, not the session''s TimeZone');
SET LOCAL TimeZone = 'UTC';

/****************************************************************************/
-- Idempotence: a store planned for a day is never planned again that day

SELECT pg_temp.new_stores('again', 3) AS made \gset
SELECT is(generate_resync_tasks(3, '2026-01-16', 'UTC', priority := 100), 3,
    'Should return 3 for the first plan of a day');
SELECT results_eq(
    $$SELECT t.priority FROM worker_tasks t JOIN stores s ON s.id = t.dispensary_id
      WHERE s.scenario = 'again' ORDER BY t.dispensary_id$$,
    $$VALUES (100), (100), (100)$$,
    'Should give the planned tasks the priority asked for');
SELECT is(generate_resync_tasks(3, '2026-01-16', 'UTC', priority := 100), 0,
    'Should return 0 when the same day is planned again');
SELECT is((SELECT count(*) FROM worker_tasks t JOIN stores s ON s.id = t.dispensary_id WHERE s.scenario = 'again'),
    3::bigint, 'Should create no task when the same day is planned again');

-- The first store's task runs to completion (priority 100 and the lowest id put it first).
SELECT id AS done_id, worker_id AS done_worker, attempt AS done_attempt
FROM claim_task('product_resync', 't11-w1') \gset
SELECT is(:done_id::bigint,
    (SELECT id FROM worker_tasks WHERE dispensary_id = pg_temp.store('again', 1) AND role = 'product_resync'),
    'Should claim the first store''s planned task');
SELECT is((SELECT status FROM complete_task(:done_id, :'done_worker', :done_attempt, tests.claim_token(:done_id, :done_attempt), '{}')), 'completed',
    'Should complete the first store''s planned task');
SELECT is(generate_resync_tasks(3, '2026-01-16', 'UTC', priority := 100), 0,
    'Should return 0 for a day planned again after one of its tasks completed');
SELECT is((SELECT count(*) FROM worker_tasks WHERE dispensary_id = pg_temp.store('again', 1) AND role = 'product_resync'),
    1::bigint, 'Should not plan a store again for the day once its task completed');

-- Its task is pruned: the entry stays, task_id goes NULL, and the store is still not planned again.
SELECT tests.age_completion(:done_id, interval '2 days') AS aged \gset
SELECT prune_tasks(interval '1 day') AS pruned \gset
SELECT results_eq(
    $$SELECT e.slot, e.task_id, (SELECT count(*) FROM worker_tasks WHERE dispensary_id = e.dispensary_id)
      FROM resync_plan_entries e
      WHERE e.day = '2026-01-16' AND e.dispensary_id = pg_temp.store('again', 1)$$,
    $$VALUES (0, NULL::bigint, 0::bigint)$$,
    'Should keep the plan entry, its task_id NULL, when the task is pruned');
SELECT is(generate_resync_tasks(3, '2026-01-16', 'UTC', priority := 100), 0,
    'Should return 0 for a day planned again after one of its tasks was pruned');
SELECT is((SELECT count(*) FROM worker_tasks WHERE dispensary_id = pg_temp.store('again', 1)), 0::bigint,
    'Should not plan a store again for the day once its task was pruned');
SELECT is(generate_resync_tasks(3, '2026-01-18', 'UTC'), 1,
    'Should plan that store on another day (the other two still have a resync pending)');

/****************************************************************************/
-- Skips: a store with a product_resync under way, an inactive store

SELECT pg_temp.new_stores('busy', 4) AS made \gset
SELECT tests.make_task(role := 'product_resync', dispensary_id := pg_temp.store('busy', 2)) AS pending_id \gset
SELECT id AS claimed_id
FROM tests.make_claimed_task(worker_id := 't11-w2', role := 'product_resync', dispensary_id := pg_temp.store('busy', 3)) \gset
SELECT tests.make_task(role := 'product_refresh', dispensary_id := pg_temp.store('busy', 4)) AS other_role_id \gset
INSERT INTO stores (scenario, id)
SELECT 'busy', tests.make_store(name := 't11 busy inactive', active := false);

SELECT is(generate_resync_tasks(2, '2026-01-17', 'UTC'), 2,
    'Should count only the stores it planned, not those it skipped');
SELECT results_eq(
    $$SELECT s.n, e.slot, e.scheduled_for, t.payload
      FROM (SELECT id, row_number() OVER (ORDER BY id)::integer AS n FROM stores WHERE scenario = 'busy') AS s
      JOIN resync_plan_entries e ON e.dispensary_id = s.id AND e.day = '2026-01-17'
      JOIN worker_tasks t ON t.id = e.task_id
      ORDER BY s.n$$,
    $$VALUES (1, 0, '2026-01-17 00:00:00+00'::timestamptz, '{"plan_day": "2026-01-17", "slot": 0}'::jsonb),
             (4, 1, '2026-01-17 12:00:00+00', '{"plan_day": "2026-01-17", "slot": 1}')$$,
    'Should plan the idle store and the store busy with another role, in the slots of all active stores');
SELECT results_eq(
    $$SELECT s.n, (SELECT array_agg(t.status ORDER BY t.id) FROM worker_tasks t
                   WHERE t.dispensary_id = s.id AND t.role = 'product_resync')
      FROM (SELECT id, row_number() OVER (ORDER BY id)::integer AS n FROM stores WHERE scenario = 'busy') AS s
      WHERE s.n IN (2, 3, 5)
      ORDER BY s.n$$,
    $$VALUES (2, ARRAY['pending']), (3, ARRAY['claimed']), (5, NULL::text[])$$,
    'Should skip a store with a pending or claimed product_resync, and an inactive store');
SELECT is_empty(
    $$SELECT e.dispensary_id FROM resync_plan_entries e
      WHERE e.day = '2026-01-17'
        AND e.dispensary_id IN (pg_temp.store('busy', 2), pg_temp.store('busy', 3), pg_temp.store('busy', 5))$$,
    'Should record no plan entry for a skipped store');

/****************************************************************************/
-- Bad input: a precise error, and nothing written

SELECT pg_temp.new_stores('bad', 2) AS made \gset
SELECT tests.rejects($$SELECT generate_resync_tasks(0, '2026-02-01', 'UTC')$$,
    '22023', 'batches 0 is out of range', '0 batches',
    tables := :written_tables);
SELECT tests.rejects($$SELECT generate_resync_tasks(1441, '2026-02-01', 'UTC')$$,
    '22023', 'batches 1441 is out of range', '1441 batches',
    tables := :written_tables);
SELECT tests.rejects($$SELECT generate_resync_tasks(6, '2026-02-01', 'UTC', priority := 101)$$,
    '22003', 'priority 101 is out of range', 'priority 101',
    tables := :written_tables);
SELECT tests.rejects($$SELECT generate_resync_tasks(6, '2026-02-01', 'Mars/Base')$$,
    '22023', 'unknown time zone ''Mars/Base''', 'an unknown time zone',
    tables := :written_tables);
SELECT is(tests.error_hint($$SELECT generate_resync_tasks(6, '2026-02-01', 'Mars/Base')$$),
    'Use a name from pg_timezone_names, e.g. UTC or America/New_York.',
    'Should suggest pg_timezone_names in the hint for an unknown time zone');
SELECT tests.rejects($$SELECT generate_resync_tasks(6, NULL, 'UTC')$$,
    '22004', 'batches, day and priority are required', 'a NULL day',
    tables := :written_tables);
SELECT tests.rejects($$SELECT generate_resync_tasks(NULL, '2026-02-01', 'UTC')$$,
    '22004', 'batches, day and priority are required', 'NULL batches',
    tables := :written_tables);
SELECT is_empty(
    $$SELECT e.dispensary_id FROM resync_plan_entries e WHERE e.day = '2026-02-01'$$,
    'Should have planned nothing for the day of the bad calls');

SELECT * FROM finish();
ROLLBACK;
