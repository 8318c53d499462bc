-- The transition check without a query per row (issue 13): task_status_transitions is compiled
-- into _task_status_transition_allowed, recompiled whenever the table changes, and the table
-- stays the law: a row added or removed is obeyed at once, in the same session.
BEGIN;
SELECT plan(9);

INSERT INTO task_roles (role, requires_store) VALUES ('test_compiled', false);

CREATE TEMP VIEW status_pairs AS
SELECT f.status AS from_status, t.status AS to_status
FROM unnest(ARRAY['pending', 'claimed', 'running', 'completed', 'failed', 'cancelled']) f(status),
     unnest(ARRAY['pending', 'claimed', 'running', 'completed', 'failed', 'cancelled']) t(status);

SELECT is_empty(
    $$SELECT from_status, to_status FROM status_pairs p
      WHERE _task_status_transition_allowed(p.from_status, p.to_status)
            <> EXISTS (SELECT FROM task_status_transitions s
                       WHERE s.from_status = p.from_status AND s.to_status = p.to_status)$$,
    'Should allow exactly the pairs of task_status_transitions');
SELECT is(_task_status_transition_allowed(NULL, 'pending'), false,
    'Should say false, not NULL, for a status it does not know');
SELECT ok(
    (SELECT pg_get_functiondef('tg_worker_tasks__enforce_transition()'::regprocedure)
            !~ 'FROM task_status_transitions s\s+WHERE s.from_status = OLD.status AND s.to_status = NEW.status'),
    'Should check a transition without querying task_status_transitions for each row');

-- The trigger's cached plan sees the recompiled function in the same session.
SELECT tests.make_task(role := 'test_compiled') AS first_id \gset
SELECT tests.make_task(role := 'test_compiled') AS second_id \gset
SELECT lives_ok(
    format($$UPDATE worker_tasks SET status = 'cancelled' WHERE id = %s$$, :first_id),
    'pending -> cancelled is legal to begin with');
DELETE FROM task_status_transitions WHERE from_status = 'pending' AND to_status = 'cancelled';
SELECT throws_ok(
    format($$UPDATE worker_tasks SET status = 'cancelled' WHERE id = %s$$, :second_id),
    '23514', format('illegal status transition for task %s: pending -> cancelled', :second_id),
    'Should refuse a transition at once when its row is deleted');
SELECT is(_task_status_transition_allowed('pending', 'cancelled'), false,
    'Should recompile on DELETE');

INSERT INTO task_status_transitions (from_status, to_status, meaning)
VALUES ('completed', 'cancelled', 'a test''s own rule');
SELECT c.id AS third_id FROM claim_and_start_tasks('test_compiled', 'w-compiled') c,
    complete_task(c.id, 'w-compiled', c.attempt, tests.claim_token(c.id, c.attempt)) d \gset
SELECT lives_ok(
    format($$UPDATE worker_tasks SET status = 'cancelled' WHERE id = %s$$, :third_id),
    'Should allow a transition at once when its row is inserted');

SELECT is((SELECT status FROM worker_tasks WHERE id = :third_id), 'cancelled',
    'a completed task is cancelled under that rule');

TRUNCATE task_status_transitions;
SELECT is_empty(
    $$SELECT from_status, to_status FROM status_pairs p
      WHERE _task_status_transition_allowed(p.from_status, p.to_status)$$,
    'Should allow nothing once the table is truncated');

SELECT * FROM finish();
ROLLBACK;
