-- claim_rate_limits: a role with claims_platform_token is handed a task only with a token of its
-- platform's rate limit, which the claim takes (one per task, exactly, counted in requests_total);
-- a platform without a token holds back its own tasks and no other's; v_platforms and
-- v_waiting_tasks say when its next token comes, and platform_token_wait tells an idle worker;
-- reserve_platform_request takes tokens ahead, which claims then wait for. The bucket refills by
-- the clock as the test runs, so token counts are checked to within what a second refills.
BEGIN;
SELECT plan(22);

INSERT INTO task_roles (role, claims_platform_token) VALUES ('crl_metered', true);
INSERT INTO task_roles (role) VALUES ('crl_free');
-- 12 a minute: a burst of 1, a token every 5 s; 60 a minute: a burst of 5, a token a second
INSERT INTO platform_governance (platform, requests_per_minute) VALUES ('crl_slow', 12), ('crl_five', 60);
SELECT count(*) AS enqueued FROM enqueue_tasks((
    SELECT jsonb_agg(jsonb_build_object('role', 'crl_metered', 'platform', p) ORDER BY n)
    FROM (SELECT 'crl_slow' AS p, n FROM generate_series(1, 4) AS n
          UNION ALL SELECT 'crl_five', 10 + n FROM generate_series(1, 8) AS n
          UNION ALL SELECT NULL, 20 + n FROM generate_series(1, 2) AS n) AS specs)) \gset

/****************************************************************************/
-- The claim takes the tokens there are, and no more

CREATE TEMP TABLE crl_claimed AS
SELECT id, platform FROM claim_and_start_tasks('crl_metered', 'crl-w1', 20);
SELECT is((SELECT count(*) FROM crl_claimed WHERE platform = 'crl_slow'), 1::bigint,
    'Should hand out as many of a platform''s tasks as its bucket holds tokens: one of crl_slow');
SELECT is((SELECT count(*) FROM crl_claimed WHERE platform = 'crl_five'), 5::bigint,
    'Should hand out five of crl_five''s eight, its burst');
SELECT is((SELECT count(*) FROM crl_claimed WHERE platform IS NULL), 2::bigint,
    'Should hand out every task without a platform: no limit holds them');
SELECT results_eq(
    $$SELECT platform, requests_total FROM platform_governance WHERE platform LIKE 'crl\_%' ORDER BY platform$$,
    $$VALUES ('crl_five', 5::bigint), ('crl_slow', 1::bigint)$$,
    'Should take one token per task claimed, counted as a request let through');
SELECT ok((SELECT tokens_now < 1 FROM v_platforms WHERE platform = 'crl_slow')
          AND (SELECT tokens_now < 1 FROM v_platforms WHERE platform = 'crl_five'),
    'Should leave both buckets without a whole token');

INSERT INTO crl_claimed SELECT id, platform FROM claim_and_start_tasks('crl_metered', 'crl-w2', 20);
SELECT is((SELECT count(*) FROM crl_claimed), 8::bigint,
    'Should hand out nothing more while neither platform has a token');

/****************************************************************************/
-- What waits, and until when

SELECT results_eq(
    $$SELECT platform, waiting_for, count(*) FROM v_waiting_tasks
      WHERE role = 'crl_metered' AND status = 'pending' GROUP BY 1, 2 ORDER BY 1$$,
    $$VALUES ('crl_five', 'rate_limit', 3::bigint), ('crl_slow', 'rate_limit', 3::bigint)$$,
    'Should say the tasks left wait for their platform''s rate limit');
SELECT ok((SELECT bool_and(w.ready_at = p.next_token_at) FROM v_waiting_tasks w JOIN v_platforms p USING (platform)
           WHERE w.role = 'crl_metered' AND w.status = 'pending'),
    'Should make a task ready at its platform''s next token');
SELECT ok((SELECT next_token_at BETWEEN clock_timestamp() + interval '4 seconds' AND clock_timestamp() + interval '5 seconds'
           FROM v_platforms WHERE platform = 'crl_slow'),
    'Should show crl_slow''s next token five seconds after the one the claim took');
SELECT ok(platform_token_wait('crl_metered') BETWEEN 0 AND 1.5,
    'Should tell an idle worker of the role when the soonest token comes: crl_five''s, within a second');
SELECT is(platform_token_wait('crl_free'), NULL,
    'Should tell a worker of a role that claims no token nothing');

/****************************************************************************/
-- A role that claims no token is not held back by the empty buckets

SELECT count(*) AS free_enqueued FROM enqueue_tasks((
    SELECT jsonb_agg(jsonb_build_object('role', 'crl_free', 'platform', 'crl_slow'))
    FROM generate_series(1, 3))) \gset
SELECT is((SELECT count(*) FROM claim_and_start_tasks('crl_free', 'crl-w3', 20)), 3::bigint,
    'Should hand out a role''s tasks whatever their platform''s bucket holds when the role claims no token');
SELECT is((SELECT requests_total FROM platform_governance WHERE platform = 'crl_slow'), 1::bigint,
    'Should take no token for them');
SELECT is((SELECT waiting_for FROM v_waiting_tasks WHERE role = 'crl_metered' AND platform = 'crl_slow'
           AND status = 'pending' LIMIT 1), 'rate_limit',
    'Should still hold the metered role''s tasks of the same platform back');

/****************************************************************************/
-- Tokens refill: the claim takes each one as it comes

SELECT set_taskpool_clock_offset('5 seconds') AS shifted \gset
CREATE TEMP TABLE crl_refilled AS SELECT platform FROM claim_and_start_tasks('crl_metered', 'crl-w4', 20);
SELECT results_eq(
    $$SELECT platform, count(*) FROM crl_refilled GROUP BY 1 ORDER BY 1$$,
    $$VALUES ('crl_five', 3::bigint), ('crl_slow', 1::bigint)$$,
    'Should hand out, five seconds on, crl_slow''s one new token''s task and crl_five''s three left');
SELECT is((SELECT count(*) FROM claim_and_start_tasks('crl_metered', 'crl-w4', 20)), 0::bigint,
    'Should then hand out nothing again: crl_slow''s bucket is empty');
SELECT set_taskpool_clock_offset('0') AS shifted \gset

/****************************************************************************/
-- Reservations: tokens taken ahead are paid back before a claim gets one

INSERT INTO platform_governance (platform, requests_per_minute) VALUES ('crl_reserved', 60);
CREATE TEMP TABLE crl_reservations AS
SELECT n, reserve_platform_request('crl_reserved') AS wait FROM generate_series(1, 7) AS n;
SELECT is((SELECT array_agg(wait ORDER BY n) FROM crl_reservations WHERE n <= 5), ARRAY[0, 0, 0, 0, 0]::double precision[],
    'Should let the burst go at once');
SELECT ok((SELECT wait BETWEEN 0.75 AND 1 FROM crl_reservations WHERE n = 6),
    'Should reserve the sixth request''s token a second ahead');
SELECT ok((SELECT wait BETWEEN 1.75 AND 2 FROM crl_reservations WHERE n = 7),
    'Should reserve the seventh two seconds ahead: one token each, in turn');
SELECT id AS reserved_task FROM enqueue_task('crl_metered', platform := 'crl_reserved') \gset
SELECT is((SELECT count(*) FROM claim_and_start_tasks('crl_metered', 'crl-w5', 20)), 0::bigint,
    'Should not hand out a task of a platform whose tokens are reserved ahead');
SELECT is((SELECT waiting_for FROM v_waiting_tasks WHERE id = :reserved_task), 'rate_limit',
    'Should say it waits for the rate limit');
SELECT ok((SELECT ready_at BETWEEN clock_timestamp() + interval '2.5 seconds' AND clock_timestamp() + interval '3 seconds'
           FROM v_waiting_tasks WHERE id = :reserved_task),
    'Should make it ready once the reservations are paid back and a token refilled: three seconds on');

SELECT * FROM finish();
ROLLBACK;
