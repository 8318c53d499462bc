-- enqueue_typed_specs: enqueue_specs(task_spec[]), the typed batch, and the JSON forms that are
-- calls of the same path (_enqueue): enqueue_tasks, and enqueue_task with one spec. The same
-- spec makes the same task whichever form carries it, and a bad one is refused with the same
-- SQLSTATE and message (tasks[N]: ...), writing nothing. JSON's own errors (a value of the wrong
-- JSON type, an unknown field) stay enqueue_tasks'; a type says them for enqueue_specs.
BEGIN;
SELECT plan(54);

INSERT INTO task_roles (role, requires_store, max_retries, max_payload_bytes, description) VALUES
    ('typed_free',  false, 5, 300, 'pgTAP enqueue_typed_specs: no store, small payloads'),
    ('typed_store', true,  7, 65536, 'pgTAP enqueue_typed_specs: one store per task');

SELECT tests.make_store(name := 'Typed Store', platform := 'dutchie') AS store_id \gset

-- pg_temp.spec: a task_spec from named fields, as a client binds one.
CREATE FUNCTION pg_temp.spec(role text, payload jsonb DEFAULT NULL, dispensary_id integer DEFAULT NULL,
                             priority integer DEFAULT NULL, scheduled_for timestamptz DEFAULT NULL,
                             dedupe_key text DEFAULT NULL, max_retries integer DEFAULT NULL,
                             platform text DEFAULT NULL, headers jsonb DEFAULT NULL,
                             backoff_base interval DEFAULT NULL, backoff_cap interval DEFAULT NULL,
                             dedupe_window interval DEFAULT NULL, dedupe_by_content boolean DEFAULT NULL)
RETURNS task_spec LANGUAGE sql
AS $$ SELECT ROW(role, payload, dispensary_id, priority, scheduled_for, dedupe_key, max_retries, platform,
                 headers, backoff_base, backoff_cap, dedupe_window, dedupe_by_content)::task_spec $$;

-- pg_temp.made: the tasks a statement makes, as JSON without what differs by nature (ids,
-- timestamps), and then undone, so that the next form meets no dedupe key of this one.
CREATE FUNCTION pg_temp.made(sql text) RETURNS jsonb LANGUAGE plpgsql
AS $$
DECLARE
    v_made jsonb;
BEGIN
    BEGIN
        EXECUTE format('SELECT jsonb_agg(to_jsonb(t) - ARRAY[''id'', ''created_at'', ''updated_at''] ORDER BY t.id)
                        FROM (%s) AS t', sql) INTO v_made;
        RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'undo';
    EXCEPTION WHEN assert_failure THEN
        RETURN v_made;
    END;
END;
$$;

-- pg_temp.refused_alike: enqueue_specs and enqueue_tasks refuse a batch with the same error, and
-- write nothing.
CREATE FUNCTION pg_temp.refused_alike(typed text, json text, description text) RETURNS SETOF text
LANGUAGE plpgsql
AS $$
DECLARE
    v_before bigint := (SELECT count(*) FROM worker_tasks);
    v_typed  text := tests.error_of(typed);
BEGIN
    RETURN NEXT isnt(v_typed, 'no error', 'enqueue_specs should refuse ' || description);
    RETURN NEXT is(v_typed, tests.error_of(json), 'enqueue_specs should refuse ' || description || ' as enqueue_tasks does');
    RETURN NEXT is((SELECT count(*) FROM worker_tasks), v_before, 'Should write no task for ' || description);
END;
$$;

/****************************************************************************/
-- structure

SELECT has_type('task_spec', 'Should have the composite type task_spec');
SELECT is(
    (SELECT array_agg(a.attname::text || ' ' || format_type(a.atttypid, a.atttypmod) ORDER BY a.attnum)
     FROM pg_attribute a WHERE a.attrelid = 'task_spec'::regclass AND a.attnum > 0),
    ARRAY['role text', 'payload jsonb', 'dispensary_id integer', 'priority integer',
          'scheduled_for timestamp with time zone', 'dedupe_key text', 'max_retries integer', 'platform text',
          'headers jsonb', 'backoff_base interval', 'backoff_cap interval', 'dedupe_window interval',
          'dedupe_by_content boolean'],
    'Should type every field a spec can carry, in enqueue_task''s order');
SELECT function_returns('enqueue_specs', ARRAY['task_spec[]'], 'setof worker_tasks',
    'Should have enqueue_specs(task_spec[]) returning the tasks');

/****************************************************************************/
-- the same tasks, whichever form carries the specs

SELECT is(
    pg_temp.made(format($$SELECT * FROM enqueue_specs(ARRAY[
        pg_temp.spec('typed_free'),
        pg_temp.spec('typed_store', '{"a": [1, 2.50]}', %s, priority := -7, max_retries := 0, platform := 'jane'),
        pg_temp.spec('typed_free', scheduled_for := '2031-02-03 04:05:06.789012+00', headers := '{"traceparent": "00-x"}'),
        pg_temp.spec('typed_free', backoff_base := interval '1.5 seconds', backoff_cap := interval '90 seconds')])$$,
        :store_id)),
    pg_temp.made(format($$SELECT * FROM enqueue_tasks('[
        {"role": "typed_free"},
        {"role": "typed_store", "payload": {"a": [1, 2.50]}, "dispensary_id": %s, "priority": -7,
         "max_retries": 0, "platform": "jane"},
        {"role": "typed_free", "scheduled_for": "2031-02-03T04:05:06.789012Z", "headers": {"traceparent": "00-x"}},
        {"role": "typed_free", "backoff_base": 1.5, "backoff_cap": 90}]')$$, :store_id)),
    'Typed and JSON specs should make the same tasks: defaults, store, priority, retries, platform, time, headers, backoffs');
SELECT is(
    pg_temp.made(format($$SELECT * FROM enqueue_specs(ARRAY[pg_temp.spec('typed_store', dispensary_id := %s)])$$, :store_id)),
    pg_temp.made(format($$SELECT * FROM enqueue_task('typed_store', dispensary_id := %s)$$, :store_id)),
    'enqueue_specs of one spec should make the task enqueue_task makes');
SELECT is(
    pg_temp.made($$SELECT * FROM enqueue_specs(ARRAY[
        pg_temp.spec('typed_free', '{"b": 1, "a": 2}', dedupe_by_content := true),
        pg_temp.spec('typed_free', dedupe_key := 'typed:windowed', dedupe_window := interval '1 hour')])$$),
    pg_temp.made($$SELECT * FROM enqueue_tasks('[
        {"role": "typed_free", "payload": {"a": 2, "b": 1}, "dedupe_by_content": true},
        {"role": "typed_free", "dedupe_key": "typed:windowed", "dedupe_window": "1 hour"}]')$$),
    'Typed and JSON specs should make the same keyed tasks: by content and with a window');
SELECT is(
    pg_temp.made($$SELECT * FROM enqueue_specs(ARRAY[pg_temp.spec('typed_free', 'null', headers := '{}')])$$),
    pg_temp.made($$SELECT * FROM enqueue_tasks('[{"role": "typed_free", "payload": null, "headers": {}}]')$$),
    'A JSON null payload and empty headers should be stored alike: {} and NULL');

SELECT is((SELECT count(*) FROM enqueue_specs('{}')), 0::bigint, 'An empty array should enqueue nothing');

-- Dedupe keys within and across typed batches
SELECT id AS keyed_id FROM enqueue_specs(ARRAY[pg_temp.spec('typed_free', '{"n": 1}', dedupe_key := 'typed:key')]) \gset
SELECT is(
    (SELECT array_agg(id) FROM enqueue_specs(ARRAY[pg_temp.spec('typed_free', '{"n": 2}', dedupe_key := 'typed:key'),
                                                   pg_temp.spec('typed_free', '{"n": 3}', dedupe_key := 'typed:key')])),
    ARRAY[:keyed_id]::bigint[],
    'Specs whose key has an active task should yield that task, once');
SELECT is((SELECT count(*) FROM worker_tasks WHERE dedupe_key = 'typed:key'), 1::bigint,
    'Should make no second task for an active key');
SELECT is(
    (SELECT count(DISTINCT id) FROM enqueue_specs(ARRAY[pg_temp.spec('typed_free', dedupe_key := 'typed:new'),
                                                        pg_temp.spec('typed_free', dedupe_key := 'typed:new')])),
    1::bigint, 'Two specs of one new key in a batch should make one task');
SELECT is(
    (SELECT array_agg(role ORDER BY id) FROM enqueue_specs(ARRAY[pg_temp.spec('typed_store', dispensary_id := :store_id),
                                                                  pg_temp.spec('typed_free', priority := 3),
                                                                  pg_temp.spec('typed_free', dedupe_key := 'typed:mixed')])),
    ARRAY['typed_store', 'typed_free', 'typed_free'],
    'A batch of keyed and unkeyed specs should return its tasks in spec order');

/****************************************************************************/
-- the same refusals: typed and JSON specs, the second of a batch

SELECT pg_temp.refused_alike($$SELECT enqueue_specs(ARRAY[pg_temp.spec('typed_free'), pg_temp.spec(NULL)])$$,
    $$SELECT enqueue_tasks('[{"role": "typed_free"}, {"payload": {}}]')$$, 'a spec without a role');
SELECT pg_temp.refused_alike($$SELECT enqueue_specs(ARRAY[pg_temp.spec('typed_free'), pg_temp.spec('typed_nope')])$$,
    $$SELECT enqueue_tasks('[{"role": "typed_free"}, {"role": "typed_nope"}]')$$, 'an unknown role');
SELECT pg_temp.refused_alike($$SELECT enqueue_specs(ARRAY[pg_temp.spec('typed_free'), pg_temp.spec('typed_free', '[1]')])$$,
    $$SELECT enqueue_tasks('[{"role": "typed_free"}, {"role": "typed_free", "payload": [1]}]')$$, 'a payload that is not an object');
SELECT pg_temp.refused_alike(
    $$SELECT enqueue_specs(ARRAY[pg_temp.spec('typed_free'), pg_temp.spec('typed_free', jsonb_build_object('x', repeat('a', 400)))])$$,
    $$SELECT enqueue_tasks(jsonb_build_array('{"role": "typed_free"}'::jsonb,
                                             jsonb_build_object('role', 'typed_free', 'payload', jsonb_build_object('x', repeat('a', 400)))))$$,
    'a payload over the role''s limit');
SELECT pg_temp.refused_alike($$SELECT enqueue_specs(ARRAY[pg_temp.spec('typed_free'), pg_temp.spec('typed_store')])$$,
    $$SELECT enqueue_tasks('[{"role": "typed_free"}, {"role": "typed_store"}]')$$, 'a store role''s task without a store');
SELECT pg_temp.refused_alike($$SELECT enqueue_specs(ARRAY[pg_temp.spec('typed_free'), pg_temp.spec('typed_store', dispensary_id := 2147483647)])$$,
    $$SELECT enqueue_tasks('[{"role": "typed_free"}, {"role": "typed_store", "dispensary_id": 2147483647}]')$$, 'a store that does not exist');
SELECT pg_temp.refused_alike($$SELECT enqueue_specs(ARRAY[pg_temp.spec('typed_free'), pg_temp.spec('typed_free', priority := 101)])$$,
    $$SELECT enqueue_tasks('[{"role": "typed_free"}, {"role": "typed_free", "priority": 101}]')$$, 'a priority out of range');
SELECT pg_temp.refused_alike($$SELECT enqueue_specs(ARRAY[pg_temp.spec('typed_free'), pg_temp.spec('typed_free', dedupe_key := '')])$$,
    $$SELECT enqueue_tasks('[{"role": "typed_free"}, {"role": "typed_free", "dedupe_key": ""}]')$$, 'an empty dedupe key');
SELECT pg_temp.refused_alike($$SELECT enqueue_specs(ARRAY[pg_temp.spec('typed_free'), pg_temp.spec('typed_free', headers := '{"n": 1}')])$$,
    $$SELECT enqueue_tasks('[{"role": "typed_free"}, {"role": "typed_free", "headers": {"n": 1}}]')$$, 'a header that is not a string');
SELECT pg_temp.refused_alike(
    $$SELECT enqueue_specs(ARRAY[pg_temp.spec('typed_free'), pg_temp.spec('typed_free', backoff_base := interval '10 seconds', backoff_cap := interval '5 seconds')])$$,
    $$SELECT enqueue_tasks('[{"role": "typed_free"}, {"role": "typed_free", "backoff_base": 10, "backoff_cap": 5}]')$$,
    'a backoff cap below its base');
SELECT pg_temp.refused_alike(
    $$SELECT enqueue_specs(ARRAY[pg_temp.spec('typed_free'), pg_temp.spec('typed_free', dedupe_key := 'k', dedupe_by_content := true)])$$,
    $$SELECT enqueue_tasks('[{"role": "typed_free"}, {"role": "typed_free", "dedupe_key": "k", "dedupe_by_content": true}]')$$,
    'a dedupe key and dedupe_by_content');
SELECT pg_temp.refused_alike(
    $$SELECT enqueue_specs(ARRAY[pg_temp.spec('typed_free'), pg_temp.spec('typed_free', dedupe_window := interval '1 hour')])$$,
    $$SELECT enqueue_tasks('[{"role": "typed_free"}, {"role": "typed_free", "dedupe_window": "1 hour"}]')$$,
    'a dedupe window without a key');

/****************************************************************************/
-- what only a type or only JSON can get wrong

SELECT throws_ok($$SELECT enqueue_specs(NULL)$$, '22004', 'tasks must be an array of task specs, not NULL',
    'Should refuse a NULL batch');
SELECT throws_ok($$SELECT enqueue_specs(array_fill(pg_temp.spec('typed_free'), ARRAY[10001]))$$, '54000',
    'tasks has 10001 tasks; at most 10000 go in one call', 'Should refuse more than 10000 specs in one call');
SELECT throws_ok($$SELECT enqueue_specs(ARRAY[pg_temp.spec('typed_free', scheduled_for := 'infinity')])$$, '22007',
    'tasks[0]: scheduled_for "infinity" is not a timestamp', 'Should refuse an infinite time');
SELECT throws_ok($$SELECT enqueue_specs(ARRAY[pg_temp.spec('typed_free', backoff_base := interval '2 years')])$$, '22023',
    'tasks[0]: backoff_base must be a number of seconds, more than 0 and at most 31557600 (a year), not 63115200',
    'Should name a backoff in seconds, as JSON specs give it');
SELECT throws_ok($$SELECT enqueue_tasks('[{"role": "typed_free", "priority": 1e12}]')$$, '22003',
    'tasks[0]: priority 1000000000000 is out of range', 'Should refuse a JSON priority too big for an integer as out of range');
SELECT throws_like($$SELECT enqueue_tasks('[{"role": "typed_free", "backoff_cap": 1e300}]')$$,
    'tasks[0]: backoff_cap must be a number of seconds, more than 0 and at most 31557600 (a year), not 1000%',
    'Should refuse a JSON backoff too big for an interval as out of range');

SELECT * FROM finish();
ROLLBACK;
