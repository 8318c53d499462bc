-- enqueue_fast_path: one task without a dedupe key takes a lean path, written out twice: in
-- enqueue_task's body (its usual call) and in _enqueue for one spec (enqueue_specs of one, a
-- follow-up, a JSON batch of one); anything else takes _enqueue's set-wide path, which JSON specs
-- (_enqueue_specs) of more than one task take. All three must make the same task from the same
-- arguments and refuse the same input with the same error; the values at the edges of what a
-- check takes are the ones most likely to differ, and so are the optional fields (platform,
-- headers, backoffs), whose checks the lean paths set up only when one is given. The wake-ups:
-- an enqueue, or an operator's INSERT, still wakes a waiting worker, and one with no worker
-- waiting leaves nothing behind.
-- SET CONSTRAINTS ALL IMMEDIATE runs the commit-time wake-ups at the end of each statement.
BEGIN;
SELECT plan(70);
SET CONSTRAINTS ALL IMMEDIATE;

INSERT INTO task_roles (role, requires_store, max_retries, max_payload_bytes, description) VALUES
    ('t38_free',  false, 5, 300, 'pgTAP enqueue_fast_path: no store, small payloads'),
    ('t38_store', true,  7, 65536, 'pgTAP enqueue_fast_path: one store per task'),
    ('t38_wake',  false, 3, 65536, 'pgTAP enqueue_fast_path: wake-ups');

SELECT tests.make_store(name := 'T38 Store', platform := 'dutchie') AS store_id \gset
SELECT tests.make_store(name := 'T38 Bare Store', platform := NULL) AS bare_store_id \gset

-- pg_temp.paths: the task enqueue_task makes from these arguments (its lean path), the one
-- enqueue_specs makes from the same spec alone (_enqueue's lean path) and the one _enqueue_specs
-- makes from it (built as the v0.5.0 enqueue_task built it) in a batch of two (the set-wide path),
-- as jsonb without what differs by nature (id, timestamps), so that a test compares the three.
CREATE FUNCTION pg_temp.paths(role text, payload jsonb DEFAULT '{}', dispensary_id integer DEFAULT NULL,
                             priority integer DEFAULT 0, scheduled_for timestamptz DEFAULT NULL,
                             dedupe_key text DEFAULT NULL, max_retries integer DEFAULT NULL,
                             platform text DEFAULT NULL, headers jsonb DEFAULT NULL,
                             backoff_base interval DEFAULT NULL, backoff_cap interval DEFAULT NULL)
RETURNS jsonb[]
LANGUAGE plpgsql
AS $$
DECLARE
    c_ignored constant text[] := ARRAY['id', 'created_at', 'updated_at'];
    v_lean  jsonb;
    v_one   jsonb;
    v_specs jsonb;
BEGIN
    SELECT to_jsonb(t) - c_ignored INTO v_lean
    FROM enqueue_task(paths.role, paths.payload, paths.dispensary_id, paths.priority, paths.scheduled_for,
                      paths.dedupe_key, paths.max_retries, paths.platform, paths.headers, paths.backoff_base,
                      paths.backoff_cap) AS t;
    -- A dedupe key is active once: each copy gets its own key, of the same length.
    SELECT to_jsonb(t) - c_ignored || jsonb_build_object('dedupe_key', paths.dedupe_key) INTO v_one
    FROM enqueue_specs(ARRAY[ROW(paths.role, paths.payload, paths.dispensary_id, paths.priority, paths.scheduled_for,
                                 '^' || substr(paths.dedupe_key, 2), paths.max_retries, paths.platform, paths.headers,
                                 paths.backoff_base, paths.backoff_cap, NULL, NULL)::task_spec]) AS t;
    SELECT to_jsonb(t) - c_ignored || jsonb_build_object('dedupe_key', paths.dedupe_key) INTO v_specs
    FROM _enqueue_specs(
        -- a second spec, so that the first takes the set-wide path
        (SELECT jsonb_build_array(jsonb_object_agg(f.name, f.value), '{"role": "t38_free"}'::jsonb)
         FROM (VALUES ('role',          to_jsonb(paths.role)),
                      ('payload',       paths.payload),
                      ('dispensary_id', to_jsonb(paths.dispensary_id)),
                      ('priority',      to_jsonb(paths.priority)),
                      ('scheduled_for', to_jsonb(paths.scheduled_for)),
                      ('dedupe_key',    to_jsonb('~' || substr(paths.dedupe_key, 2))),
                      ('max_retries',   to_jsonb(paths.max_retries)),
                      ('platform',      to_jsonb(paths.platform)),
                      ('headers',       paths.headers),
                      -- in seconds, as JSON specs give them
                      ('backoff_base',  to_jsonb(extract(epoch FROM paths.backoff_base))),
                      ('backoff_cap',   to_jsonb(extract(epoch FROM paths.backoff_cap)))) AS f(name, value)
         WHERE f.value IS NOT NULL),
        NULL) AS t;
    RETURN ARRAY[v_lean, v_one, v_specs];
END;
$$;

-- pg_temp.agree: the three paths make the same task.
CREATE FUNCTION pg_temp.agree(tasks jsonb[], description text) RETURNS text LANGUAGE sql
AS $$ SELECT is(tasks[2:3], ARRAY[tasks[1], tasks[1]], description) $$;

-- pg_temp.refused_alike: enqueue_task and enqueue_tasks refuse the same input with the same error.
CREATE FUNCTION pg_temp.refused_alike(single text, batch text, description text) RETURNS SETOF text
LANGUAGE plpgsql
AS $$
DECLARE
    v_before bigint := (SELECT count(*) FROM worker_tasks);
    v_single text := tests.error_of(single);
BEGIN
    RETURN NEXT isnt(v_single, 'no error', 'Should refuse ' || description);
    RETURN NEXT is(v_single, regexp_replace(tests.error_of(batch), ': tasks\[0\]: ', ': '),
                   'Should refuse ' || description || ' as a batch of one does');
    RETURN NEXT is((SELECT count(*) FROM worker_tasks), v_before, 'Should write no task for ' || description);
END;
$$;

/****************************************************************************/
-- The same task, whichever path makes it

SELECT pg_temp.agree(pg_temp.paths('t38_free'), 'The defaults should make the same task');
SELECT pg_temp.agree(pg_temp.paths('t38_free', NULL), 'A NULL payload should be the empty object on both paths');
SELECT pg_temp.agree(pg_temp.paths('t38_free', 'null'), 'A JSON null payload should be the empty object on both paths');
SELECT pg_temp.agree(pg_temp.paths('t38_free', '{"a": [1, 2.50, {"b": null}], "s": "é"}'),
    'A payload should be kept alike');
SELECT pg_temp.agree(pg_temp.paths('t38_free', priority := NULL, max_retries := NULL),
    'NULL priority and max_retries should take the defaults on both paths');
SELECT pg_temp.agree(pg_temp.paths('t38_free', priority := -100, max_retries := 0),
    'The lowest priority and no retries should be taken alike');
SELECT pg_temp.agree(pg_temp.paths('t38_free', priority := 100, max_retries := 1000),
    'The highest priority and the most retries should be taken alike');
SELECT pg_temp.agree(pg_temp.paths('t38_store', dispensary_id := :store_id),
    'A store''s task should take the store''s platform on both paths');
SELECT pg_temp.agree(pg_temp.paths('t38_store', dispensary_id := :store_id, platform := 'jane'),
    'A platform given should win over the store''s on both paths');
SELECT pg_temp.agree(pg_temp.paths('t38_store', dispensary_id := :bare_store_id),
    'A store without a platform should make a task without one on both paths');
SELECT pg_temp.agree(pg_temp.paths('t38_free', dispensary_id := :store_id),
    'A store named for a role that needs none should be kept alike');
SELECT pg_temp.agree(pg_temp.paths('t38_free', scheduled_for := '2001-02-03 04:05:06.789012+00'),
    'A time should be kept to the microsecond on both paths');
SELECT pg_temp.agree(pg_temp.paths('t38_free', scheduled_for := '1000-01-02 00:00:00+00'),
    'The earliest time the lean path takes should be taken alike');
SELECT pg_temp.agree(pg_temp.paths('t38_free', scheduled_for := '9999-12-30 00:00:00+00'),
    'The latest time the lean path takes should be taken alike');
SELECT pg_temp.agree(pg_temp.paths('t38_free', scheduled_for := '0500-06-01 00:00:00+00'),
    'A time before the lean path''s range should go to _enqueue_specs and be taken alike');
SELECT pg_temp.agree(pg_temp.paths('t38_free', dedupe_key := repeat('k', 255), platform := repeat('p', 100)),
    'The longest dedupe key and platform should be taken alike');
SELECT pg_temp.agree(pg_temp.paths('t38_free', jsonb_build_object('x', repeat('a', 291))),
    'A payload of exactly the role''s limit should be taken alike');
SELECT pg_temp.agree(pg_temp.paths('t38_free', platform := 'jane'),
    'A platform alone should be taken alike');
SELECT pg_temp.agree(pg_temp.paths('t38_free', headers := '{"traceparent": "00-abc", "tenant": "t38"}'),
    'Headers should be kept alike');
SELECT pg_temp.agree(pg_temp.paths('t38_free', headers := '{}'),
    'Empty headers should be no headers on every path');
SELECT pg_temp.agree(pg_temp.paths('t38_free', backoff_base := '1.5 seconds', backoff_cap := '1 hour'),
    'A task''s own backoff should be kept alike');
SELECT pg_temp.agree(pg_temp.paths('t38_store', '{"n": 1}', :store_id, 7, '2030-01-01 00:00:00+00', NULL, 9, 'jane',
                                   '{"k": "v"}', '1 second', '12 hours'),
    'A task with every field but a dedupe key should be taken alike');

/****************************************************************************/
-- The same refusal, whichever path

SELECT pg_temp.refused_alike($$SELECT enqueue_task('t38_free', scheduled_for := 'infinity')$$,
    $$SELECT enqueue_tasks('[{"role": "t38_free", "scheduled_for": "infinity"}]')$$, 'an infinite time');
SELECT pg_temp.refused_alike($$SELECT enqueue_task('t38_free', scheduled_for := '10000-01-01 00:00:00+00')$$,
    $$SELECT enqueue_tasks('[{"role": "t38_free", "scheduled_for": "10000-01-01T00:00:00+00:00"}]')$$,
    'a time past the year 9999');
SELECT pg_temp.refused_alike($$SELECT enqueue_task('t38_free', jsonb_build_object('x', repeat('a', 292)))$$,
    $$SELECT enqueue_tasks(jsonb_build_array(jsonb_build_object('role', 't38_free', 'payload',
                                                                jsonb_build_object('x', repeat('a', 292)))))$$,
    'a payload one byte over the role''s limit');
SELECT pg_temp.refused_alike($$SELECT enqueue_task('t38_store', dispensary_id := 2147483647)$$,
    $$SELECT enqueue_tasks('[{"role": "t38_store", "dispensary_id": 2147483647}]')$$, 'a store that does not exist');
SELECT pg_temp.refused_alike($$SELECT enqueue_task('t38_store')$$,
    $$SELECT enqueue_tasks('[{"role": "t38_store"}]')$$, 'a store role''s task without a store');
SELECT pg_temp.refused_alike($$SELECT enqueue_task('t38_free', dedupe_key := '')$$,
    $$SELECT enqueue_tasks('[{"role": "t38_free", "dedupe_key": ""}]')$$, 'an empty dedupe key');
SELECT pg_temp.refused_alike($$SELECT enqueue_task('t38_free', priority := 101)$$,
    $$SELECT enqueue_tasks('[{"role": "t38_free", "priority": 101}]')$$, 'a priority out of range');
-- with an optional field given, whose checks come after
SELECT pg_temp.refused_alike($$SELECT enqueue_task('t38_free', priority := 101, platform := 'jane')$$,
    $$SELECT enqueue_tasks('[{"role": "t38_free", "priority": 101, "platform": "jane"}]')$$,
    'a priority out of range beside a platform');
SELECT pg_temp.refused_alike($$SELECT enqueue_task('t38_free', platform := '')$$,
    $$SELECT enqueue_tasks('[{"role": "t38_free", "platform": ""}]')$$, 'an empty platform');
SELECT pg_temp.refused_alike($$SELECT enqueue_task('t38_free', headers := '{"n": 1}')$$,
    $$SELECT enqueue_tasks('[{"role": "t38_free", "headers": {"n": 1}}]')$$, 'a header that is not a string');
SELECT pg_temp.refused_alike($$SELECT enqueue_task('t38_free', backoff_base := '0 seconds')$$,
    $$SELECT enqueue_tasks('[{"role": "t38_free", "backoff_base": 0}]')$$, 'a backoff of no time');
SELECT pg_temp.refused_alike($$SELECT enqueue_task('t38_free', backoff_base := '1 minute', backoff_cap := '1 second')$$,
    $$SELECT enqueue_tasks('[{"role": "t38_free", "backoff_base": 60, "backoff_cap": 1}]')$$,
    'a backoff cap below its base');
SELECT pg_temp.refused_alike($$SELECT enqueue_task('t38_free', headers := '{"traceparent": "00-abc"}', backoff_cap := '2 years')$$,
    $$SELECT enqueue_tasks('[{"role": "t38_free", "headers": {"traceparent": "00-abc"}, "backoff_cap": 63115200}]')$$,
    'a backoff cap over a year beside good headers');

/****************************************************************************/
-- Dedupe keys

SELECT id AS first_id FROM enqueue_task('t38_free', '{"n": 1}', dedupe_key := 't38:key') \gset
SELECT is((SELECT array_agg(id) FROM (SELECT (enqueue_task('t38_free', '{"n": 2}', dedupe_key := 't38:key')).id
                                      FROM generate_series(1, 3)) AS again),
    ARRAY[:first_id, :first_id, :first_id]::bigint[],
    'The same dedupe key should yield the active task every time');
SELECT is((SELECT payload FROM worker_tasks WHERE id = :first_id), '{"n": 1}'::jsonb,
    'The active task should be left as it was');
SELECT cancel_task(:first_id);
SELECT isnt((SELECT id FROM enqueue_task('t38_free', dedupe_key := 't38:key')), :first_id::bigint,
    'The key of a finished task should make a new task');

/****************************************************************************/
-- Wake-ups

SELECT register_worker(w, 't38_wake', 'host', 1) FROM unnest(ARRAY['t38-1', 't38-2']) AS w;
SELECT enqueue_task('t38_wake');
SELECT is((SELECT count(*) FROM task_wake_requests), 0::bigint,
    'An enqueue with no worker waiting should leave no wake-up request behind');
SELECT mark_worker_waiting(w) FROM unnest(ARRAY['t38-1', 't38-2']) AS w;
SELECT is(tests.waiting_workers('t38_wake'), ARRAY['t38-1', 't38-2'], 'Both workers should wait');
SELECT enqueue_task('t38_wake');
SELECT is(cardinality(tests.waiting_workers('t38_wake')), 1, 'One enqueue_task should wake one waiting worker');
INSERT INTO worker_tasks (role) VALUES ('t38_wake');
SELECT is(tests.waiting_workers('t38_wake'), ARRAY[]::text[], 'An operator''s INSERT of a ready task should wake the other');
SELECT is((SELECT count(*) FROM task_wake_requests), 0::bigint,
    'The wake-ups done should leave no request behind');

-- The role lock held elsewhere: the wake-up waits for it only as long as lock_timeout allows.
SELECT is((SELECT 'lock_timeout=1s' = ANY (p.proconfig) FROM pg_proc p
           WHERE p.oid = 'tg_task_wake_requests__wake_at_commit()'::regprocedure), true,
    'The commit-time wake-up should give up waiting for the role lock after a second');

SELECT * FROM finish();
ROLLBACK;
