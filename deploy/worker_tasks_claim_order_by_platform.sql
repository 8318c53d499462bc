-- Deploy taskpool:worker_tasks_claim_order_by_platform to pg
-- requires: worker_tasks
-- requires: worker_tasks_headers

BEGIN;
SET client_min_messages = 'warning';

-- The claim walks each platform's ready tasks apart (one walk per platform with pending tasks
-- of the role, and one for the tasks without a platform), to skip a platform without a token
-- and to rotate between platforms: the platform is the index's second key. The distinct
-- platforms of a role are found on this index too, one descent each. The tasks without a
-- platform are keyed '' (no platform has that name): the claim's walk of them is an equality on
-- the key, which a btree returns in the order of the next keys (platform IS NULL is not, and the
-- generic plan sorted every pending task of the role instead). Rebuilt, not added: a
-- second index over every pending task would cost each enqueue and each claim one more entry.
-- The task's own concurrency key (the header concurrency_key, '' for none) is the third key, for
-- the same reasons: the claim walks each (platform, key) apart, so that a key at its cap
-- (concurrency_limits) is not walked at all, however many of its tasks wait.
DROP INDEX worker_tasks_claim_order_idx;
CREATE INDEX worker_tasks_claim_order_idx
    ON worker_tasks (role, (coalesce(platform, '')), (coalesce(headers ->> 'concurrency_key', '')), priority DESC, created_at, id, scheduled_for)
    WHERE status = 'pending';
COMMENT ON INDEX worker_tasks_claim_order_idx IS
    'Serves claim_tasks: a role''s ready tasks of each platform and concurrency key (and those without) '
    'in priority DESC, created_at order, and the (platform, key) pairs a role''s pending tasks name.';

COMMIT;
