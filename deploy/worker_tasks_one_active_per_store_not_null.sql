-- Deploy taskpool:worker_tasks_one_active_per_store_not_null to pg
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- The rule is about stores: a task without one (dispensary_id NULL) is never excluded by it, yet
-- every claim of such a task wrote a NULL entry into this unique index (and a completion left it
-- for vacuum). Measured: the SQL cycle writes about 1,000 bytes of WAL per task against 566 for
-- the plain-table cycle of ceiling 1b, and at 8 clients its backends wait mostly on the WAL
-- (LWLock WALWrite, IO WALSync): bytes saved are commits sooner. Same name, same rule; the
-- claim's busy-store probe (busy.dispensary_id = t.dispensary_id) still matches the predicate.
DROP INDEX worker_tasks_one_active_per_dispensary_idx;
CREATE UNIQUE INDEX worker_tasks_one_active_per_dispensary_idx
    ON worker_tasks (dispensary_id)
    WHERE status IN ('claimed', 'running') AND dispensary_id IS NOT NULL;
COMMENT ON INDEX worker_tasks_one_active_per_dispensary_idx IS
    'Rule: at most one claimed or running task per store; also the claim''s busy-store probe.';

COMMIT;
