-- governance: per-platform rate limits and the circuit breaker (acquire_platform_request,
-- record_platform_result), and claim_task skipping the tasks of a platform whose circuit is open.
BEGIN;
SELECT plan(29);

/****************************************************************************/
-- Structure

SELECT has_table('platform_governance', 'Should have table platform_governance');
SELECT has_table('platform_events', 'Should have table platform_events');
SELECT function_returns('acquire_platform_request', ARRAY['text'], 'double precision',
    'Should return the seconds to wait from acquire_platform_request');
SELECT function_returns('record_platform_result', ARRAY['text', 'boolean', 'text'], 'text',
    'Should return the circuit state from record_platform_result');
SELECT function_privs_are('public', 'acquire_platform_request', ARRAY['text'], 'taskpool_worker', ARRAY['EXECUTE'],
    'Should let workers ask for a request slot');
SELECT function_privs_are('public', 'record_platform_result', ARRAY['text', 'boolean', 'text'], 'taskpool_worker',
    ARRAY['EXECUTE'], 'Should let workers report a request''s outcome');

/****************************************************************************/
-- Rate limit: 60 a minute is one a second, with a burst of 5

INSERT INTO platform_governance (platform, requests_per_minute) VALUES ('t16_rate', 60);
SELECT results_eq(
    $$SELECT acquire_platform_request('t16_rate') FROM generate_series(1, 5)$$,
    $$VALUES (0::double precision), (0), (0), (0), (0)$$,
    'Should let a burst of requests_per_minute / 12 through at once');
-- The bucket refills by the clock at the call (the milliseconds this test takes count too), so
-- a wait is checked to a quarter of a second below its value (a loaded machine is slow).
SELECT ok(acquire_platform_request('t16_rate') BETWEEN 0.75 AND 1,
    'Should make the next request wait a second for a token');
SELECT set_taskpool_clock_offset('0.5 seconds') AS shifted \gset
SELECT ok(acquire_platform_request('t16_rate') BETWEEN 0.25 AND 0.5,
    'Should count the half token that refilled meanwhile');
SELECT set_taskpool_clock_offset('2 seconds') AS shifted \gset
SELECT is(acquire_platform_request('t16_rate'), 0::double precision,
    'Should let a request through once a token has refilled');
SELECT set_taskpool_clock_offset('0') AS shifted \gset
SELECT is((SELECT count(*) FROM platform_governance WHERE platform = 't16_new'), 0::bigint,
    'Should know nothing of a platform before its first request');
SELECT is(acquire_platform_request('t16_new'), 0::double precision, 'Should let the first request of a new platform through');
SELECT is((SELECT requests_per_minute FROM platform_governance WHERE platform = 't16_new'), 120,
    'Should give a new platform the default limit');

/****************************************************************************/
-- Circuit breaker

SELECT results_eq(
    $$SELECT record_platform_result('t16_cb', false, 'HTTP 500') FROM generate_series(1, 5)$$,
    $$VALUES ('closed'), ('closed'), ('closed'), ('closed'), ('open')$$,
    'Should open the circuit at the fifth failure in a row');
-- the cooldown starts when the report holds the platform's row: by the clock, not at now()
SELECT ok((SELECT open_until BETWEEN now() + interval '5 minutes' AND clock_timestamp() + interval '5 minutes'
           FROM platform_governance WHERE platform = 't16_cb'),
    'Should pause the platform for the cooldown');
SELECT throws_like($$SELECT acquire_platform_request('t16_cb')$$,
    format('platform t16_cb is paused until %s%%: its circuit opened after 5 consecutive failures',
           left((now() + interval '5 minutes')::text, 16)),
    'Should refuse requests while the circuit is open');

-- Claims skip the paused platform's tasks, and only those.
INSERT INTO task_roles (role) VALUES ('t16_role');
SELECT id AS paused_id FROM enqueue_task('t16_role', platform := 't16_cb', priority := 100) \gset
SELECT id AS other_id FROM enqueue_task('t16_role', platform := 't16_rate') \gset
SELECT is((SELECT id FROM claim_task('t16_role', 'w1')), :other_id::bigint,
    'Should skip a task of a platform whose circuit is open');
SELECT is((SELECT count(*) FROM claim_task('t16_role', 'w2')), 0::bigint,
    'Should hand out none of the paused platform''s tasks');

SELECT set_taskpool_clock_offset('6 minutes') AS shifted \gset
SELECT is((SELECT id FROM claim_task('t16_role', 'w3')), :paused_id::bigint,
    'Should hand out the platform''s tasks again after the cooldown');
SELECT is(record_platform_result('t16_cb', false, 'HTTP 500 again'), 'open',
    'Should reopen the circuit at once when the first try after the cooldown fails');
SELECT is(record_platform_result('t16_cb', true), 'closed', 'Should close the circuit at the first success');
SELECT is((SELECT consecutive_failures FROM platform_governance WHERE platform = 't16_cb'), 0,
    'Should reset the failure streak on a success');
SELECT results_eq(
    $$SELECT event, consecutive_failures, error_message FROM platform_events WHERE platform = 't16_cb' ORDER BY id$$,
    $$VALUES ('opened'::text, 5, 'HTTP 500'::text), ('opened', 6, 'HTTP 500 again'), ('closed', 6, NULL)$$,
    'Should keep every opening and closing in platform_events');
SELECT set_taskpool_clock_offset('0') AS shifted \gset

-- A success that changes nothing but last_success_at, under a second after the last one, leaves
-- the row alone (every crawl reports one; claims lock the row to take tokens). A failure still
-- counts at once, and the success after it resets the streak.
INSERT INTO platform_governance (platform, last_success_at) VALUES ('t16_quiet', now() - interval '0.5 seconds');
SELECT is(record_platform_result('t16_quiet', true), 'closed', 'Should answer closed for a success on a closed circuit');
SELECT is((SELECT last_success_at FROM platform_governance WHERE platform = 't16_quiet'), now() - interval '0.5 seconds',
    'Should not write last_success_at again within a second of the last');
SELECT is(record_platform_result('t16_quiet', false, 'HTTP 503'), 'closed', 'Should count a failure');
SELECT is(record_platform_result('t16_quiet', true), 'closed', 'Should answer closed for the success after it');
SELECT ok((SELECT consecutive_failures = 0 AND last_success_at BETWEEN now() AND clock_timestamp()
           FROM platform_governance WHERE platform = 't16_quiet'),
    'Should reset the streak and write last_success_at after a failure');

SELECT throws_ok($$SELECT acquire_platform_request('')$$, '22023',
    'platform must be a name of 1 to 100 characters, not ''''', 'Should refuse a blank platform name');

SELECT * FROM finish();
ROLLBACK;
