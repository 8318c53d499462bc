-- enqueue_task and enqueue_tasks: what a new task looks like, deduplication, and bad input, which
-- must raise a precise error and write nothing. Also complete_task's follow-ups, which go through
-- the same validation.
BEGIN;
SELECT plan(167);

-- Test-local roles: their defaults differ from the column defaults, so a value that comes from
-- the role is told apart from one that comes from the table; and no other task can be claimed
-- from them.
INSERT INTO task_roles (role, requires_store, max_retries, max_payload_bytes)
VALUES ('enqueue_store_role', true, 7, 65536),
       ('enqueue_free_role', false, 5, 100),
       ('enqueue_claim_role', false, 2, 65536);

SELECT tests.make_store(name := 'Enqueue Store', platform := 'dutchie') AS store_id \gset
SELECT tests.make_store(name := 'Enqueue Store Without Platform', platform := NULL) AS bare_store_id \gset

/****************************************************************************/
-- enqueue_task: the new task

CREATE TEMP TABLE one_task AS
SELECT * FROM enqueue_task('enqueue_store_role', '{"reason": "manual"}', :store_id);

SELECT results_eq(
    $$SELECT role, dispensary_id, platform, status, priority, scheduled_for, payload, dedupe_key,
             max_retries, retry_count, attempt, worker_id, claimed_at, completed_at, result,
             created_at, updated_at
      FROM one_task$$,
    format($$VALUES ('enqueue_store_role'::text, %s, 'dutchie'::text, 'pending'::text, 0, now(),
                     '{"reason": "manual"}'::jsonb, NULL::text, 7, 0, 0, NULL::text, NULL::timestamptz,
                     NULL::timestamptz, NULL::jsonb, now(), now())$$, :store_id),
    'Should return a pending task with the role''s max_retries, the store''s platform, now as scheduled_for');
SELECT results_eq(
    'SELECT * FROM one_task',
    'SELECT t.* FROM worker_tasks t JOIN one_task o ON o.id = t.id',
    'Should return the row as stored');

SELECT results_eq(
    format($$SELECT role, platform, priority, payload, max_retries, dedupe_key
             FROM enqueue_task(role := 'enqueue_store_role', dispensary_id := %s, priority := -5,
                               payload := '{"a": [1, 2]}', platform := 'weedmaps', max_retries := 0,
                               dedupe_key := 'enqueue:named')$$, :store_id),
    $$VALUES ('enqueue_store_role'::text, 'weedmaps'::text, -5, '{"a": [1, 2]}'::jsonb, 0, 'enqueue:named'::text)$$,
    'Should take named arguments, a given platform over the store''s, and max_retries 0 over the role''s');
SELECT results_eq(
    $$SELECT role, dispensary_id, platform, payload, max_retries FROM enqueue_task('enqueue_free_role')$$,
    $$VALUES ('enqueue_free_role'::text, NULL::integer, NULL::text, '{}'::jsonb, 5)$$,
    'Should enqueue a storeless task with an empty payload and no platform');
SELECT results_eq(
    format($$SELECT platform FROM enqueue_task('enqueue_store_role', dispensary_id := %s)$$, :bare_store_id),
    $$VALUES (NULL::text)$$,
    'Should leave platform NULL when neither the call nor the store names one');
SELECT results_eq(
    $$SELECT scheduled_for, status FROM enqueue_task('enqueue_free_role',
                                                     scheduled_for := now() + interval '90 minutes 0.123456 seconds')$$,
    $$VALUES (now() + interval '90 minutes 0.123456 seconds', 'pending'::text)$$,
    'Should keep a future scheduled_for to the microsecond');
SELECT results_eq(
    $$SELECT scheduled_for FROM enqueue_task('enqueue_free_role', scheduled_for := '2001-02-03 04:05:06+00')$$,
    $$VALUES ('2001-02-03 04:05:06+00'::timestamptz)$$,
    'Should keep a past scheduled_for (ready at once)');
SELECT results_eq(
    $$SELECT priority FROM enqueue_task('enqueue_free_role', priority := 100)
      UNION ALL
      SELECT priority FROM enqueue_task('enqueue_free_role', priority := -100)$$,
    $$VALUES (100), (-100)$$,
    'Should accept the priorities at both ends of the range');
SELECT results_eq(
    $$SELECT octet_length(payload::text) FROM enqueue_task('enqueue_free_role', jsonb_build_object('x', repeat('a', 91)))$$,
    $$VALUES (100)$$,
    'Should accept a payload of exactly the role''s max_payload_bytes');

/****************************************************************************/
-- enqueue_tasks: a batch

CREATE TEMP TABLE batch AS
SELECT * FROM enqueue_tasks(format($$[
    {"role": "enqueue_free_role", "payload": {"n": 1}, "priority": 3},
    {"role": "enqueue_store_role", "dispensary_id": %s, "payload": {"n": 2}, "max_retries": 1},
    {"role": "enqueue_free_role", "payload": {"n": 3}, "scheduled_for": "2031-01-01T00:00:00Z", "platform": "leafly"},
    {"role": "enqueue_free_role", "payload": {"n": 4}, "dedupe_key": "enqueue:batch-one"}
]$$, :store_id)::jsonb);

SELECT is((SELECT count(*) FROM batch), 4::bigint, 'Should return one row per spec of a batch');
SELECT results_eq(
    $$SELECT role, dispensary_id, platform, priority, payload, max_retries, scheduled_for, dedupe_key, status
      FROM batch ORDER BY id$$,
    format($$VALUES
        ('enqueue_free_role'::text, NULL::integer, NULL::text, 3, '{"n": 1}'::jsonb, 5, now(), NULL::text, 'pending'::text),
        ('enqueue_store_role', %s, 'dutchie', 0, '{"n": 2}', 1, now(), NULL, 'pending'),
        ('enqueue_free_role', NULL, 'leafly', 0, '{"n": 3}', 5, '2031-01-01T00:00:00Z', NULL, 'pending'),
        ('enqueue_free_role', NULL, NULL, 0, '{"n": 4}', 5, now(), 'enqueue:batch-one', 'pending')$$, :store_id),
    'Should create the batch''s tasks in input order (by id), each with its own fields and the role''s defaults');
SELECT is((SELECT count(*) FROM worker_tasks t JOIN batch b ON b.id = t.id), 4::bigint,
          'Should store every task of the batch');
SELECT is((SELECT count(*) FROM enqueue_tasks('[]')), 0::bigint, 'Should accept an empty batch and create nothing');

SELECT results_eq(
    format($$SELECT role, dispensary_id, platform, priority, payload, max_retries, scheduled_for, dedupe_key
             FROM enqueue_tasks('[{"role": "enqueue_store_role", "dispensary_id": %s, "payload": null,
                                   "priority": null, "max_retries": null, "scheduled_for": null,
                                   "dedupe_key": null, "platform": null}]')$$, :store_id),
    format($$VALUES ('enqueue_store_role'::text, %s, 'dutchie'::text, 0, '{}'::jsonb, 7, now(), NULL::text)$$,
           :store_id),
    'Should treat a JSON null field as absent (defaults from the role, the store and the table)');
SELECT results_eq(
    $$SELECT dispensary_id, platform FROM enqueue_tasks('[{"role": "enqueue_free_role", "dispensary_id": null}]')$$,
    $$VALUES (NULL::integer, NULL::text)$$,
    'Should treat a JSON null dispensary_id as no store');
SELECT results_eq(
    $$SELECT priority, max_retries FROM enqueue_tasks('[{"role": "enqueue_free_role", "priority": 2.0, "max_retries": 4.0}]')$$,
    $$VALUES (2, 4)$$,
    'Should accept whole numbers written with a fraction part (2.0)');

/****************************************************************************/
-- dedupe

SELECT id AS dedupe_id FROM enqueue_task('enqueue_claim_role', '{"first": true}', dedupe_key := 'enqueue:dedupe') \gset

SELECT results_eq(
    $$SELECT id, payload FROM enqueue_task('enqueue_claim_role', '{"second": true}', dedupe_key := 'enqueue:dedupe')$$,
    format($$VALUES (%s::bigint, '{"first": true}'::jsonb)$$, :dedupe_id),
    'Should return the pending task that has the dedupe key, unchanged');
SELECT is((SELECT count(*) FROM worker_tasks WHERE dedupe_key = 'enqueue:dedupe'), 1::bigint,
          'Should not create a second task for an active dedupe key');
SELECT results_eq(
    $$SELECT id FROM enqueue_tasks('[{"role": "enqueue_claim_role", "dedupe_key": "enqueue:dedupe"}]')$$,
    format($$VALUES (%s::bigint)$$, :dedupe_id),
    'Should return the active task for a batch spec with its dedupe key');

SELECT results_eq(
    $$SELECT count(*), count(DISTINCT id), min(payload::text)
      FROM enqueue_tasks('[{"role": "enqueue_free_role", "dedupe_key": "enqueue:twice", "payload": {"n": 1}},
                           {"role": "enqueue_free_role", "dedupe_key": "enqueue:twice", "payload": {"n": 2}}]')$$,
    $$VALUES (1::bigint, 1::bigint, '{"n": 1}')$$,
    'Should create one task, from the first spec, for two specs of a batch with one dedupe key');
SELECT is((SELECT count(*) FROM worker_tasks WHERE dedupe_key = 'enqueue:twice'), 1::bigint,
          'Should store one task for two specs of a batch with one dedupe key');

CREATE TEMP TABLE mixed AS
SELECT * FROM enqueue_tasks('[{"role": "enqueue_free_role", "payload": {"mixed": 1}},
                              {"role": "enqueue_claim_role", "dedupe_key": "enqueue:dedupe"},
                              {"role": "enqueue_free_role", "payload": {"mixed": 3}}]');
SELECT results_eq(
    format('SELECT id = %s, payload FROM mixed ORDER BY id', :dedupe_id),
    $$VALUES (true, '{"first": true}'::jsonb), (false, '{"mixed": 1}'), (false, '{"mixed": 3}')$$,
    'Should return the existing task beside the new ones of a batch, all ordered by id');

SELECT (claim_task('enqueue_claim_role', 'w-dedupe')).id = :dedupe_id AS claimed_it \gset
SELECT ok(:'claimed_it'::boolean, 'Should claim the deduplicated task (fixture)');
SELECT results_eq(
    $$SELECT id, status FROM enqueue_task('enqueue_claim_role', dedupe_key := 'enqueue:dedupe')$$,
    format($$VALUES (%s::bigint, 'claimed'::text)$$, :dedupe_id),
    'Should return the claimed task that has the dedupe key: claimed is active too');
SELECT is((complete_task(:dedupe_id, 'w-dedupe', 1, tests.claim_token(:dedupe_id, 1), '{}')).status, 'completed', 'Should complete the deduplicated task (fixture)');

CREATE TEMP TABLE after_done AS
SELECT * FROM enqueue_task('enqueue_claim_role', '{"third": true}', dedupe_key := 'enqueue:dedupe');
SELECT results_eq(
    format('SELECT id <> %s, status, payload FROM after_done', :dedupe_id),
    $$VALUES (true, 'pending'::text, '{"third": true}'::jsonb)$$,
    'Should create a new task for a dedupe key whose task has completed');
SELECT results_eq(
    $$SELECT status FROM worker_tasks WHERE dedupe_key = 'enqueue:dedupe' ORDER BY id$$,
    $$VALUES ('completed'::text), ('pending')$$,
    'Should keep the completed task beside the new one');
SELECT results_eq(
    $$SELECT id FROM enqueue_task('enqueue_claim_role', dedupe_key := 'enqueue:dedupe')$$,
    'SELECT id FROM after_done',
    'Should deduplicate against the new active task, not the completed one');
SELECT results_eq(
    $$SELECT role, id = (SELECT id FROM after_done) FROM enqueue_task('enqueue_free_role', dedupe_key := 'enqueue:dedupe')$$,
    $$VALUES ('enqueue_claim_role'::text, true)$$,
    'Should deduplicate across roles: the key names the task, whatever the role');

/****************************************************************************/
-- bad input: a precise error, and nothing written

-- roles
SELECT tests.rejects($$SELECT enqueue_task('no_such_role')$$,
    '22023', 'unknown role ''no_such_role''', 'an unknown role');
SELECT is(tests.error_hint($$SELECT enqueue_task('no_such_role')$$),
          'Known roles: ' || (SELECT string_agg(role, ', ' ORDER BY role) FROM task_roles) || '.',
          'Should list the known roles, sorted, in the hint for an unknown role');
SELECT ok(tests.error_hint($$SELECT enqueue_task('no_such_role')$$)
          LIKE 'Known roles: %product_resync, %store_discovery%',
          'Should name the seeded roles in the hint for an unknown role');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "no_such_role"}]')$$,
    '22023', 'tasks[0]: unknown role ''no_such_role''', 'an unknown role in a batch');
SELECT tests.rejects($$SELECT enqueue_task(NULL)$$,
    '22023', 'role is required and must be a string', 'a NULL role');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"payload": {}}]')$$,
    '22023', 'tasks[0]: role is required and must be a string', 'a spec without a role');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": 5}]')$$,
    '22023', 'tasks[0]: role is required and must be a string', 'a role that is not a string');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": null}]')$$,
    '22023', 'tasks[0]: role is required and must be a string', 'a JSON null role');
SELECT tests.rejects($$SELECT enqueue_task('')$$,
    '22023', 'unknown role ''''', 'an empty role');
SELECT tests.rejects($$SELECT enqueue_task('Store_Discovery')$$,
    '22023', 'unknown role ''Store_Discovery''', 'a role in the wrong case');

-- hostile strings are only ever unknown roles, quoted in the message
SELECT tests.rejects($$SELECT enqueue_task('x''; DROP TABLE worker_tasks; --')$$,
    '22023', 'unknown role ''x''''; DROP TABLE worker_tasks; --''', 'a role carrying SQL');
SELECT tests.rejects($$SELECT enqueue_task('%s %L %I')$$,
    '22023', 'unknown role ''%s %L %I''', 'a role carrying format specifiers');
SELECT tests.rejects($$SELECT enqueue_task('🚀 émoji')$$,
    '22023', 'unknown role ''🚀 émoji''', 'a role of emoji and accents');
SELECT tests.rejects($$SELECT enqueue_task('a\b')$$,
    '22023', 'unknown role E''a\\b''', 'a role with a backslash');
SELECT tests.rejects($$SELECT enqueue_task('"store_discovery"')$$,
    '22023', 'unknown role ''"store_discovery"''', 'a role in double quotes');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "line\nbreak"}]')$$,
    '22023', E'tasks[0]: unknown role ''line\nbreak''', 'a role with a line break');
SELECT is((SELECT count(*) FROM pg_class WHERE relname = 'worker_tasks' AND relkind = 'r'), 1::bigint,
          'Should still have worker_tasks after the hostile roles');

-- specs
SELECT tests.rejects($$SELECT enqueue_tasks('[5]')$$,
    '22023', 'tasks[0]: a task must be a JSON object, not number', 'a spec that is a number');
SELECT tests.rejects($$SELECT enqueue_tasks('["store_discovery"]')$$,
    '22023', 'tasks[0]: a task must be a JSON object, not string', 'a spec that is a string');
SELECT tests.rejects($$SELECT enqueue_tasks('[null]')$$,
    '22023', 'tasks[0]: a task must be a JSON object, not null', 'a spec that is null');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "store_discovery", "prio": 1}]')$$,
    '22023', 'tasks[0]: unknown field ''prio''', 'an unknown field');
SELECT is(tests.error_hint($$SELECT enqueue_tasks('[{"role": "store_discovery", "prio": 1}]')$$),
          'Allowed fields: role, payload, dispensary_id, priority, scheduled_for, dedupe_key, max_retries, platform, headers,'
          ' backoff_base, backoff_cap, dedupe_window, dedupe_by_content.',
          'Should list the allowed fields in the hint for an unknown field');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "store_discovery", "zeta": 1, "alpha": 2}]')$$,
    '22023', 'tasks[0]: unknown fields ''alpha'', ''zeta''', 'two unknown fields, named in order');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "store_discovery", "status": "completed"}]')$$,
    '22023', 'tasks[0]: unknown field ''status''', 'a spec that tries to set the status');

-- tasks itself
SELECT tests.rejects($$SELECT enqueue_tasks('{"role": "store_discovery"}')$$,
    '22023', 'tasks must be a JSON array of task objects, not object', 'tasks that is an object');
SELECT tests.rejects($$SELECT enqueue_tasks('"store_discovery"')$$,
    '22023', 'tasks must be a JSON array of task objects, not string', 'tasks that is a string');
SELECT tests.rejects($$SELECT enqueue_tasks(NULL)$$,
    '22023', 'tasks must be a JSON array of task objects, not NULL', 'NULL tasks');
SELECT tests.rejects(
    $$SELECT enqueue_tasks((SELECT jsonb_agg(jsonb_build_object('role', 'enqueue_free_role')) FROM generate_series(1, 10001)))$$,
    '54000', 'tasks has 10001 tasks; at most 10000 go in one call', 'a batch of 10001 tasks');

-- payload
SELECT tests.rejects($$SELECT enqueue_task('store_discovery', '[1, 2]')$$,
    '22023', 'payload must be a JSON object, not array', 'an array payload');
SELECT tests.rejects($$SELECT enqueue_task('store_discovery', '"text"')$$,
    '22023', 'payload must be a JSON object, not string', 'a string payload');
SELECT tests.rejects($$SELECT enqueue_task('store_discovery', '42')$$,
    '22023', 'payload must be a JSON object, not number', 'a number payload');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "store_discovery", "payload": [1]}]')$$,
    '22023', 'tasks[0]: payload must be a JSON object, not array', 'an array payload in a batch');
SELECT tests.rejects($$SELECT enqueue_task('enqueue_free_role', jsonb_build_object('x', repeat('a', 92)))$$,
    '54000', 'payload is 101 bytes; role enqueue_free_role allows at most 100',
    'a payload one byte over the role''s max_payload_bytes');
SELECT tests.rejects($$SELECT enqueue_task('store_discovery', jsonb_build_object('x', repeat('a', 70000)))$$,
    '54000', 'payload is 70009 bytes; role store_discovery allows at most 65536',
    'a 70 kB payload for a seeded role');
SELECT tests.rejects($$SELECT enqueue_task('enqueue_free_role', jsonb_build_object('x', repeat('é', 46)))$$,
    '54000', 'payload is 101 bytes; role enqueue_free_role allows at most 100',
    'a payload over the limit in bytes though not in characters');

-- dispensary_id
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "product_resync", "dispensary_id": "7"}]')$$,
    '22023', 'tasks[0]: dispensary_id must be an integer, not "7"', 'a dispensary_id that is a string');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "product_resync", "dispensary_id": 1.5}]')$$,
    '22023', 'tasks[0]: dispensary_id must be an integer, not 1.5', 'a fractional dispensary_id');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "product_resync", "dispensary_id": 99999999999}]')$$,
    '22023', 'tasks[0]: dispensary_id must be an integer, not 99999999999', 'a dispensary_id beyond integer range');
SELECT coalesce(max(id), 0) + 1 AS missing_store_id FROM dispensaries \gset
SELECT tests.rejects(format($$SELECT enqueue_task('product_resync', dispensary_id := %s)$$, :missing_store_id),
    '23503', format('dispensary %s does not exist', :missing_store_id), 'a store that does not exist');
SELECT tests.rejects(format($$SELECT enqueue_tasks('[{"role": "store_discovery", "dispensary_id": %s}]')$$, :missing_store_id),
    '23503', format('tasks[0]: dispensary %s does not exist', :missing_store_id),
    'a store that does not exist, for a role that needs none');
SELECT tests.rejects($$SELECT enqueue_task('product_resync')$$,
    '22023', 'role product_resync needs a dispensary_id', 'a store role without a store');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "product_refresh", "dispensary_id": null}]')$$,
    '22023', 'tasks[0]: role product_refresh needs a dispensary_id', 'a store role with a JSON null store');

-- priority
SELECT tests.rejects($$SELECT enqueue_task('store_discovery', priority := 101)$$,
    '22003', 'priority 101 is out of range', 'priority 101');
SELECT tests.rejects($$SELECT enqueue_task('store_discovery', priority := -101)$$,
    '22003', 'priority -101 is out of range', 'priority -101');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "store_discovery", "priority": "high"}]')$$,
    '22023', 'tasks[0]: priority must be an integer, not "high"', 'a priority that is a string');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "store_discovery", "priority": 2.5}]')$$,
    '22023', 'tasks[0]: priority must be an integer, not 2.5', 'a fractional priority');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "store_discovery", "priority": true}]')$$,
    '22023', 'tasks[0]: priority must be an integer, not true', 'a boolean priority');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "store_discovery", "priority": 3000000000}]')$$,
    '22003', 'tasks[0]: priority 3000000000 is out of range', 'a priority beyond the integer range');

-- max_retries
SELECT tests.rejects($$SELECT enqueue_task('store_discovery', max_retries := -1)$$,
    '22023', 'max_retries -1 is out of range', 'max_retries -1');
SELECT tests.rejects($$SELECT enqueue_task('store_discovery', max_retries := 1001)$$,
    '22023', 'max_retries 1001 is out of range', 'max_retries 1001');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "store_discovery", "max_retries": "3"}]')$$,
    '22023', 'tasks[0]: max_retries must be an integer, not "3"', 'a max_retries that is a string');

-- scheduled_for
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "store_discovery", "scheduled_for": "tomorrow"}]')$$,
    '22007', 'tasks[0]: scheduled_for "tomorrow" is not a timestamp', 'a scheduled_for that is not a timestamp');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "store_discovery", "scheduled_for": "2026-13-45T00:00:00Z"}]')$$,
    '22007', 'tasks[0]: scheduled_for "2026-13-45T00:00:00Z" is not a timestamp', 'a scheduled_for with month 13');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "store_discovery", "scheduled_for": 1700000000}]')$$,
    '22007', 'tasks[0]: scheduled_for 1700000000 is not a timestamp', 'a scheduled_for given as a number');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "store_discovery", "scheduled_for": "2026-01-01 +99:99"}]')$$,
    '22007', 'tasks[0]: scheduled_for "2026-01-01 +99:99" is not a timestamp',
    'a scheduled_for with a UTC offset out of range');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "store_discovery", "scheduled_for": "2026-01-01 12:00 Mars/Olympus"}]')$$,
    '22007', 'tasks[0]: scheduled_for "2026-01-01 12:00 Mars/Olympus" is not a timestamp',
    'a scheduled_for in an unknown time zone');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "store_discovery", "scheduled_for": "2026-01-01 BC"}]')$$,
    '22007', 'tasks[0]: scheduled_for "2026-01-01 BC" is not a timestamp', 'a scheduled_for before Christ');
SELECT tests.rejects($$SELECT enqueue_task('store_discovery', scheduled_for := 'infinity')$$,
    '22007', 'scheduled_for "infinity" is not a timestamp', 'an infinite scheduled_for');

-- dedupe_key and platform
SELECT tests.rejects($$SELECT enqueue_task('store_discovery', dedupe_key := '')$$,
    '22023', 'dedupe_key must be a string of 1 to 255 characters, not ""', 'an empty dedupe_key');
SELECT tests.rejects($$SELECT enqueue_task('store_discovery', dedupe_key := repeat('k', 256))$$,
    '22023', 'dedupe_key must be a string of 1 to 255 characters, not "' || repeat('k', 59),
    'a dedupe_key of 256 characters');
SELECT lives_ok($$SELECT enqueue_task('enqueue_free_role', dedupe_key := repeat('k', 255))$$,
    'Should accept a dedupe_key of 255 characters');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "store_discovery", "dedupe_key": 5}]')$$,
    '22023', 'tasks[0]: dedupe_key must be a string of 1 to 255 characters, not 5', 'a dedupe_key that is a number');
SELECT tests.rejects($$SELECT enqueue_task('store_discovery', platform := '')$$,
    '22023', 'platform must be a string of 1 to 100 characters, not ""', 'an empty platform');

-- a batch with one bad spec writes none of them
SELECT tests.rejects(
    $$SELECT enqueue_tasks('[{"role": "enqueue_free_role", "payload": {"partial": 0}},
                             {"role": "enqueue_free_role", "payload": {"partial": 1}, "dedupe_key": "enqueue:partial"},
                             {"role": "enqueue_free_role", "payload": {"partial": 2}, "priority": 500}]')$$,
    '22003', 'tasks[2]: priority 500 is out of range', 'a batch whose third spec is bad');
SELECT is((SELECT count(*) FROM worker_tasks WHERE payload ? 'partial' OR dedupe_key = 'enqueue:partial'), 0::bigint,
          'Should write neither good spec of a batch whose third spec is bad');
SELECT tests.rejects(
    $$SELECT enqueue_tasks('[{"role": "enqueue_free_role"}, {"role": "no_such_role"}, {"role": "also_unknown"}]')$$,
    '22023', 'tasks[1]: unknown role ''no_such_role''', 'a batch with two bad specs, naming the first');

/****************************************************************************/
-- complete_task follow-ups: enqueued in the completing transaction, all or nothing

SELECT (tests.make_claimed_task(worker_id := 'w-follow', role := 'enqueue_claim_role')).id AS parent_id \gset
SELECT is((complete_task(:parent_id, 'w-follow', 1, tests.claim_token(:parent_id, 1), '{"products": 3}',
           follow_ups := format('[{"role": "enqueue_store_role", "dispensary_id": %s, "payload": {"follow": 1}},
                                  {"role": "enqueue_free_role", "payload": {"follow": 2}, "dedupe_key": "enqueue:follow"}]',
                                :store_id)::jsonb)).status,
          'completed', 'Should complete a task with follow-ups');
SELECT results_eq(
    $$SELECT role, dispensary_id, platform, status, payload, dedupe_key, max_retries
      FROM worker_tasks WHERE payload ? 'follow' ORDER BY id$$,
    format($$VALUES ('enqueue_store_role'::text, %s, 'dutchie'::text, 'pending'::text, '{"follow": 1}'::jsonb, NULL::text, 7),
                    ('enqueue_free_role', NULL, NULL, 'pending', '{"follow": 2}', 'enqueue:follow', 5)$$, :store_id),
    'Should enqueue the follow-ups in order, with the role''s and store''s defaults');
SELECT results_eq(
    format('SELECT status, result, worker_id FROM worker_tasks WHERE id = %s', :parent_id),
    $$VALUES ('completed'::text, '{"products": 3}'::jsonb, 'w-follow'::text)$$,
    'Should record the result of the task that enqueued follow-ups');

SELECT (tests.make_claimed_task(worker_id := 'w-badfollow', role := 'enqueue_claim_role')).id AS bad_parent_id \gset
SELECT tests.rejects(
    format($$SELECT complete_task(%s, 'w-badfollow', 1, tests.claim_token(%1$s, 1), '{}', '[{"role": "no_such_role"}]')$$, :bad_parent_id),
    '22023', 'follow_ups[0]: unknown role ''no_such_role''', 'a completion with an unknown follow-up role');
SELECT tests.rejects(
    format($$SELECT complete_task(%s, 'w-badfollow', 1, tests.claim_token(%1$s, 1), '{}',
                                  '[{"role": "enqueue_free_role", "payload": {"orphan": 1}}, {"role": "product_resync"}]')$$,
           :bad_parent_id),
    '22023', 'follow_ups[1]: role product_resync needs a dispensary_id', 'a completion whose second follow-up is bad');
SELECT tests.rejects(
    format($$SELECT complete_task(%s, 'w-badfollow', 1, tests.claim_token(%1$s, 1), '{}', '{"role": "enqueue_free_role"}')$$, :bad_parent_id),
    '22023', 'follow_ups must be a JSON array of task objects, not object', 'follow_ups that is not an array');
SELECT results_eq(
    format('SELECT status, result, completed_at, worker_id, attempt FROM worker_tasks WHERE id = %s', :bad_parent_id),
    $$VALUES ('claimed'::text, NULL::jsonb, NULL::timestamptz, 'w-badfollow'::text, 1)$$,
    'Should leave the task claimed, with no result, when a follow-up is bad');
SELECT is((SELECT count(*) FROM worker_tasks WHERE payload ? 'orphan'), 0::bigint,
          'Should enqueue none of the follow-ups when one is bad');
SELECT is((complete_task(:bad_parent_id, 'w-badfollow', 1, tests.claim_token(:bad_parent_id, 1), '{"ok": true}')).status, 'completed',
          'Should still let the worker complete the task after a refused completion');

SELECT * FROM finish();
ROLLBACK;
