-- Verify taskpool:task_status_transition_allowed on pg

BEGIN;

-- The compiled function allows exactly the table's rows.
SELECT 1/(COUNT(*) = 0)::integer
FROM (SELECT f.status AS from_status, t.status AS to_status
      FROM unnest(ARRAY['pending', 'claimed', 'running', 'completed', 'failed', 'cancelled']) f(status),
           unnest(ARRAY['pending', 'claimed', 'running', 'completed', 'failed', 'cancelled']) t(status)) pairs
WHERE _task_status_transition_allowed(pairs.from_status, pairs.to_status)
      <> EXISTS (SELECT FROM task_status_transitions s
                 WHERE s.from_status = pairs.from_status AND s.to_status = pairs.to_status);

ROLLBACK;
