-- Deploy taskpool:v_waiting_tasks to pg
-- requires: worker_tasks
-- requires: worker_task_attempts
-- requires: platform_governance
-- requires: task_roles_paused
-- requires: platform_governance_enabled
-- requires: v_waiting_tasks@v0.8.0
-- requires: _platform_tokens
-- requires: task_roles_claims_platform_token
-- requires: _platform_next_token_at
-- requires: concurrency_limits
-- requires: _concurrency_keys_of

BEGIN;
SET client_min_messages = 'warning';

-- v_waiting_tasks
-- Every pending, claimed or running task and what it waits for: why a pending task is not claimed yet.
CREATE OR REPLACE VIEW v_waiting_tasks AS
WITH
clock AS (
    SELECT taskpool_now() AS now
),
-- the keys whose running tasks fill their limit: only a key with slots can be one, so this reads
-- concurrency_slots once, not a limit per task
full_keys AS (
    SELECT h.kind, h.key, h.running, lim.max_running
    FROM (SELECT s.kind, s.key, count(s.task_id)::integer AS running
          FROM concurrency_slots s
          GROUP BY s.kind, s.key) AS h
    CROSS JOIN LATERAL (SELECT l.max_running FROM concurrency_limits l
                        WHERE l.kind = h.kind AND l.key IN (h.key, '*')
                        ORDER BY l.key = '*' LIMIT 1) AS lim
    WHERE h.running >= lim.max_running
)
SELECT t.id, t.role, t.status, t.dispensary_id, t.platform, t.worker_id, t.attempt,
       t.retry_count, t.max_retries,
       reason.waiting_for,
       -- when claim_task may take it first: the latest of its scheduled_for, its circuit's
       -- reopening and its platform's next token (for a role that claims one); unknown (NULL)
       -- while its role is paused or its platform disabled, which only an operator ends
       CASE WHEN t.status = 'pending' AND reason.waiting_for NOT IN ('paused', 'disabled')
            THEN greatest(t.scheduled_for, g.open_until, lim.next_token_at) END AS ready_at,
       t.error_message,
       -- the cap it waits on (waiting_for concurrency): its first key at its limit
       cap.kind AS concurrency_kind, cap.key AS concurrency_key,
       cap.running AS concurrency_running, cap.max_running AS concurrency_limit
FROM worker_tasks t
CROSS JOIN clock c
-- its role, for the pause
JOIN task_roles r ON r.role = t.role
-- its platform, while the circuit is open (claim_task skips the platform's tasks until then)
LEFT JOIN platform_governance g ON g.platform = t.platform AND g.open_until > c.now
-- its platform's next token, while its bucket is empty, for a role whose claim takes one
LEFT JOIN LATERAL (
    SELECT _platform_next_token_at(b.tokens, b.tokens_at, b.requests_per_minute) AS next_token_at
    FROM platform_governance b
    WHERE b.platform = t.platform AND r.claims_platform_token
) AS lim ON lim.next_token_at > c.now
-- its platform, while an operator has disabled it
LEFT JOIN platform_governance off ON off.platform = t.platform AND NOT off.enabled
-- the attempt that put it back to pending, if one did: retried after a failure, or released
-- (snoozed or handed back) by its worker; a claim starts a new attempt, which has no row yet
LEFT JOIN worker_task_attempts a ON a.task_id = t.id AND a.attempt = t.attempt
-- its first key (role, platform, its own) whose running tasks fill its limit, for a pending task
LEFT JOIN LATERAL (
    SELECT f.kind, f.key, f.running, f.max_running
    FROM _concurrency_keys_of(t.role, t.platform, t.headers) WITH ORDINALITY AS k(kind, key, n)
    JOIN full_keys f ON f.kind = k.kind AND f.key = k.key
    -- no key full (the usual case): not looked up per task at all
    WHERE t.status = 'pending' AND EXISTS (SELECT FROM full_keys)
    ORDER BY k.n
    LIMIT 1
) AS cap ON true
-- the blockers in the order claim_task meets them: status, the role's pause, the platform
-- disabled, time (the later of the circuit and scheduled_for decides), the platform's rate limit,
-- a concurrency cap, then the store's other task
CROSS JOIN LATERAL (
    SELECT CASE
        WHEN t.status <> 'pending' THEN 'handler'
        WHEN r.paused_at IS NOT NULL THEN 'paused'
        WHEN off.platform IS NOT NULL THEN 'disabled'
        WHEN g.open_until >= t.scheduled_for THEN 'circuit'
        WHEN t.scheduled_for > c.now AND a.outcome = 'retried' THEN 'retry'
        WHEN t.scheduled_for > c.now AND a.outcome = 'released' THEN 'snooze'
        WHEN t.scheduled_for > c.now THEN 'schedule'
        WHEN lim.next_token_at IS NOT NULL THEN 'rate_limit'
        WHEN cap.kind IS NOT NULL THEN 'concurrency'
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
    'until ready_at), schedule (not tried yet, not before ready_at), rate_limit (ready, but its role claims a token of its '
    'platform''s rate limit and the bucket has none until ready_at), concurrency (ready, but a key of '
    'it is at its concurrency limit: concurrency_kind and concurrency_key name it, concurrency_running '
    'of concurrency_limit run), store (ready, but its store has '
    'another task claimed or running), worker (ready since ready_at: no worker of its role took it yet).';

COMMIT;
