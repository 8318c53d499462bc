-- lifecycle_error_data: fail_task keeps the attempt's error_data (pyworker: a command's exit code,
-- signal and stderr tail; a Python handler's exception type) with that attempt in
-- worker_task_attempts.error_data. A JSON object of at most 16384 bytes as text; anything else is
-- refused with 22023 and changes nothing. Calls without it work as before.
BEGIN;
SELECT plan(26);

INSERT INTO task_roles (role, description, max_retries) VALUES
    ('t40_data', 'pgTAP lifecycle_error_data: what fail_task keeps', 3);

/****************************************************************************/
-- structure

SELECT has_column('worker_task_attempts', 'error_data', 'Should have worker_task_attempts.error_data');
SELECT col_type_is('worker_task_attempts', 'error_data', 'jsonb',
    'Should type worker_task_attempts.error_data as jsonb');
SELECT col_is_null('worker_task_attempts', 'error_data',
    'Should let worker_task_attempts.error_data be NULL: not every attempt has data');
SELECT has_function('fail_task',
    ARRAY['bigint', 'text', 'integer', 'uuid', 'text', 'boolean', 'timestamp with time zone', 'text', 'jsonb'],
    'Should have fail_task(bigint, text, integer, uuid, text, boolean, timestamptz, text, jsonb)');
SELECT hasnt_function('fail_task',
    ARRAY['bigint', 'text', 'integer', 'uuid', 'text', 'boolean', 'timestamp with time zone', 'text'],
    'Should no longer have the seven-argument fail_task, which a call without error_data would find ambiguous');

/****************************************************************************/
-- behaviour: the data go with their attempt

SELECT id AS cmd_id, attempt AS cmd_attempt
FROM tests.make_claimed_task(worker_id := 'w40', role := 't40_data', started := true) \gset
SELECT is(
    (SELECT status FROM fail_task(:cmd_id, 'w40', :cmd_attempt, tests.claim_token(:cmd_id, :cmd_attempt), 'CommandFailed: command exited with status 3',
                                  error_data := '{"exit_code": 3, "signal": null, "stderr_tail": "no such store"}')),
    'pending', 'Should retry a task failed with error_data as without it');
SELECT results_eq(
    format('SELECT outcome, error_message, error_details, error_data FROM worker_task_attempts WHERE task_id = %s', :cmd_id),
    $$VALUES ('retried'::text, 'CommandFailed: command exited with status 3'::text, NULL::text,
              '{"exit_code": 3, "signal": null, "stderr_tail": "no such store"}'::jsonb)$$,
    'Should keep the error_data with the retried attempt, beside its error_message');

SELECT id AS both_id, attempt AS both_attempt
FROM tests.make_claimed_task(worker_id := 'w40', role := 't40_data') \gset
SELECT is(
    (SELECT status FROM fail_task(:both_id, 'w40', :both_attempt, tests.claim_token(:both_id, :both_attempt), 'KeyError: ''price''', retryable := false,
                                  error_details := 'Traceback ...', error_data := '{"type": "KeyError"}')),
    'failed', 'Should fail a task for good with error_details and error_data');
SELECT results_eq(
    format('SELECT outcome, error_details, error_data FROM worker_task_attempts WHERE task_id = %s', :both_id),
    $$VALUES ('failed'::text, 'Traceback ...'::text, '{"type": "KeyError"}'::jsonb)$$,
    'Should keep both the details and the data of the attempt');

SELECT id AS plain_id, attempt AS plain_attempt
FROM tests.make_claimed_task(worker_id := 'w40', role := 't40_data') \gset
SELECT fail_task(:plain_id, 'w40', :plain_attempt, tests.claim_token(:plain_id, :plain_attempt), 'HTTP 503', false) \gset
SELECT results_eq(
    format('SELECT outcome, error_details, error_data FROM worker_task_attempts WHERE task_id = %s', :plain_id),
    $$VALUES ('failed'::text, NULL::text, NULL::jsonb)$$,
    'Should record no data for a fail_task called positionally without it, as before');

SELECT id AS empty_id, attempt AS empty_attempt
FROM tests.make_claimed_task(worker_id := 'w40', role := 't40_data') \gset
SELECT fail_task(:empty_id, 'w40', :empty_attempt, tests.claim_token(:empty_id, :empty_attempt), 'boom', error_data := '{}') \gset
SELECT is(
    (SELECT error_data FROM worker_task_attempts WHERE task_id = :empty_id),
    '{}'::jsonb, 'Should keep an empty object as it is');

SELECT id AS cancel_id, attempt AS cancel_attempt
FROM tests.make_claimed_task(worker_id := 'w40', role := 't40_data', started := true) \gset
SELECT cancel_task(:cancel_id) \gset
SELECT fail_task(:cancel_id, 'w40', :cancel_attempt, tests.claim_token(:cancel_id, :cancel_attempt), 'Aborted: cancelled', error_data := '{"signal": "SIGKILL"}') \gset
SELECT results_eq(
    format('SELECT outcome, error_data FROM worker_task_attempts WHERE task_id = %s', :cancel_id),
    $$VALUES ('cancelled'::text, '{"signal": "SIGKILL"}'::jsonb)$$,
    'Should keep the error_data of an attempt that ends its task cancelled');

SELECT id AS limit_id, attempt AS limit_attempt
FROM tests.make_claimed_task(worker_id := 'w40', role := 't40_data') \gset
-- {"t": "xxx..."} is 9 bytes of text around the string: 16375 x make 16384 bytes exactly.
SELECT lives_ok(
    format($$SELECT fail_task(%s, 'w40', %s, tests.claim_token(%1$s, %2$s), 'big', error_data := jsonb_build_object('t', repeat('x', 16375)))$$,
           :limit_id, :limit_attempt),
    'Should take error_data of exactly 16384 bytes');
SELECT is(
    (SELECT octet_length(error_data::text) FROM worker_task_attempts WHERE task_id = :limit_id),
    16384, 'Should keep error_data of 16384 bytes whole');

/****************************************************************************/
-- bad input: 22023, and nothing changes

SELECT id AS bad_id, attempt AS bad_attempt
FROM tests.make_claimed_task(worker_id := 'w40', role := 't40_data', started := true) \gset
SELECT throws_ok(
    format($$SELECT fail_task(%s, 'w40', %s, tests.claim_token(%1$s, %2$s), 'boom', error_data := '[1, 2]')$$, :bad_id, :bad_attempt),
    '22023', 'error_data must be a JSON object, not array', 'Should refuse an array as error_data with 22023');
SELECT throws_ok(
    format($$SELECT fail_task(%s, 'w40', %s, tests.claim_token(%1$s, %2$s), 'boom', error_data := '"exit 3"')$$, :bad_id, :bad_attempt),
    '22023', 'error_data must be a JSON object, not string', 'Should refuse a string as error_data with 22023');
SELECT throws_ok(
    format($$SELECT fail_task(%s, 'w40', %s, tests.claim_token(%1$s, %2$s), 'boom', error_data := 'null')$$, :bad_id, :bad_attempt),
    '22023', 'error_data must be a JSON object, not null',
    'Should refuse a JSON null as error_data with 22023 (SQL NULL is "no data")');
SELECT throws_ok(
    format($$SELECT fail_task(%s, 'w40', %s, tests.claim_token(%1$s, %2$s), 'boom', error_data := jsonb_build_object('t', repeat('x', 16376)))$$,
           :bad_id, :bad_attempt),
    '22023', 'error_data must be at most 16384 bytes as text, not 16385',
    'Should refuse error_data one byte over the bound with 22023');
SELECT throws_ok(
    format($$SELECT fail_task(%s, 'w40', %s, tests.claim_token(%1$s, %2$s), 'boom', error_data := jsonb_build_object('t', repeat('é', 5000000)))$$,
           :bad_id, :bad_attempt),
    '22023', NULL, 'Should refuse error_data of ten million bytes with 22023');
SELECT results_eq(
    format('SELECT status, attempt, retry_count, error_message FROM worker_tasks WHERE id = %s', :bad_id),
    format($$VALUES ('running'::text, %s, 0, NULL::text)$$, :bad_attempt),
    'Should leave the task running, untouched, after the refused calls');
SELECT is(
    (SELECT count(*)::integer FROM worker_task_attempts WHERE task_id = :bad_id),
    0, 'Should record no attempt for the refused calls');

-- A non-owner with good data: refused as before (55000), nothing kept.
SELECT throws_ok(
    format($$SELECT fail_task(%s, 'w40-intruder', %s, tests.claim_token(%1$s, %2$s), 'boom', error_data := '{"exit_code": 1}')$$, :bad_id, :bad_attempt),
    '55000', NULL, 'Should refuse fail_task with error_data from a worker that does not own the attempt');
SELECT is(
    (SELECT count(*)::integer FROM worker_task_attempts WHERE task_id = :bad_id),
    0, 'Should record no attempt, nor its data, for the refused call');

/****************************************************************************/
-- privileges

SET ROLE taskpool_worker;
SELECT throws_ok(
    format($$UPDATE worker_task_attempts SET error_data = '{"forged": true}' WHERE task_id = %s$$, :cmd_id),
    '42501', NULL, 'Should not let taskpool_worker write error_data itself');
SELECT lives_ok(
    format($$SELECT fail_task(%s, 'w40', %s, tests.claim_token(%1$s, %2$s), 'boom', error_data := '{"exit_code": 75}')$$, :bad_id, :bad_attempt),
    'Should let taskpool_worker record error_data through fail_task');
RESET ROLE;
SELECT is(
    (SELECT error_data FROM worker_task_attempts WHERE task_id = :bad_id),
    '{"exit_code": 75}'::jsonb, 'Should keep the error_data the worker recorded');

SELECT * FROM finish();
ROLLBACK;
