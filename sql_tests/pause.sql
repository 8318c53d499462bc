-- pause: pause_role and resume_role, disable_platform and enable_platform. A paused role's
-- tasks are not claimed (claim_task, claim_tasks, claim_and_start_tasks), enqueues still land,
-- tasks in flight heartbeat and complete; resuming makes them claimable and wakes the workers
-- waiting for the role. A disabled platform's tasks are skipped, another platform's claimed. Both
-- show in v_worker_capacity, v_platforms, v_waiting_tasks, taskpool_health and taskpool_metrics.
-- Bad input changes nothing; the workers' login may call none of the four. Wake-ups happen at the
-- end of each statement here (SET CONSTRAINTS ALL IMMEDIATE), as in 20_wake_ups.
BEGIN;
SELECT plan(71);
SET CONSTRAINTS ALL IMMEDIATE;

INSERT INTO task_roles (role, description, requires_store)
SELECT r, 'pgTAP pause', false
FROM unnest(ARRAY['t54_paused', 't54_other', 't54_platforms']) AS r;

/****************************************************************************/
-- structure

SELECT has_function('public', 'pause_role', ARRAY['text', 'text'], 'Should have pause_role(role, reason)');
SELECT has_function('public', 'resume_role', ARRAY['text'], 'Should have resume_role(role)');
SELECT has_function('public', 'disable_platform', ARRAY['text', 'text'], 'Should have disable_platform(platform, reason)');
SELECT has_function('public', 'enable_platform', ARRAY['text'], 'Should have enable_platform(platform)');
SELECT has_column('v_worker_capacity', 'paused', 'v_worker_capacity should have a paused column');
SELECT has_column('v_platforms', 'enabled', 'v_platforms should have an enabled column');

/****************************************************************************/
-- pausing a role: nothing of it is claimed, enqueues land, tasks in flight finish

INSERT INTO tests.fx (name, id) VALUES
    ('in_flight', (tests.make_claimed_task(worker_id := 't54-w1', role := 't54_paused', started := true)).id);
INSERT INTO tests.fx (name, id) VALUES
    ('ready', tests.make_task(role := 't54_paused')),
    ('other', tests.make_task(role := 't54_other'));
SELECT register_worker('t54-waiter', 't54_paused', 'host', 1);

SELECT is((SELECT ROW(p.role, p.paused_at IS NOT NULL, p.paused_by, p.pause_reason)
           FROM pause_role('t54_paused', reason := ' platform maintenance ') p),
          ROW('t54_paused'::text, true, session_user::text COLLATE "default", 'platform maintenance'::text),
          'pause_role should return the role paused now, by the session''s user, with the reason trimmed');
SELECT ok((SELECT paused_at = taskpool_now() FROM task_roles WHERE role = 't54_paused'),
    'pause_role should record when the role was paused (taskpool_now())');
SELECT tests.snapshot_all();

SELECT is_empty($$SELECT * FROM claim_task('t54_paused', 't54-w2')$$,
    'claim_task should hand out no task of a paused role');
SELECT is_empty($$SELECT * FROM claim_tasks('t54_paused', 't54-w2', 10)$$,
    'claim_tasks should hand out no task of a paused role');
SELECT is_empty($$SELECT * FROM claim_and_start_tasks('t54_paused', 't54-w2', 10)$$,
    'claim_and_start_tasks should hand out no task of a paused role');
SELECT ok(tests.unchanged('ready'), 'The paused role''s ready task should be left pending as it was');
SELECT is((SELECT ROW(waiting_for, ready_at) FROM v_waiting_tasks WHERE id = tests.fx('ready')),
          ROW('paused'::text, NULL::timestamptz),
          'v_waiting_tasks should say the task waits for its role''s pause, with no time it may be claimed');
SELECT is((SELECT id FROM claim_task('t54_other', 't54-w2')), tests.fx('other'),
    'Another role''s ready task should still be claimed');

SELECT is((SELECT status FROM enqueue_task('t54_paused', '{"while": "paused"}')), 'pending',
    'An enqueue of a paused role should still land, pending');
SELECT is(heartbeat_task(tests.fx('in_flight'), 't54-w1', 1, tests.claim_token(tests.fx('in_flight'), 1)), 'continue',
    'A task in flight of a paused role should still be heartbeaten');
SELECT is((SELECT status FROM complete_task(tests.fx('in_flight'), 't54-w1', 1, tests.claim_token(tests.fx('in_flight'), 1), '{"done": true}')), 'completed',
    'A task in flight of a paused role should still complete');

SELECT is((SELECT ROW(paused, ready_tasks) FROM v_worker_capacity WHERE role = 't54_paused'),
          ROW(true, 2::bigint), 'v_worker_capacity should show the role paused, with its ready tasks');
SELECT is((SELECT paused FROM v_worker_capacity WHERE role = 't54_other'), false,
    'v_worker_capacity should show another role not paused');
SELECT is(task_slots_wanted('t54_paused'), 0,
    'task_slots_wanted should ask no slot for the ready tasks of a paused role with none running');
SELECT is((SELECT value FROM taskpool_metrics() WHERE metric = 'taskpool_role_paused' AND labels = '{"role": "t54_paused"}'),
    1::double precision, 'taskpool_metrics should report the role paused (taskpool_role_paused 1)');
SELECT is((SELECT value FROM taskpool_metrics() WHERE metric = 'taskpool_role_paused' AND labels = '{"role": "t54_other"}'),
    0::double precision, 'taskpool_metrics should report another role not paused (0)');

SELECT is((SELECT status FROM taskpool_health() WHERE check_name = 'paused_roles'), 'attention',
    'taskpool_health should ask for attention to a paused role with ready tasks waiting');
SELECT matches((SELECT detail FROM taskpool_health() WHERE check_name = 'paused_roles'),
    '^1 role\(s\) paused: t54_paused since .* by \S+ \(platform maintenance\), 2 ready task\(s\) waiting$',
    'The paused_roles check should name the role, when, by whom and why it was paused, and its ready tasks');
SELECT matches((SELECT action FROM taskpool_health() WHERE check_name = 'paused_roles'),
    'SELECT resume_role\(''t54_paused''\)', 'The paused_roles check should say how to resume it');
SELECT is((SELECT array_agg(check_name) FROM taskpool_health()),
    ARRAY['stuck_tasks', 'unserved_roles', 'schedule_tick', 'schedule_errors', 'open_circuits', 'paused_roles',
          'disabled_platforms', 'xmin_horizon'],
    'taskpool_health should report its checks in order, the paused roles and disabled platforms among them');

UPDATE task_roles SET paused_at = paused_at - interval '1 hour' WHERE role = 't54_paused';
SELECT is((SELECT ROW(p.paused_at, p.pause_reason) FROM pause_role('t54_paused', 'another reason') p),
          (SELECT ROW(r.paused_at, r.pause_reason) FROM task_roles r WHERE r.role = 't54_paused'),
          'Pausing a paused role should change nothing: it keeps when and why it was first paused');
SELECT ok((SELECT paused_at < taskpool_now() FROM task_roles WHERE role = 't54_paused'),
    'Pausing a paused role should keep its first paused_at');

/****************************************************************************/
-- resuming: the tasks are claimable again, the waiting workers woken

SELECT mark_worker_waiting('t54-waiter', 't54_paused');
SELECT is(tests.waiting_workers('t54_paused'), ARRAY['t54-waiter'], 'The worker should wait for the paused role (fixture)');
SELECT is((SELECT ROW(p.paused_at, p.paused_by, p.pause_reason) FROM resume_role('t54_paused') p),
          ROW(NULL::timestamptz, NULL::text, NULL::text),
          'resume_role should return the role with its pause cleared');
SELECT is(tests.waiting_workers('t54_paused'), '{}'::text[],
    'resume_role should wake the workers waiting for the role when it has ready tasks');
SELECT is((SELECT id FROM claim_task('t54_paused', 't54-w2')), tests.fx('ready'),
    'A resumed role''s ready task should be claimed');
SELECT is((SELECT ROW(p.paused_at, p.paused_by) FROM resume_role('t54_paused') p),
          ROW(NULL::timestamptz, NULL::text), 'Resuming a role that is not paused should change nothing');
SELECT is((SELECT ROW(status, detail) FROM taskpool_health() WHERE check_name = 'paused_roles'),
          ROW('ok'::text, 'no role is paused'::text), 'taskpool_health should find no paused role after the resume');

SELECT is((SELECT ROW(p.pause_reason, p.paused_at IS NOT NULL) FROM pause_role('t54_other') p),
          ROW(NULL::text, true), 'pause_role should take no reason');
SELECT is((SELECT status FROM taskpool_health() WHERE check_name = 'paused_roles'), 'ok',
    'taskpool_health should not ask for attention to a paused role with nothing ready');
SELECT is((SELECT detail FROM taskpool_health() WHERE check_name = 'paused_roles'),
    (SELECT format('1 role(s) paused: t54_other since %s by %s, 0 ready task(s) waiting',
                   date_trunc('second', paused_at), session_user) FROM task_roles WHERE role = 't54_other'),
    'It should still name the paused role');
SELECT resume_role('t54_other');

/****************************************************************************/
-- disabling a platform: its tasks are skipped, another platform's claimed

SELECT tests.make_store('t54 store p', platform := 't54_p'), tests.make_store('t54 store q', platform := 't54_q');
INSERT INTO tests.fx (name, id) VALUES
    ('on_p', (SELECT id FROM enqueue_task('t54_platforms', platform := 't54_p', priority := 10))),
    ('on_q', (SELECT id FROM enqueue_task('t54_platforms', platform := 't54_q')));

SELECT is((SELECT ROW(g.enabled, g.disabled_at = taskpool_now(), g.disabled_by, g.disable_reason)
           FROM disable_platform('t54_p', 'they asked us to stop') g),
          ROW(false, true, session_user::text COLLATE "default", 'they asked us to stop'::text),
          'disable_platform should return the platform disabled now, by whom and why');
SELECT is((SELECT requests_per_minute FROM platform_governance WHERE platform = 't54_p'), 120,
    'disable_platform should give a platform without a governance row one, with the defaults');
SELECT is((SELECT array_agg(id) FROM claim_tasks('t54_platforms', 't54-w3', 10)), ARRAY[tests.fx('on_q')],
    'The claim should skip the disabled platform''s task and claim the other platform''s');
SELECT is((SELECT status FROM worker_tasks WHERE id = tests.fx('on_p')), 'pending',
    'The disabled platform''s task should stay pending');
SELECT is((SELECT ROW(waiting_for, ready_at) FROM v_waiting_tasks WHERE id = tests.fx('on_p')),
          ROW('disabled'::text, NULL::timestamptz),
          'v_waiting_tasks should say the task waits for its platform to be enabled');
SELECT is((SELECT ROW(enabled, disabled_by) FROM v_platforms WHERE platform = 't54_p'),
          ROW(false, session_user::text COLLATE "default"), 'v_platforms should show the platform disabled, and by whom');
SELECT is((SELECT value FROM taskpool_metrics() WHERE metric = 'taskpool_platform_disabled' AND labels = '{"platform": "t54_p"}'),
    1::double precision, 'taskpool_metrics should report the platform disabled (taskpool_platform_disabled 1)');
SELECT is((SELECT status FROM taskpool_health() WHERE check_name = 'disabled_platforms'), 'attention',
    'taskpool_health should ask for attention to a disabled platform with ready tasks waiting');
SELECT matches((SELECT detail FROM taskpool_health() WHERE check_name = 'disabled_platforms'),
    '^1 platform\(s\) disabled: t54_p since .* \(they asked us to stop\), 1 ready task\(s\) waiting$',
    'The disabled_platforms check should name the platform, why, and its ready tasks');

UPDATE platform_governance SET disabled_at = disabled_at - interval '1 hour' WHERE platform = 't54_p';
SELECT is((SELECT ROW(g.disabled_at, g.disable_reason) FROM disable_platform('t54_p', 'again') g),
          (SELECT ROW(g.disabled_at, g.disable_reason) FROM platform_governance g WHERE g.platform = 't54_p'),
          'Disabling a disabled platform should change nothing');
SELECT ok((SELECT disabled_at < taskpool_now() FROM platform_governance WHERE platform = 't54_p'),
    'Disabling a disabled platform should keep its first disabled_at');

SELECT is((SELECT ROW(g.enabled, g.disabled_at, g.disabled_by, g.disable_reason) FROM enable_platform('t54_p') g),
          ROW(true, NULL::timestamptz, NULL::text, NULL::text),
          'enable_platform should return the platform enabled, its disabling cleared');
SELECT is((SELECT array_agg(id) FROM claim_tasks('t54_platforms', 't54-w4', 10)), ARRAY[tests.fx('on_p')],
    'An enabled platform''s task should be claimed');
SELECT is((SELECT enabled FROM enable_platform('t54_p')), true, 'Enabling an enabled platform should change nothing');
SELECT is((SELECT ROW(status, detail) FROM taskpool_health() WHERE check_name = 'disabled_platforms'),
          ROW('ok'::text, 'no platform is disabled'::text), 'taskpool_health should find no disabled platform after the enable');

/****************************************************************************/
-- bad input: refused, naming it, nothing changed

SELECT tests.rejects($$SELECT pause_role(NULL)$$, '22004', 'role is required',
    'pause_role should refuse a NULL role', '{task_roles}');
SELECT tests.rejects($$SELECT pause_role('t54_nope')$$, '22023', 'unknown role ''t54_nope''',
    'pause_role should refuse an unknown role', '{task_roles}');
SELECT tests.rejects($$SELECT pause_role('t54_other', repeat('x', 1001))$$, '22023',
    'reason must be at most 1000 characters, not 1001', 'pause_role should refuse a reason of over 1000 characters', '{task_roles}');
SELECT tests.rejects($$SELECT resume_role(NULL)$$, '22004', 'role is required',
    'resume_role should refuse a NULL role', '{task_roles}');
SELECT tests.rejects($$SELECT resume_role('t54_nope')$$, '22023', 'unknown role ''t54_nope''',
    'resume_role should refuse an unknown role', '{task_roles}');
SELECT tests.rejects($$SELECT disable_platform(NULL)$$, '22004', 'platform is required',
    'disable_platform should refuse a NULL platform', '{platform_governance}');
SELECT tests.rejects($$SELECT disable_platform('t54_nowhere')$$, '22023',
    'unknown platform ''t54_nowhere'': no store, task or platform_governance row names it',
    'disable_platform should refuse a platform nothing names', '{platform_governance}');
SELECT tests.rejects($$SELECT disable_platform('t54_q', repeat('x', 1001))$$, '22023',
    'reason must be at most 1000 characters, not 1001', 'disable_platform should refuse a reason of over 1000 characters', '{platform_governance}');
SELECT tests.rejects($$SELECT enable_platform('t54_nowhere')$$, '22023',
    'unknown platform ''t54_nowhere'': no store, task or platform_governance row names it',
    'enable_platform should refuse a platform nothing names', '{platform_governance}');

/****************************************************************************/
-- privileges: an operator's functions, not the workers'

SELECT is((SELECT array_agg(f) FROM unnest(ARRAY['pause_role(text, text)', 'resume_role(text)',
                                                 'disable_platform(text, text)', 'enable_platform(text)']) AS f
           WHERE has_function_privilege('taskpool_worker', f, 'execute')),
          NULL, 'taskpool_worker should execute none of pause_role, resume_role, disable_platform, enable_platform');

SELECT * FROM finish();
ROLLBACK;
