-- enqueue_dedupe_windows: dedupe beyond "while active" (issue 17, item 8). A dedupe key with a window
-- holds for the window's period, finished tasks included; periods are aligned to the Unix epoch
-- (an hour's window: 10:00-11:00 UTC, 11:00-12:00, ...). dedupe_by_content makes the key
-- task_spec_hash(role, dispensary_id, payload). Without either, a key holds while its task is
-- active, as before. The clock is set to known times with set_taskpool_clock_offset.
BEGIN;
SELECT plan(67);

INSERT INTO task_roles (role, requires_store, description) VALUES
    ('t56', false, 'pgTAP enqueue_dedupe_windows'),
    ('t56_other', false, 'pgTAP enqueue_dedupe_windows: a second role');
SELECT tests.make_store(name := 'T56 Store', platform := 'dutchie') AS store \gset

-- pg_temp.at: taskpool's clock reads this time (in this transaction).
CREATE FUNCTION pg_temp.at(at timestamptz) RETURNS timestamptz LANGUAGE sql
AS $$ SELECT set_taskpool_clock_offset(at - now()) $$;

-- pg_temp.windowed: the id of the task enqueue_task answers for key with a window.
CREATE FUNCTION pg_temp.windowed(key text, dedupe_window interval DEFAULT interval '1 hour', role text DEFAULT 't56')
RETURNS bigint LANGUAGE sql
AS $$ SELECT id FROM enqueue_task(windowed.role, dedupe_key := windowed.key, dedupe_window := windowed.dedupe_window) $$;

/****************************************************************************/
-- structure

SELECT has_function('task_spec_hash', ARRAY['text', 'integer', 'jsonb'], 'Should have task_spec_hash(role, dispensary_id, payload)');
SELECT volatility_is('task_spec_hash', ARRAY['text', 'integer', 'jsonb'], 'immutable',
    'Should make task_spec_hash IMMUTABLE (the same content, the same key)');
SELECT function_privs_are('public', 'task_spec_hash', ARRAY['text', 'integer', 'jsonb'], 'taskpool_worker', ARRAY[]::text[],
    'Should not let taskpool_worker execute task_spec_hash');
SELECT is(_dedupe_period_start('2030-01-01 10:42:17.5+00', interval '1 hour'), '2030-01-01 10:00:00+00'::timestamptz,
    'Should start an hour''s period on the hour (UTC)');
SELECT is(_dedupe_period_start('2030-01-01 10:42:17+00', interval '1 day'), '2030-01-01 00:00:00+00'::timestamptz,
    'Should start a day''s period at midnight UTC');
SELECT is(_dedupe_period_start('2030-01-01 10:42:17+00', interval '90 minutes'), '2030-01-01 10:30:00+00'::timestamptz,
    'Should align a window of 90 minutes to the epoch (10:30-12:00)');

/****************************************************************************/
-- behaviour: a key with a window holds for its period, finished tasks included

SELECT pg_temp.at('2030-01-01 10:15:00+00') AS clock \gset
SELECT pg_temp.windowed('t56-k1') AS first \gset
SELECT is((SELECT dedupe_window FROM worker_tasks WHERE id = :first), interval '1 hour',
    'Should keep the task''s dedupe window');
SELECT is(pg_temp.windowed('t56-k1'), :first::bigint, 'Should answer the same key in the same period with the same task');
SELECT is((SELECT status FROM cancel_task(:first)), 'cancelled', 'Should cancel the first task');
SELECT is(pg_temp.windowed('t56-k1'), :first::bigint,
    'Should still answer the finished task in its period (finished tasks included)');
SELECT pg_temp.at('2030-01-01 10:59:59.999999+00') AS clock \gset
SELECT is(pg_temp.windowed('t56-k1'), :first::bigint, 'Should answer it up to the end of the period');
SELECT is((SELECT id FROM enqueue_tasks('[{"role": "t56", "dedupe_key": "t56-k1", "dedupe_window": 3600}]')), :first::bigint,
    'Should answer it to enqueue_tasks, the window given as a number of seconds');
SELECT is((SELECT id FROM enqueue_tasks('[{"role": "t56", "dedupe_key": "t56-k1", "dedupe_window": "PT1H"}]')), :first::bigint,
    'Should answer it to enqueue_tasks, the window given in ISO 8601');
SELECT pg_temp.at('2030-01-01 11:00:00+00') AS clock \gset
SELECT pg_temp.windowed('t56-k1') AS second \gset
SELECT isnt(:second::bigint, :first::bigint,
    'Should make a new task in the next period, though the first is not an hour old (periods are aligned)');
SELECT is((SELECT count(*) FROM worker_tasks WHERE dedupe_key = 't56-k1'), 2::bigint,
    'Should hold one task of the key for each period');
SELECT is((SELECT id FROM enqueue_task('t56', dedupe_key := 't56-k1')), :second::bigint,
    'Should answer a key without a window with the key''s active task, as before');

-- A task's window is part of its hold: another length has periods of its own.
SELECT is((SELECT status FROM cancel_task(:second)), 'cancelled', 'Should cancel the second task');
SELECT pg_temp.windowed('t56-k1', interval '2 hours') AS two_hours \gset
SELECT ok(:two_hours::bigint NOT IN (:first, :second),
    'Should make a new task for a window of another length (its own periods: 10:00-12:00)');
SELECT pg_temp.at('2030-01-01 11:59:00+00') AS clock \gset
SELECT is(pg_temp.windowed('t56-k1', interval '2 hours'), :two_hours::bigint,
    'Should answer the two-hour task all through its period');

-- Without a window nothing changed: a finished task does not hold its key.
SELECT tests.make_task(role := 't56', dedupe_key := 't56-plain') AS plain \gset
SELECT is((SELECT status FROM cancel_task(:plain)), 'cancelled', 'Should cancel the task without a window');
SELECT isnt((SELECT id FROM enqueue_task('t56', dedupe_key := 't56-plain')), :plain::bigint,
    'Should make a new task once the key''s task without a window has finished');

-- An active task of the key wins over a finished one of the period: it is the one that will run.
SELECT pg_temp.windowed('t56-k2') AS held \gset
SELECT is((SELECT status FROM cancel_task(:held)), 'cancelled', 'Should cancel the windowed task');
SELECT tests.make_task(role := 't56', dedupe_key := 't56-k2') AS active \gset
SELECT is(pg_temp.windowed('t56-k2'), :active::bigint,
    'Should answer the key''s active task before the finished one that holds the period');

-- Keys are global across roles, with a window as without.
SELECT is(pg_temp.windowed('t56-k2', role := 't56_other'), :active::bigint,
    'Should answer a task of another role with the same key (keys are global)');

-- A batch: one task per key and period, in the batch and against the table.
SELECT pg_temp.at('2030-01-02 08:00:00+00') AS clock \gset
SELECT is((SELECT count(*) FROM enqueue_tasks('[
              {"role": "t56", "dedupe_key": "t56-batch", "dedupe_window": "1 day"},
              {"role": "t56", "dedupe_key": "t56-batch", "dedupe_window": "1 day"},
              {"role": "t56", "dedupe_key": "t56-other", "dedupe_window": "1 day"},
              {"role": "t56"}]')),
    3::bigint, 'Should make one task of each windowed key a batch repeats');
SELECT pg_temp.at('2030-01-02 23:00:00+00') AS clock \gset
SELECT is((SELECT count(*) FROM enqueue_tasks('[{"role": "t56", "dedupe_key": "t56-batch", "dedupe_window": "1 day"},
                                               {"role": "t56", "dedupe_key": "t56-other", "dedupe_window": 86400}]')
           WHERE created_at = '2030-01-02 08:00:00+00'),
    2::bigint, 'Should answer a later batch of the same day with the day''s tasks');
SELECT is((SELECT count(*) FROM worker_tasks WHERE dedupe_key IN ('t56-batch', 't56-other')), 2::bigint,
    'Should have made nothing more');

/****************************************************************************/
-- behaviour: dedupe by content

SELECT matches(task_spec_hash('t56', NULL, '{}'), '^sha256:[0-9a-f]{64}$', 'Should write the hash as sha256: and 64 hex digits');
SELECT is(task_spec_hash('t56', 1, '{"b": [1, 2], "a": {"y": 1, "x": 2}}'), task_spec_hash('t56', 1, '{"a":{"x":2,"y":1},"b":[1,2]}'),
    'Should hash the payload whatever its key order and spacing');
SELECT is(task_spec_hash('t56', NULL, NULL), task_spec_hash('t56', NULL, '{}'), 'Should hash a NULL payload as {}');
SELECT is(task_spec_hash('t56', NULL, 'null'), task_spec_hash('t56', NULL, '{}'), 'Should hash a JSON null payload as {}');
SELECT isnt(task_spec_hash('t56', 1, '{}'), task_spec_hash('t56_other', 1, '{}'), 'Should hash the role');
SELECT isnt(task_spec_hash('t56', 1, '{}'), task_spec_hash('t56', 2, '{}'), 'Should hash the store');
SELECT isnt(task_spec_hash('t56', 1, '{}'), task_spec_hash('t56', NULL, '{}'), 'Should tell a store from none');
SELECT isnt(task_spec_hash('t56', 1, '{"a": 1}'), task_spec_hash('t56', 1, '{"a": "1"}'), 'Should hash the payload''s values');
SELECT is(task_spec_hash('t56', 1, '{}'),
          'sha256:' || encode(sha256(convert_to('["t56", 1, {}]', 'UTF8')), 'hex'),
          'Should hash the text of [role, dispensary_id, payload], so that other tools can compute it');

SELECT id AS by_content FROM enqueue_task('t56', '{"page": 1, "sort": "name"}', dispensary_id := :store,
                                          dedupe_by_content := true) \gset
SELECT is((SELECT dedupe_key FROM worker_tasks WHERE id = :by_content),
          task_spec_hash('t56', :store, '{"sort": "name", "page": 1}'),
          'Should key the task with task_spec_hash(role, dispensary_id, payload)');
SELECT is((SELECT id FROM enqueue_task('t56', '{"sort": "name", "page": 1}', dispensary_id := :store,
                                       dedupe_by_content := true)),
          :by_content::bigint, 'Should answer the same content with the active task');
SELECT is((SELECT id FROM enqueue_tasks(format('[{"role": "t56", "dispensary_id": %s, "payload": {"page": 1, "sort": "name"},
                                                  "dedupe_by_content": true}]', :store)::jsonb)),
          :by_content::bigint, 'Should answer the same content through enqueue_tasks');
SELECT isnt((SELECT id FROM enqueue_task('t56', '{"page": 2, "sort": "name"}', dispensary_id := :store,
                                         dedupe_by_content := true)),
            :by_content::bigint, 'Should make a new task for other content');
SELECT isnt((SELECT id FROM enqueue_task('t56', '{"page": 1, "sort": "name"}', dispensary_id := :store)),
            :by_content::bigint, 'Should not dedupe the same content without dedupe_by_content');

-- Content and a window together: the content's task holds its period, finished or not.
SELECT id AS content_windowed FROM enqueue_task('t56', '{"page": 9}', dedupe_by_content := true,
                                                dedupe_window := interval '1 hour') \gset
SELECT is((SELECT status FROM cancel_task(:content_windowed)), 'cancelled', 'Should cancel the content''s task');
SELECT is((SELECT id FROM enqueue_tasks('[{"role": "t56", "payload": {"page": 9}, "dedupe_by_content": true,
                                           "dedupe_window": "1 hour"}]')),
          :content_windowed::bigint, 'Should answer the same content in the period with its finished task');
SELECT isnt((SELECT id FROM enqueue_task('t56', '{"page": 9}', dedupe_by_content := true)),
            :content_windowed::bigint, 'Should make a new task for the content without a window once it finished');

-- Follow-ups take the same fields.
SELECT tests.make_claimed_task(worker_id := 'w56', role := 't56_other') AS parent \gset
SELECT is((SELECT count(*) FROM complete_task((:'parent'::worker_tasks).id, 'w56', (:'parent'::worker_tasks).attempt, tests.claim_token((:'parent'::worker_tasks).id, (:'parent'::worker_tasks).attempt), '{}',
                                              '[{"role": "t56", "payload": {"page": 1, "sort": "name"},
                                                 "dedupe_by_content": true}]')), 1::bigint,
          'Should complete a task whose follow-up dedupes by content');
SELECT is((SELECT count(*) FROM worker_tasks WHERE dedupe_key = task_spec_hash('t56', NULL, '{"page": 1, "sort": "name"}')),
          1::bigint, 'Should key the follow-up by its content');

/****************************************************************************/
-- bad input: refused with 22023, naming the field, writing nothing

SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "t56", "dedupe_window": "1 hour"}]')$$,
    '22023', 'tasks[0]: dedupe_window needs a dedupe_key or dedupe_by_content', 'a window without a key');
SELECT tests.rejects($$SELECT enqueue_task('t56', dedupe_window := interval '1 hour')$$,
    '22023', 'dedupe_window needs a dedupe_key or dedupe_by_content', 'a window without a key from enqueue_task');
SELECT tests.rejects($$SELECT enqueue_task('t56', dedupe_key := 'k', dedupe_window := interval '0')$$,
    '22023', 'dedupe_window "00:00:00" is out of range', 'a window of 0');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "t56", "dedupe_key": "k", "dedupe_window": "-1 hour"}]')$$,
    '22023', 'tasks[0]: dedupe_window "-1 hour" is out of range', 'a negative window');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "t56", "dedupe_key": "k", "dedupe_window": "367 days"}]')$$,
    '22023', 'tasks[0]: dedupe_window "367 days" is out of range', 'a window of more than 366 days');
SELECT is(tests.error_hint($$SELECT enqueue_tasks('[{"role": "t56", "dedupe_key": "k", "dedupe_window": 0.5}]')$$),
    'A dedupe window goes from 1 second to 366 days.', 'Should say the bounds of a window in the hint');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "t56", "dedupe_key": "k", "dedupe_window": "soon"}]')$$,
    '22023', 'tasks[0]: dedupe_window must be an interval or a number of seconds, not "soon"', 'a window that is not an interval');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "t56", "dedupe_key": "k", "dedupe_window": true}]')$$,
    '22023', 'tasks[0]: dedupe_window must be an interval or a number of seconds, not true', 'a window that is a boolean');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "t56", "dedupe_by_content": "yes"}]')$$,
    '22023', 'tasks[0]: dedupe_by_content must be true or false, not "yes"', 'dedupe_by_content that is not a boolean');
SELECT tests.rejects($$SELECT enqueue_task('t56', dedupe_key := 'k', dedupe_by_content := true)$$,
    '22023', 'give a dedupe_key or dedupe_by_content, not both', 'a key and dedupe_by_content');
SELECT throws_ok($$SELECT task_spec_hash(NULL, 1, '{}')$$, '22023', 'task_spec_hash needs a role',
    'Should refuse task_spec_hash without a role');
SELECT throws_ok($$SELECT task_spec_hash('t56', 1, '[1]')$$, '22023', 'payload must be a JSON object, not array',
    'Should refuse task_spec_hash of a payload that is not an object');

SELECT * FROM finish();
ROLLBACK;
