-- dashboard_views: task_throughput(hours), the dashboard's chart (completions and failed
-- attempts per role and hour), and v_platforms, each platform's circuit and its recent events.
BEGIN;
SELECT plan(12);

/****************************************************************************/
-- Structure

SELECT has_function('task_throughput', ARRAY['integer'], 'Should have task_throughput(integer)');
SELECT has_view('v_platforms', 'Should have view v_platforms');
SELECT ok(NOT has_function_privilege('taskpool_worker', 'task_throughput(integer)', 'execute'),
    'Should not let taskpool_worker read the throughput');

/****************************************************************************/
-- task_throughput: a completion now, one three hours ago, failed attempts; zeros elsewhere

SELECT id AS done_now FROM tests.make_claimed_task('w48', 'store_discovery', started := true) \gset
SELECT complete_task(:done_now, 'w48', 1, tests.claim_token(:done_now, 1));
SELECT id AS done_before FROM tests.make_claimed_task('w48', 'store_discovery', started := true) \gset
SELECT complete_task(:done_before, 'w48', 1, tests.claim_token(:done_before, 1));
SELECT tests.age_completion(:done_before, '3 hours');
SELECT id AS failing FROM tests.make_claimed_task('w48', 'analytics_refresh', max_retries := 1, started := true) \gset
SELECT fail_task(:failing, 'w48', 1, tests.claim_token(:failing, 1), 'boom');
SELECT id AS failed FROM tests.make_claimed_task('w48', 'analytics_refresh', max_retries := 0, started := true) \gset
SELECT fail_task(:failed, 'w48', 1, tests.claim_token(:failed, 1), 'boom for good');

SELECT is((SELECT count(*) FROM task_throughput(4)), 4 * (SELECT count(*) FROM task_roles),
    'Should give a row per role for each of the last 4 hours');
SELECT results_eq(
    $$SELECT hour, completed, failed_attempts FROM task_throughput(4) WHERE role = 'store_discovery'$$,
    $$SELECT h, CASE WHEN h IN (date_trunc('hour', now()), date_trunc('hour', now() - interval '3 hours'))
                     THEN 1::bigint ELSE 0::bigint END, 0::bigint
      FROM generate_series(date_trunc('hour', now()) - interval '3 hours', date_trunc('hour', now()), interval '1 hour') AS h$$,
    'Should count each completion in the hour it happened, oldest hour first');
SELECT results_eq(
    $$SELECT completed, failed_attempts FROM task_throughput(1) WHERE role = 'analytics_refresh'$$,
    $$VALUES (0::bigint, 2::bigint)$$,
    'Should count the attempts that failed, retried or for good, in their role');
SELECT is((SELECT sum(completed) FROM task_throughput(3) WHERE role = 'store_discovery'), 1::numeric,
    'Should leave out what happened before the first hour asked for');
SELECT throws_ok('SELECT * FROM task_throughput(0)', '22023', 'hours must be 1..168, not 0',
    'Should refuse 0 hours');
SELECT throws_ok('SELECT * FROM task_throughput(NULL)', '22023', 'hours must be 1..168, not NULL',
    'Should refuse NULL hours');

/****************************************************************************/
-- v_platforms: closed, open, half open; openings and closings of the last day

INSERT INTO platform_governance (platform, failure_threshold) VALUES ('p48_calm', 1), ('p48_down', 1), ('p48_back', 1);
SELECT record_platform_result('p48_down', false, 'HTTP 503');
SELECT record_platform_result('p48_back', false, 'HTTP 503');
UPDATE platform_governance SET open_until = now() - interval '1 second' WHERE platform = 'p48_back';
SELECT results_eq(
    $$SELECT platform, circuit, opened_last_day, closed_last_day, last_error FROM v_platforms
      WHERE platform LIKE 'p48%' ORDER BY platform$$,
    $$VALUES ('p48_back'::text, 'half_open'::text, 1::bigint, 0::bigint, 'HTTP 503'::text),
             ('p48_calm', 'closed', 0, 0, NULL), ('p48_down', 'open', 1, 0, 'HTTP 503')$$,
    'Should tell an open circuit from a half-open and a closed one, with its openings');
SELECT record_platform_result('p48_back', true);
SELECT results_eq(
    $$SELECT circuit, opened_last_day, closed_last_day FROM v_platforms WHERE platform = 'p48_back'$$,
    $$VALUES ('closed'::text, 1::bigint, 1::bigint)$$,
    'Should count the closing once a request succeeds');
UPDATE platform_events SET at = now() - interval '2 days' WHERE platform = 'p48_back';
SELECT results_eq(
    $$SELECT opened_last_day, closed_last_day, last_event_at FROM v_platforms WHERE platform = 'p48_back'$$,
    $$VALUES (0::bigint, 0::bigint, now() - interval '2 days')$$,
    'Should count only the last day''s events, and still say when the last one was');

SELECT * FROM finish();
ROLLBACK;
