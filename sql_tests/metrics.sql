-- metrics: taskpool_metrics(), the pool's Prometheus metrics in one query (issue 16, item 2).
-- Its counters (completions, failed attempts, stale recoveries) only go up: the tick folds the
-- history into task_metric_totals, and a prune adds what it deletes, so neither moves them.
BEGIN;
SELECT plan(34);

INSERT INTO task_roles (role, description, max_retries) VALUES
    ('t52_metrics', 'pgTAP metrics', 1);

-- One sample of the scrape, by name and labels (NULL when the scrape has no such sample).
CREATE FUNCTION pg_temp.sample(metric text, labels jsonb)
RETURNS double precision
LANGUAGE sql
AS $$
    SELECT m.value FROM taskpool_metrics() m WHERE m.metric = sample.metric AND m.labels = sample.labels;
$$;

CREATE FUNCTION pg_temp.counters()
RETURNS jsonb
LANGUAGE sql
AS $$
    SELECT jsonb_object_agg(m.metric || m.labels::text, m.value)
    FROM taskpool_metrics() m
    WHERE m.kind = 'counter' AND m.labels->>'role' = 't52_metrics';
$$;

/****************************************************************************/
-- structure

SELECT has_function('public', 'taskpool_metrics', '{}'::text[], 'Should have taskpool_metrics()');
SELECT volatility_is('public', 'taskpool_metrics', '{}'::text[], 'stable',
    'Should make taskpool_metrics STABLE: a scrape writes nothing');
SELECT is_definer('public', 'taskpool_metrics', '{}'::text[],
    'Should make taskpool_metrics SECURITY DEFINER, for a monitoring login with EXECUTE alone');
SELECT ok(has_function_privilege('pg_monitor', 'taskpool_metrics()', 'execute')
          AND NOT has_function_privilege('public', 'taskpool_metrics()', 'execute'),
    'Should let pg_monitor run taskpool_metrics, and not PUBLIC');
SELECT has_table('public', 'task_metric_totals', 'Should have task_metric_totals');
SELECT is((SELECT count(*) FROM task_metric_watermark), 1::bigint,
    'Should have one watermark row');

/****************************************************************************/
-- the shape of every sample: Prometheus names, a help text, a kind, string labels

SELECT is((SELECT count(*) FROM taskpool_metrics() m WHERE m.metric !~ '^taskpool_[a-z_]+[a-z]$'), 0::bigint,
    'Should name every metric taskpool_<lowercase words>');
SELECT is((SELECT count(*) FROM taskpool_metrics() m
           WHERE (m.kind = 'counter') <> (m.metric ~ '_total$') OR m.kind NOT IN ('counter', 'gauge')),
          0::bigint,
    'Should end the counters'' names in _total and no gauge''s');
SELECT is((SELECT count(*) FROM taskpool_metrics() m WHERE coalesce(m.help, '') = ''), 0::bigint,
    'Should give every sample its help text');
SELECT is((SELECT count(DISTINCT (m.kind, m.help)) FROM taskpool_metrics() m), 
          (SELECT count(DISTINCT m.metric) FROM taskpool_metrics() m),
    'Should give every sample of a metric the same kind and help');
SELECT is((SELECT count(*) FROM taskpool_metrics() m, jsonb_each(m.labels) l
           WHERE jsonb_typeof(l.value) <> 'string'), 0::bigint,
    'Should give labels string values only');
SELECT is((SELECT count(*) FROM taskpool_metrics() m WHERE m.value IS NULL), 0::bigint,
    'Should leave out an unknown value rather than give NULL');
SELECT is((SELECT array_agg(m.labels->>'status' ORDER BY m.labels->>'status') FROM taskpool_metrics() m
           WHERE m.metric = 'taskpool_tasks' AND m.labels->>'role' = 't52_metrics'),
          ARRAY['cancelled', 'claimed', 'completed', 'failed', 'pending', 'running'],
    'Should give a role every status, an idle one too');
SELECT is(pg_temp.counters(),
          '{"taskpool_stale_recoveries_total{\"role\": \"t52_metrics\"}": 0,
            "taskpool_tasks_completed_total{\"role\": \"t52_metrics\"}": 0,
            "taskpool_attempts_failed_total{\"role\": \"t52_metrics\", \"outcome\": \"failed\"}": 0,
            "taskpool_attempts_failed_total{\"role\": \"t52_metrics\", \"outcome\": \"retried\"}": 0}'::jsonb,
    'Should give a role with no history its counters at 0');

/****************************************************************************/
-- the counters follow the history: two completions, a retried and a permanent failure, a stale recovery

SELECT c.id AS first_id
FROM tests.make_claimed_task(role := 't52_metrics') AS m, complete_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt)) AS c \gset
SELECT c.id AS second_id
FROM tests.make_claimed_task(role := 't52_metrics') AS m, complete_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt)) AS c \gset
-- retried once (max_retries 1), then failed for good
SELECT f.id AS failing_id
FROM tests.make_claimed_task(role := 't52_metrics') AS m, fail_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt), 'HTTP 503') AS f \gset
UPDATE worker_tasks SET scheduled_for = now() WHERE id = :failing_id;   -- past its backoff
SELECT f.status AS failed_status
FROM claim_task('t52_metrics', 'w1') AS m, fail_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt), 'HTTP 503 again') AS f \gset
SELECT id AS stale_id FROM tests.make_claimed_task(role := 't52_metrics', max_retries := 2) \gset
SELECT tests.age_heartbeat(:stale_id, interval '1 day');
SELECT is(recover_stale_tasks(), 1, 'Should recover the silent task');

SELECT is(pg_temp.sample('taskpool_tasks_completed_total', '{"role": "t52_metrics"}'), 2::double precision,
    'Should count the completions');
SELECT is(pg_temp.sample('taskpool_attempts_failed_total', '{"role": "t52_metrics", "outcome": "retried"}'),
          2::double precision,
    'Should count the failed attempts that were retried, the stale one included');
SELECT is(pg_temp.sample('taskpool_attempts_failed_total', '{"role": "t52_metrics", "outcome": "failed"}'),
          1::double precision,
    'Should count the attempt that failed for good');
SELECT is(pg_temp.sample('taskpool_stale_recoveries_total', '{"role": "t52_metrics"}'), 1::double precision,
    'Should count the stale recovery');
SELECT is(pg_temp.sample('taskpool_tasks', '{"role": "t52_metrics", "status": "completed"}'), 2::double precision,
    'Should count the completed tasks in the pool');
SELECT is(pg_temp.sample('taskpool_tasks', '{"role": "t52_metrics", "status": "failed"}'), 1::double precision,
    'Should count the failed task in the pool');
SELECT is(pg_temp.sample('taskpool_tasks', '{"role": "t52_metrics", "status": "pending"}'), 1::double precision,
    'Should count the recovered task as pending');

/****************************************************************************/
-- a fold moves the history into task_metric_totals and changes no counter

-- Everything finished two days ago, long before the fold's safe point (a minute before now).
UPDATE worker_tasks SET completed_at = now() - interval '2 days'
WHERE role = 't52_metrics' AND completed_at IS NOT NULL;
UPDATE worker_task_attempts a SET ended_at = now() - interval '2 days'
FROM worker_tasks t WHERE t.id = a.task_id AND t.role = 't52_metrics';
SELECT pg_temp.counters() AS before_fold \gset

SELECT ok(_fold_task_metric_totals() <= now() - interval '1 minute',
    'Should move the watermark to a minute before now at most');
SELECT is(pg_temp.counters(), :'before_fold'::jsonb, 'Should change no counter by a fold');
SELECT is((SELECT total FROM task_metric_totals WHERE role = 't52_metrics' AND counter = 'completed'), 2::bigint,
    'Should hold the folded completions in task_metric_totals');
SELECT _fold_task_metric_totals() AS again \gset
SELECT is(pg_temp.counters(), :'before_fold'::jsonb, 'Should count nothing twice by a second fold');

/****************************************************************************/
-- a prune deletes history and changes no counter: folded rows, and rows newer than the watermark

-- finished after the fold: newer than the watermark, counted where it is until the prune
SELECT status AS cancelled_status FROM cancel_task(:stale_id) \gset
SELECT c.id AS third_id
FROM tests.make_claimed_task(role := 't52_metrics') AS m, complete_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt)) AS c \gset
SELECT pg_temp.counters() AS before_prune \gset
SELECT is(pg_temp.sample('taskpool_tasks_completed_total', '{"role": "t52_metrics"}'), 3::double precision,
    'Should count a completion newer than the watermark');

SELECT is(prune_tasks(interval '1 day'), 3, 'Should prune the two completed tasks and the failed one');
SELECT is(pg_temp.counters(), :'before_prune'::jsonb, 'Should change no counter by pruning folded rows');
SELECT is(pg_temp.sample('taskpool_tasks', '{"role": "t52_metrics", "status": "completed"}'), 1::double precision,
    'Should count only the completed task left in the pool');

-- a second ago: past a prune's cutoff of now, still newer than the watermark
SELECT tests.age_completion(:third_id, interval '1 second'), tests.age_completion(:stale_id, interval '1 second');
SELECT is(prune_tasks(interval '0'), 2, 'Should prune the completion newer than the watermark, and the cancelled task');
SELECT is(pg_temp.counters(), :'before_prune'::jsonb,
    'Should change no counter by pruning rows the tick had not folded');
SELECT is(pg_temp.sample('taskpool_tasks', '{"role": "t52_metrics", "status": "completed"}'), 0::double precision,
    'Should count no completed task in the pool once all are pruned');

/****************************************************************************/
-- platforms

SELECT acquire_platform_request('t48_platform') AS first_wait \gset
SELECT is(pg_temp.sample('taskpool_platform_requests_total', '{"platform": "t48_platform"}'), 1::double precision,
    'Should count a request let through');

SELECT * FROM finish();
ROLLBACK;
