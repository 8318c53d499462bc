-- retention: retention that runs by itself (issue 17, item 3). Policies are rows of
-- retention_policies; apply_retention applies the enabled ones a bounded batch each (the tick
-- does, every minute), count_retention is the dry run, set_retention_policy changes one. (The
-- crawler's policies, payloads and snapshots, are in crawler/sql_tests/retention.sql.)
BEGIN;
SELECT plan(72);

INSERT INTO task_roles (role, description, max_retries) VALUES
    ('t53_retention', 'pgTAP retention: finished tasks', 3);

/****************************************************************************/
-- structure

SELECT has_table('public', 'retention_policies', 'Should have table retention_policies');
SELECT col_is_pk('public', 'retention_policies', 'name', 'Should key retention_policies by name');
SELECT has_function('public', 'apply_retention', ARRAY['integer', 'numeric', 'boolean'],
    'Should have apply_retention(max_batches, max_seconds, count_backlog)');
SELECT is_procedure('public', 'apply_retention_in_batches', ARRAY['integer', 'numeric', 'numeric', 'jsonb'],
    'Should have the procedure apply_retention_in_batches(max_batches, max_seconds, pause_ratio, pruned)');
SELECT has_function('public', 'count_retention', ARRAY[]::text[], 'Should have count_retention()');
SELECT has_function('public', 'set_retention_policy', ARRAY['text', 'interval', 'boolean', 'integer', 'text[]'],
    'Should have set_retention_policy(name, keep, enabled, batch_size, statuses)');
SELECT results_eq(
    $$SELECT name, pruner, keep, statuses, enabled FROM retention_policies ORDER BY name$$,
    $$VALUES ('completed_tasks', '_prune_policy_tasks', interval '7 days', ARRAY['completed'], true),
             ('failed_tasks', '_prune_policy_tasks', interval '30 days', ARRAY['failed', 'cancelled'], true),
             ('platform_events', '_prune_policy_platform_events', interval '90 days', NULL::text[], true),
             ('silent_workers', '_prune_policy_workers', interval '7 days', NULL::text[], true),
             ('task_attempts', '_prune_policy_attempts', interval '30 days', NULL::text[], true)$$,
    'Should ship the core''s default policies: completed 7 days, failed and cancelled 30, circuit events 90, attempts 30, silent workers 7');
SELECT ok(NOT has_function_privilege('taskpool_worker', 'apply_retention(integer, numeric, boolean)', 'EXECUTE'),
    'Should not let taskpool_worker apply retention');
SELECT ok(NOT has_function_privilege('taskpool_worker', 'set_retention_policy(text, interval, boolean, integer, text[])', 'EXECUTE'),
    'Should not let taskpool_worker change a policy');

/****************************************************************************/
-- fixtures: finished tasks of every status, young and old; an active task with an old heartbeat

CREATE TEMP TABLE t53 (name text PRIMARY KEY, id bigint);
CREATE FUNCTION pg_temp.finish(name text, outcome text, age interval) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
BEGIN
    IF outcome = 'cancelled' THEN
        v_id := tests.make_task(role := 't53_retention');
        PERFORM cancel_task(v_id);
    ELSE
        SELECT m.id INTO v_id FROM tests.make_claimed_task(role := 't53_retention', worker_id := 'w53') m;
        IF outcome = 'completed' THEN
            PERFORM complete_task(v_id, 'w53', 1, tests.claim_token(v_id, 1));
        ELSE
            PERFORM fail_task(v_id, 'w53', 1, tests.claim_token(v_id, 1), 'permanent', retryable := false);
        END IF;
    END IF;
    PERFORM tests.age_completion(v_id, age);
    INSERT INTO t53 VALUES (name, v_id);
END;
$$;
SELECT pg_temp.finish('completed_8d', 'completed', '8 days'), pg_temp.finish('completed_9d', 'completed', '9 days'),
       pg_temp.finish('completed_10d', 'completed', '10 days'), pg_temp.finish('completed_6d', 'completed', '6 days'),
       pg_temp.finish('failed_31d', 'failed', '31 days'), pg_temp.finish('failed_20d', 'failed', '20 days'),
       pg_temp.finish('cancelled_40d', 'cancelled', '40 days'), pg_temp.finish('cancelled_8d', 'cancelled', '8 days');
SELECT id AS active_id FROM tests.make_claimed_task(role := 't53_retention', worker_id := 'w53-active') \gset
SELECT tests.age_heartbeat(:active_id, interval '60 days') AS aged \gset
CREATE FUNCTION pg_temp.kept() RETURNS text[] LANGUAGE sql AS $$
    SELECT coalesce(array_agg(x.name ORDER BY x.name), '{}') FROM t53 x JOIN worker_tasks t ON t.id = x.id;
$$;

/****************************************************************************/
-- count_retention: the dry run

SELECT results_eq(
    $$SELECT policy, enabled, keep, would_prune, error FROM count_retention() WHERE policy LIKE '%tasks'$$,
    $$VALUES ('completed_tasks', true, interval '7 days', 3::bigint, NULL::text),
             ('failed_tasks', true, interval '30 days', 2::bigint, NULL::text)$$,
    'Should count per policy what would go: completed over 7 days, failed and cancelled over 30');
SELECT is(cardinality(pg_temp.kept()), 8, 'Should have deleted nothing while counting');

/****************************************************************************/
-- apply_retention: a bounded batch per policy, each by its status and age

SELECT set_retention_policy('completed_tasks', batch_size := 2) IS NOT NULL AS set \gset
SELECT coalesce((SELECT total FROM task_metric_totals
                 WHERE role = 't53_retention' AND counter = 'pruned_completed'), 0) AS pruned_completed_before \gset
SELECT results_eq(
    $$SELECT policy, pruned, finished, error FROM apply_retention() WHERE policy LIKE '%tasks'$$,
    $$VALUES ('completed_tasks', 2::bigint, false, NULL::text), ('failed_tasks', 2::bigint, true, NULL::text)$$,
    'Should prune one batch per policy (2 of the 3 old completed tasks), saying which have more to go');
SELECT is(pg_temp.kept(), ARRAY['cancelled_8d', 'completed_6d', 'completed_8d', 'failed_20d'],
    'Should prune the oldest completed first, and the failed and cancelled older than 30 days');
SELECT ok(EXISTS (SELECT FROM worker_tasks WHERE id = :active_id),
    'Should never prune an active task, however old its heartbeat');
SELECT is((SELECT total FROM task_metric_totals WHERE role = 't53_retention' AND counter = 'pruned_completed'),
    (:pruned_completed_before + 2)::bigint,
    'Should count the pruned completions in task_metric_totals, as prune_tasks does');
SELECT results_eq(
    $$SELECT last_pruned, pruned_total, last_run_at, last_error FROM retention_policies WHERE name = 'completed_tasks'$$,
    $$VALUES (2::bigint, 2::bigint, now(), NULL::text)$$,
    'Should record the run on the policy: last_run_at, last_pruned, pruned_total');
SELECT results_eq(
    $$SELECT policy, pruned, finished FROM apply_retention(max_batches := 5) WHERE policy = 'completed_tasks'$$,
    $$VALUES ('completed_tasks', 1::bigint, true)$$,
    'Should prune the rest in the next call and say it is finished');
SELECT is((SELECT pruned_total FROM retention_policies WHERE name = 'completed_tasks'), 3::bigint,
    'Should add each run to pruned_total');

-- a disabled policy is not applied
SELECT set_retention_policy('failed_tasks', keep := '7 days', enabled := false) IS NOT NULL AS set \gset
SELECT is((SELECT count(*) FROM apply_retention() WHERE policy = 'failed_tasks'), 0::bigint,
    'Should not apply a disabled policy');
SELECT is(pg_temp.kept(), ARRAY['cancelled_8d', 'completed_6d', 'failed_20d'],
    'Should keep what a disabled policy would prune');
SELECT is((SELECT would_prune FROM count_retention() WHERE policy = 'failed_tasks'), 2::bigint,
    'Should still count a disabled policy''s rows in the dry run');
SELECT set_retention_policy('failed_tasks', enabled := true, statuses := ARRAY['cancelled']) IS NOT NULL AS set \gset
SELECT is((SELECT pruned FROM apply_retention() WHERE policy = 'failed_tasks'), 1::bigint,
    'Should prune only the statuses the policy names');
SELECT is(pg_temp.kept(), ARRAY['completed_6d', 'failed_20d'], 'Should have pruned the cancelled task alone');

/****************************************************************************/
-- task_attempts: attempts of kept tasks, by their own age, once the metrics folded them

SELECT m.id AS retried_id FROM tests.make_claimed_task(role := 't53_retention', worker_id := 'w53-r') m \gset
SELECT fail_task(:retried_id, 'w53-r', 1, tests.claim_token(:retried_id, 1), 'first try failed') IS NOT NULL AS failed \gset
UPDATE worker_task_attempts SET ended_at = now() - interval '40 days' WHERE task_id = :retried_id;
SELECT is((SELECT would_prune FROM count_retention() WHERE policy = 'task_attempts'), 0::bigint,
    'Should not count attempts the metrics have not folded yet');
SELECT _fold_task_metric_totals() IS NOT NULL AS folded \gset
SELECT is((SELECT would_prune FROM count_retention() WHERE policy = 'task_attempts'), 1::bigint,
    'Should count an attempt older than 30 days once folded');
SELECT is((SELECT pruned FROM apply_retention() WHERE policy = 'task_attempts'), 1::bigint,
    'Should prune the old attempt');
SELECT ok(NOT EXISTS (SELECT FROM worker_task_attempts WHERE task_id = :retried_id)
          AND EXISTS (SELECT FROM worker_tasks WHERE id = :retried_id),
    'Should take the attempt and leave its task');

/****************************************************************************/
-- silent_workers: registry rows not heard from for longer than keep, with their roles and waits

SELECT count(*) AS registered FROM register_worker('w53-gone', ARRAY['t53_retention', 'store_discovery'], 'h', 1) \gset
SELECT count(*) AS registered FROM register_worker('w53-live', 't53_retention', 'h', 2) \gset
SELECT mark_worker_waiting('w53-gone') AS marked \gset
UPDATE task_workers SET last_seen_at = now() - interval '8 days' WHERE worker_id = 'w53-gone';
UPDATE task_workers SET last_seen_at = now() - interval '6 days' WHERE worker_id = 'w53-live';
SELECT is((SELECT would_prune FROM count_retention() WHERE policy = 'silent_workers'), 1::bigint,
    'Should count the worker silent for longer than 7 days');
SELECT is((SELECT pruned FROM apply_retention() WHERE policy = 'silent_workers'), 1::bigint,
    'Should prune it');
SELECT is(ARRAY(SELECT worker_id FROM task_workers WHERE worker_id LIKE 'w53-%' ORDER BY 1), ARRAY['w53-live'],
    'Should keep the worker heard from 6 days ago');
SELECT is((SELECT count(*) FROM task_worker_roles WHERE worker_id = 'w53-gone')
          + (SELECT count(*) FROM task_worker_waits WHERE worker_id = 'w53-gone'), 0::bigint,
    'Should take its roles and waits with it');

/****************************************************************************/
-- a policy that fails records why and does not stop the others

INSERT INTO retention_policies (name, pruner, keep, description)
VALUES ('t53_broken', 't53_no_such_pruner', interval '1 day', 'pgTAP 53: a pruner that does not exist');
SELECT pg_temp.finish('completed_12d', 'completed', '12 days');
SELECT results_eq(
    $$SELECT policy, pruned, finished, error FROM apply_retention() WHERE policy IN ('completed_tasks', 't53_broken')$$,
    $$VALUES ('completed_tasks', 1::bigint, true, NULL::text),
             ('t53_broken', 0::bigint, true,
              'pruner t53_no_such_pruner(retention_policies, integer, boolean) returning bigint does not exist')$$,
    'Should report the broken policy''s error and still apply the others');
SELECT is((SELECT last_error FROM retention_policies WHERE name = 't53_broken'),
    'pruner t53_no_such_pruner(retention_policies, integer, boolean) returning bigint does not exist',
    'Should record the error in last_error');
SELECT is((SELECT error FROM count_retention() WHERE policy = 't53_broken'),
    'pruner t53_no_such_pruner(retention_policies, integer, boolean) returning bigint does not exist',
    'Should say in the dry run why a policy cannot count');
CREATE FUNCTION pg_temp.t53_raising(policy retention_policies, max_rows integer, dry_run boolean) RETURNS bigint
LANGUAGE plpgsql AS $$ BEGIN DELETE FROM worker_tasks WHERE role = 't53_retention'; RAISE 'disk on fire'; END; $$;
CREATE FUNCTION t53_raising(policy retention_policies, max_rows integer, dry_run boolean) RETURNS bigint
LANGUAGE sql AS $$ SELECT pg_temp.t53_raising(policy, max_rows, dry_run) $$;
UPDATE retention_policies SET pruner = 't53_raising' WHERE name = 't53_broken';
SELECT is((SELECT error FROM apply_retention() WHERE policy = 't53_broken'), 'disk on fire',
    'Should report what a pruner raised');
SELECT ok(EXISTS (SELECT FROM worker_tasks WHERE role = 't53_retention'),
    'Should keep none of the deletions of a pruner that raised');
DELETE FROM retention_policies WHERE name = 't53_broken';

/****************************************************************************/
-- the tick applies retention by itself, and says what went

SELECT pg_temp.finish('completed_11d', 'completed', '11 days');
SELECT is(tick_schedules() -> 'retention', '{"completed_tasks": {"pruned": 1, "error": null}}'::jsonb,
    'Should apply a batch of each policy in the tick and report the policies that pruned something');
SELECT ok(NOT EXISTS (SELECT FROM t53 x JOIN worker_tasks t ON t.id = x.id WHERE x.name = 'completed_11d'),
    'Should have pruned the old completed task in the tick');
SELECT ok(NOT tick_schedules() ? 'retention',
    'Should leave retention out of the tick''s report when nothing went');

/****************************************************************************/
-- set_retention_policy: each value checked, nothing changed on refusal

SELECT results_eq(
    $$SELECT keep, enabled, batch_size, statuses FROM set_retention_policy('failed_tasks', keep := '14 days',
                                                                          batch_size := 500,
                                                                          statuses := ARRAY['failed', 'cancelled'])$$,
    $$VALUES (interval '14 days', true, 500, ARRAY['failed', 'cancelled'])$$,
    'Should change the values given and keep the others');
SELECT results_eq(
    $$SELECT keep, enabled FROM set_retention_policy('failed_tasks')$$,
    $$VALUES (interval '14 days', true)$$,
    'Should change nothing when given nothing but the name');

SELECT tests.rejects($$SELECT set_retention_policy('nope', keep := '1 day')$$, '22023',
    'unknown retention policy ''nope''', 'an unknown policy', '{retention_policies}');
SELECT tests.rejects($$SELECT set_retention_policy(NULL, keep := '1 day')$$, '22004',
    'the policy''s name is required', 'a NULL name', '{retention_policies}');
SELECT tests.rejects($$SELECT set_retention_policy('completed_tasks', keep := '-1 day')$$, '22023',
    'keep must be a positive interval of at most 100 years, not -1 days', 'a negative keep', '{retention_policies}');
SELECT tests.rejects($$SELECT set_retention_policy('completed_tasks', keep := '0')$$, '22023',
    'keep must be a positive interval of at most 100 years, not 00:00:00', 'a keep of 0', '{retention_policies}');
SELECT tests.rejects($$SELECT set_retention_policy('completed_tasks', keep := '101 years')$$, '22023',
    'keep must be a positive interval of at most 100 years, not 101 years', 'a keep over 100 years', '{retention_policies}');
SELECT tests.rejects($$SELECT set_retention_policy('completed_tasks', batch_size := 0)$$, '22023',
    'batch_size must be from 1 to 100000, not 0', 'a batch size of 0', '{retention_policies}');
SELECT tests.rejects($$SELECT set_retention_policy('completed_tasks', batch_size := 100001)$$, '22023',
    'batch_size must be from 1 to 100000, not 100001', 'a batch size over 100000', '{retention_policies}');
SELECT tests.rejects($$SELECT set_retention_policy('silent_workers', statuses := ARRAY['completed'])$$, '22023',
    'retention policy silent_workers does not prune tasks: it takes no statuses',
    'statuses for a policy that prunes no tasks', '{retention_policies}');
SELECT tests.rejects($$SELECT set_retention_policy('completed_tasks', statuses := ARRAY['pending'])$$, '22023',
    'statuses must be some of completed, failed and cancelled, not {pending}',
    'an active status', '{retention_policies}');
SELECT tests.rejects($$SELECT set_retention_policy('completed_tasks', statuses := ARRAY[]::text[])$$, '22023',
    'statuses must be some of completed, failed and cancelled, not {}',
    'no status at all', '{retention_policies}');
SELECT tests.rejects($$SELECT set_retention_policy('completed_tasks', statuses := ARRAY['completed', NULL])$$, '22023',
    'statuses must be some of completed, failed and cancelled, not {completed,NULL}',
    'a NULL status', '{retention_policies}');

SELECT tests.rejects($$SELECT * FROM apply_retention(0)$$, '22023',
    'max_batches must be positive, not 0', 'apply_retention with 0 batches', '{worker_tasks,retention_policies}');
SELECT tests.rejects($$SELECT * FROM apply_retention(NULL)$$, '22023',
    'max_batches must be positive, not NULL', 'apply_retention with NULL batches', '{worker_tasks,retention_policies}');
SELECT throws_ok($$CALL apply_retention_in_batches(max_batches := 0)$$, '22023',
    'max_batches must be positive, not 0', 'Should refuse 0 rounds in apply_retention_in_batches');
SELECT throws_ok($$CALL apply_retention_in_batches(max_seconds := -1)$$, '22023',
    'max_seconds must be positive, not -1', 'Should refuse a negative max_seconds in apply_retention_in_batches');
SELECT throws_ok($$CALL apply_retention_in_batches(pause_ratio := -1)$$, '22023',
    'pause_ratio must be from 0 to 100, not -1', 'Should refuse a negative pause_ratio');
SELECT throws_ok($$CALL apply_retention_in_batches(pause_ratio := NULL)$$, '22023',
    'pause_ratio must be from 0 to 100, not NULL', 'Should refuse a NULL pause_ratio');
SELECT throws_ok($$INSERT INTO retention_policies (name, pruner, keep, description) VALUES ('Bad Name', 'x', '1 day', 'x')$$,
    '23514', NULL, 'Should refuse a policy name that is not a lower-case word');

SELECT * FROM finish();
ROLLBACK;
