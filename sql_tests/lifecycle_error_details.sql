-- lifecycle_error_details: fail_task keeps the attempt's error_details (pyworker: the handler's
-- traceback) with that attempt in worker_task_attempts, bounded to 20000 characters: the first
-- 4000 and the end, where a traceback names the error, with a line saying how many were cut.
BEGIN;
SELECT plan(22);

INSERT INTO task_roles (role, description, max_retries) VALUES
    ('t33_details', 'pgTAP lifecycle_error_details: what fail_task keeps', 3),
    ('t33_twice',   'pgTAP lifecycle_error_details: two failed attempts of one task', 3);

/****************************************************************************/
-- structure

SELECT has_function('fail_task',
    ARRAY['bigint', 'text', 'integer', 'uuid', 'text', 'boolean', 'timestamp with time zone', 'text', 'jsonb'],
    'Should have fail_task(bigint, text, integer, uuid, text, boolean, timestamptz, text, jsonb)');
SELECT hasnt_function('fail_task',
    ARRAY['bigint', 'text', 'integer', 'uuid', 'text', 'boolean', 'timestamp with time zone'],
    'Should no longer have the six-argument fail_task, which a call without error_details would find ambiguous');
SELECT function_returns('fail_task',
    ARRAY['bigint', 'text', 'integer', 'uuid', 'text', 'boolean', 'timestamp with time zone', 'text', 'jsonb'],
    'worker_tasks', 'Should return worker_tasks from fail_task');
SELECT is_definer('fail_task',
    ARRAY['bigint', 'text', 'integer', 'uuid', 'text', 'boolean', 'timestamp with time zone', 'text', 'jsonb'],
    'Should make fail_task SECURITY DEFINER');
SELECT col_type_is('worker_task_attempts', 'error_details', 'text',
    'Should type worker_task_attempts.error_details as text');
SELECT col_is_null('worker_task_attempts', 'error_details',
    'Should let worker_task_attempts.error_details be NULL: not every attempt has details');

/****************************************************************************/
-- behaviour: the details go with their attempt

SELECT id AS retried_id, attempt AS retried_attempt
FROM tests.make_claimed_task(worker_id := 'w33', role := 't33_details', started := true) \gset
SELECT is(
    (SELECT status FROM fail_task(:retried_id, 'w33', :retried_attempt, tests.claim_token(:retried_id, :retried_attempt), 'KeyError: ''price''',
                                  error_details := E'Traceback (most recent call last):\n  File "tasks.py", line 9\nKeyError: ''price''')),
    'pending', 'Should retry a task failed with error_details as without them');
SELECT results_eq(
    format('SELECT outcome, error_message, error_details FROM worker_task_attempts WHERE task_id = %s', :retried_id),
    $$VALUES ('retried'::text, 'KeyError: ''price'''::text,
              E'Traceback (most recent call last):\n  File "tasks.py", line 9\nKeyError: ''price'''::text)$$,
    'Should keep the error_details with the retried attempt, beside its error_message');

SELECT id AS failed_id, attempt AS failed_attempt
FROM tests.make_claimed_task(worker_id := 'w33', role := 't33_details') \gset
SELECT is(
    (SELECT status FROM fail_task(:failed_id, 'w33', :failed_attempt, tests.claim_token(:failed_id, :failed_attempt), 'PermanentError: store closed',
                                  retryable := false, error_details := 'raised in close_check')),
    'failed', 'Should fail a task for good with error_details');
SELECT results_eq(
    format('SELECT outcome, error_details FROM worker_task_attempts WHERE task_id = %s', :failed_id),
    $$VALUES ('failed'::text, 'raised in close_check'::text)$$,
    'Should keep the error_details of an attempt that fails its task for good');

SELECT id AS plain_id, attempt AS plain_attempt
FROM tests.make_claimed_task(worker_id := 'w33', role := 't33_details') \gset
SELECT fail_task(:plain_id, 'w33', :plain_attempt, tests.claim_token(:plain_id, :plain_attempt), 'HTTP 503') \gset
SELECT is(
    (SELECT error_details FROM worker_task_attempts WHERE task_id = :plain_id),
    NULL, 'Should record no details for a fail_task called without them, as before');

SELECT id AS empty_id, attempt AS empty_attempt
FROM tests.make_claimed_task(worker_id := 'w33', role := 't33_details') \gset
SELECT fail_task(:empty_id, 'w33', :empty_attempt, tests.claim_token(:empty_id, :empty_attempt), 'HTTP 503', error_details := '') \gset
SELECT is(
    (SELECT error_details FROM worker_task_attempts WHERE task_id = :empty_id),
    NULL, 'Should record empty error_details as none');

SELECT id AS cancel_id, attempt AS cancel_attempt
FROM tests.make_claimed_task(worker_id := 'w33', role := 't33_details', started := true) \gset
SELECT cancel_task(:cancel_id) \gset
SELECT fail_task(:cancel_id, 'w33', :cancel_attempt, tests.claim_token(:cancel_id, :cancel_attempt), 'Aborted: cancelled', error_details := 'stopped at step 3') \gset
SELECT results_eq(
    format('SELECT outcome, error_details FROM worker_task_attempts WHERE task_id = %s', :cancel_id),
    $$VALUES ('cancelled'::text, 'stopped at step 3'::text)$$,
    'Should keep the error_details of an attempt that ends its task cancelled');

-- Two attempts of one task: each keeps its own details.
SELECT id AS twice_id, attempt AS twice_first
FROM tests.make_claimed_task(worker_id := 'w33', role := 't33_twice') \gset
SELECT fail_task(:twice_id, 'w33', :twice_first, tests.claim_token(:twice_id, :twice_first), 'first failure', retry_at := now(), error_details := 'first traceback') \gset
SELECT attempt AS twice_second FROM claim_task('t33_twice', 'w33-b') \gset
SELECT fail_task(:twice_id, 'w33-b', :twice_second, tests.claim_token(:twice_id, :twice_second), 'second failure', error_details := 'second traceback') \gset
SELECT results_eq(
    format('SELECT attempt, worker_id, error_message, error_details FROM worker_task_attempts
            WHERE task_id = %s ORDER BY attempt', :twice_id),
    format($$VALUES (%s, 'w33'::text, 'first failure'::text, 'first traceback'::text),
                    (%s, 'w33-b'::text, 'second failure'::text, 'second traceback'::text)$$,
           :twice_first, :twice_second),
    'Should keep each attempt''s error_details with that attempt, the first one unchanged by the second');

/****************************************************************************/
-- behaviour: the bound

-- 4000 'h', 30064 'm', 15936 't': kept are the 4000 'h' and the 15936 't', 30064 'm' cut.
SELECT id AS long_id, attempt AS long_attempt
FROM tests.make_claimed_task(worker_id := 'w33', role := 't33_details') \gset
SELECT fail_task(:long_id, 'w33', :long_attempt, tests.claim_token(:long_id, :long_attempt), 'RecursionError',
                 error_details := repeat('h', 4000) || repeat('m', 30064) || repeat('t', 15936)) \gset
SELECT is(
    (SELECT error_details FROM worker_task_attempts WHERE task_id = :long_id),
    repeat('h', 4000) || E'\n[... 30064 characters cut ...]\n' || repeat('t', 15936),
    'Should keep the first 4000 characters and the end of longer error_details, saying how many were cut');

SELECT id AS limit_id, attempt AS limit_attempt
FROM tests.make_claimed_task(worker_id := 'w33', role := 't33_details') \gset
SELECT fail_task(:limit_id, 'w33', :limit_attempt, tests.claim_token(:limit_id, :limit_attempt), 'ValueError', error_details := repeat('é', 20000)) \gset
SELECT is(
    (SELECT error_details FROM worker_task_attempts WHERE task_id = :limit_id),
    repeat('é', 20000), 'Should keep error_details of exactly 20000 characters whole');

SELECT id AS huge_id, attempt AS huge_attempt
FROM tests.make_claimed_task(worker_id := 'w33', role := 't33_details') \gset
SELECT fail_task(:huge_id, 'w33', :huge_attempt, tests.claim_token(:huge_id, :huge_attempt), 'MemoryError', error_details := repeat('x', 5000000)) \gset
SELECT cmp_ok(
    (SELECT length(error_details) FROM worker_task_attempts WHERE task_id = :huge_id),
    '<=', 20000, 'Should bound error_details of five million characters to 20000');

/****************************************************************************/
-- behaviour: a refused call keeps nothing

SELECT id AS owned_id, attempt AS owned_attempt
FROM tests.make_claimed_task(worker_id := 'w33', role := 't33_details') \gset
SELECT throws_ok(
    format($$SELECT fail_task(%s, 'w33-intruder', %s, tests.claim_token(%1$s, %2$s), 'boom', error_details := 'intruder')$$, :owned_id, :owned_attempt),
    '55000', NULL, 'Should refuse fail_task with error_details from a worker that does not own the attempt');
SELECT is(
    (SELECT count(*)::integer FROM worker_task_attempts WHERE task_id = :owned_id),
    0, 'Should record no attempt, nor its details, for the refused call');

/****************************************************************************/
-- privileges

SELECT function_privs_are('public', 'fail_task',
    ARRAY['bigint', 'text', 'integer', 'uuid', 'text', 'boolean', 'timestamp with time zone', 'text', 'jsonb'], 'taskpool_worker',
    ARRAY['EXECUTE'], 'Should let taskpool_worker execute fail_task with error_details');

SET ROLE taskpool_worker;
SELECT throws_ok(
    format($$UPDATE worker_task_attempts SET error_details = 'forged' WHERE task_id = %s$$, :retried_id),
    '42501', NULL, 'Should not let taskpool_worker write error_details itself');
SELECT lives_ok(
    format($$SELECT fail_task(%s, 'w33', %s, tests.claim_token(%1$s, %2$s), 'boom', error_details := 'as the worker')$$, :owned_id, :owned_attempt),
    'Should let taskpool_worker record error_details through fail_task');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
