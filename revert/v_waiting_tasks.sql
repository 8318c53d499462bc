-- Revert taskpool:v_waiting_tasks from pg: back to the body of deploy/v_waiting_tasks@v0.8.0.sql

BEGIN;
SET client_min_messages = 'warning';

-- v_waiting_tasks
-- Every pending, claimed or running task and what it waits for: why a pending task is not claimed yet.
-- Dropped, not replaced: the concurrency columns cannot be dropped from a view in place.
DROP VIEW v_waiting_tasks;
CREATE VIEW v_waiting_tasks AS
WITH
clock AS (
    SELECT taskpool_now() AS now
)
SELECT t.id, t.role, t.status, t.dispensary_id, t.platform, t.worker_id, t.attempt,
       t.retry_count, t.max_retries,
       reason.waiting_for,
       -- when claim_task may take it first: the later of its scheduled_for and its circuit's
       -- reopening; unknown (NULL) while its role is paused or its platform disabled, which only
       -- an operator ends
       CASE WHEN t.status = 'pending' AND reason.waiting_for NOT IN ('paused', 'disabled')
            THEN greatest(t.scheduled_for, g.open_until) END AS ready_at,
       t.error_message
FROM worker_tasks t
CROSS JOIN clock c
-- its role, for the pause
JOIN task_roles r ON r.role = t.role
-- its platform, while the circuit is open (claim_task skips the platform's tasks until then)
LEFT JOIN platform_governance g ON g.platform = t.platform AND g.open_until > c.now
-- its platform, while an operator has disabled it
LEFT JOIN platform_governance off ON off.platform = t.platform AND NOT off.enabled
-- the attempt that put it back to pending, if one did: retried after a failure, or released
-- (snoozed or handed back) by its worker; a claim starts a new attempt, which has no row yet
LEFT JOIN worker_task_attempts a ON a.task_id = t.id AND a.attempt = t.attempt
-- the blockers in the order claim_task meets them: status, the role's pause, the platform
-- disabled, time (the later of the circuit and scheduled_for decides), then the store's other task
CROSS JOIN LATERAL (
    SELECT CASE
        WHEN t.status <> 'pending' THEN 'handler'
        WHEN r.paused_at IS NOT NULL THEN 'paused'
        WHEN off.platform IS NOT NULL THEN 'disabled'
        WHEN g.open_until >= t.scheduled_for THEN 'circuit'
        WHEN t.scheduled_for > c.now AND a.outcome = 'retried' THEN 'retry'
        WHEN t.scheduled_for > c.now AND a.outcome = 'released' THEN 'snooze'
        WHEN t.scheduled_for > c.now THEN 'schedule'
        WHEN EXISTS (SELECT FROM worker_tasks busy
                     WHERE busy.dispensary_id = t.dispensary_id
                       AND busy.status IN ('claimed', 'running')) THEN 'store'
        ELSE 'worker'
    END AS waiting_for
) AS reason
WHERE t.status IN ('pending', 'claimed', 'running');

COMMENT ON VIEW v_waiting_tasks IS
    'One row per pending, claimed or running task. waiting_for: handler (claimed or running: its '
    'worker has it), paused (its role is paused: resume_role), disabled (its platform is disabled: '
    'enable_platform), circuit (its platform''s circuit is open until ready_at), retry (backing off '
    'after a failed attempt, error_message says why, until ready_at), snooze (put back by its worker '
    'until ready_at), schedule (not tried yet, not before ready_at), store (ready, but its store has '
    'another task claimed or running), worker (ready since ready_at: no worker of its role took it yet).';

COMMIT;
