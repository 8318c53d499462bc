-- claim_fairness: at equal priority the claim rotates between platforms (and the tasks without
-- one), so a platform with a long queue cannot take every slot: a batch takes one task of each in
-- turn, and single claims alternate, the platform served least recently first; a higher priority
-- still goes first, whatever its platform; within a platform, the oldest task first.
BEGIN;
SELECT plan(8);

INSERT INTO task_roles (role) VALUES ('cfa_batch'), ('cfa_single'), ('cfa_levels');
-- A busy platform's eight tasks come first, then a quiet platform's two, then two without one.
SELECT count(*) AS batch_enqueued FROM enqueue_tasks((
    SELECT jsonb_agg(jsonb_build_object('role', 'cfa_batch', 'platform', p, 'payload', jsonb_build_object('n', n)) ORDER BY n)
    FROM (SELECT 'cfa_busy' AS p, n FROM generate_series(1, 8) AS n
          UNION ALL SELECT 'cfa_quiet', 10 + n FROM generate_series(1, 2) AS n
          UNION ALL SELECT NULL, 20 + n FROM generate_series(1, 2) AS n) AS specs)) \gset

/****************************************************************************/
-- A batch: one of each in turn

CREATE TEMP TABLE cfa_first AS SELECT platform, payload FROM claim_tasks('cfa_batch', 'cfa-w1', 3);
SELECT results_eq(
    $$SELECT coalesce(platform, '-'), (payload ->> 'n')::integer FROM cfa_first ORDER BY 1$$,
    $$VALUES ('-', 21), ('cfa_busy', 1), ('cfa_quiet', 11)$$,
    'Should hand a batch of three one task of each platform, and one without, each its oldest');
CREATE TEMP TABLE cfa_second AS SELECT platform, payload FROM claim_tasks('cfa_batch', 'cfa-w1', 6);
SELECT results_eq(
    $$SELECT coalesce(platform, '-'), count(*) FROM cfa_second GROUP BY 1 ORDER BY 1$$,
    $$VALUES ('-', 1::bigint), ('cfa_busy', 4::bigint), ('cfa_quiet', 1::bigint)$$,
    'Should give the busy platform the rest of a batch only once the others have none left');

/****************************************************************************/
-- Single claims alternate

SELECT count(*) AS single_enqueued FROM enqueue_tasks((
    SELECT jsonb_agg(jsonb_build_object('role', 'cfa_single', 'platform', p) ORDER BY n)
    FROM (SELECT 'cfa_busy' AS p, n FROM generate_series(1, 6) AS n
          UNION ALL SELECT 'cfa_quiet', 10 + n FROM generate_series(1, 3) AS n) AS specs)) \gset
CREATE TEMP TABLE cfa_singles (n serial, platform text);
INSERT INTO cfa_singles (platform) SELECT platform FROM claim_task('cfa_single', 'cfa-w2');
INSERT INTO cfa_singles (platform) SELECT platform FROM claim_task('cfa_single', 'cfa-w2');
INSERT INTO cfa_singles (platform) SELECT platform FROM claim_task('cfa_single', 'cfa-w2');
INSERT INTO cfa_singles (platform) SELECT platform FROM claim_task('cfa_single', 'cfa-w2');
INSERT INTO cfa_singles (platform) SELECT platform FROM claim_task('cfa_single', 'cfa-w2');
INSERT INTO cfa_singles (platform) SELECT platform FROM claim_task('cfa_single', 'cfa-w2');
INSERT INTO cfa_singles (platform) SELECT platform FROM claim_task('cfa_single', 'cfa-w2');
SELECT is((SELECT array_agg(platform ORDER BY n) FROM cfa_singles),
    ARRAY['cfa_busy', 'cfa_quiet', 'cfa_busy', 'cfa_quiet', 'cfa_busy', 'cfa_quiet', 'cfa_busy'],
    'Should alternate single claims between the platforms, then serve the one left');
SELECT ok((SELECT count(*) FROM task_claim_turns WHERE role = 'cfa_single') = 2,
    'Should keep each platform''s turn per role');
SELECT is((SELECT count(*) FROM task_claim_turns WHERE role = 'cfa_batch' AND platform = ''), 1::bigint,
    'Should give the tasks without a platform a turn of their own');

/****************************************************************************/
-- Priority wins across levels

SELECT count(*) AS levels_enqueued FROM enqueue_tasks((
    SELECT jsonb_agg(jsonb_build_object('role', 'cfa_levels', 'platform', p, 'priority', pr) ORDER BY n)
    FROM (SELECT 'cfa_busy' AS p, 0 AS pr, n FROM generate_series(1, 3) AS n
          UNION ALL SELECT 'cfa_quiet', 5, 10 + n FROM generate_series(1, 3) AS n
          UNION ALL SELECT NULL, 0, 20 + n FROM generate_series(1, 3) AS n) AS specs)) \gset
CREATE TEMP TABLE cfa_levels AS SELECT platform, priority FROM claim_tasks('cfa_levels', 'cfa-w3', 3);
SELECT is((SELECT array_agg(DISTINCT platform) FROM cfa_levels), ARRAY['cfa_quiet'],
    'Should hand out all three tasks of the higher priority before any of a lower one, though one platform has them all');
CREATE TEMP TABLE cfa_lower AS SELECT platform, priority FROM claim_tasks('cfa_levels', 'cfa-w3', 2);
SELECT results_eq(
    $$SELECT coalesce(platform, '-'), priority FROM cfa_lower ORDER BY 1$$,
    $$VALUES ('-', 0), ('cfa_busy', 0)$$,
    'Should rotate again at the lower level');

/****************************************************************************/
-- Rotation keeps within the limits: a platform without a token is passed over

UPDATE task_roles SET claims_platform_token = true WHERE role = 'cfa_single';
INSERT INTO platform_governance (platform, requests_per_minute, tokens, tokens_at)
VALUES ('cfa_quiet', 12, 0, clock_timestamp()), ('cfa_busy', 120, 10, clock_timestamp())
ON CONFLICT (platform) DO UPDATE SET requests_per_minute = excluded.requests_per_minute,
                                     tokens = excluded.tokens, tokens_at = excluded.tokens_at;
SELECT count(*) AS more FROM enqueue_tasks((
    SELECT jsonb_agg(jsonb_build_object('role', 'cfa_single', 'platform', 'cfa_quiet')) FROM generate_series(1, 2))) \gset
SELECT results_eq(
    $$SELECT platform, count(*) FROM claim_tasks('cfa_single', 'cfa-w4', 4) GROUP BY 1$$,
    $$VALUES ('cfa_busy', 2::bigint)$$,
    'Should pass over a platform without a token, however long since its turn');

SELECT * FROM finish();
ROLLBACK;
