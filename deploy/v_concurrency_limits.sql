-- Deploy taskpool:v_concurrency_limits to pg
-- requires: concurrency_limits

BEGIN;
SET client_min_messages = 'warning';

-- v_concurrency_limits
-- Every concurrency limit with how many of its tasks run now, and every key that runs under its kind's default.
CREATE VIEW v_concurrency_limits AS
WITH held AS (
    SELECT s.kind, s.key, count(s.task_id)::integer AS running
    FROM concurrency_slots s
    GROUP BY s.kind, s.key
)
-- the limits set: a key's own, or a kind's default ('*': running is then the sum of its keys')
SELECT l.kind, l.key, l.max_running,
       CASE WHEN l.kind = 'store' THEN NULL
            WHEN l.key = '*' THEN (SELECT coalesce(sum(h.running), 0)::integer FROM held h
                                   WHERE h.kind = l.kind
                                     AND NOT EXISTS (SELECT FROM concurrency_limits o
                                                     WHERE o.kind = h.kind AND o.key = h.key))
            ELSE coalesce((SELECT h.running FROM held h WHERE h.kind = l.kind AND h.key = l.key), 0) END AS running,
       CASE WHEN l.key = '*' THEN 'default' ELSE 'own' END AS limit_source,
       l.updated_at
FROM concurrency_limits l
UNION ALL
-- the keys with tasks running under their kind's default
SELECT h.kind, h.key, d.max_running, h.running, 'default', d.updated_at
FROM held h
JOIN concurrency_limits d ON d.kind = h.kind AND d.key = '*'
WHERE h.running > 0
  AND NOT EXISTS (SELECT FROM concurrency_limits o WHERE o.kind = h.kind AND o.key = h.key);

COMMENT ON VIEW v_concurrency_limits IS
    'One row per concurrency limit (key ''*'': the kind''s default, running summed over the keys it '
    'holds; store: the store exclusion, one task per store, counted by the stores themselves) and '
    'one per key running under its kind''s default: kind, key, max_running, running (claimed or '
    'running now), limit_source (own or default), updated_at.';

COMMIT;
