-- Tasks in every state, written through a release's functions, before the upgrade in place.
-- Run by `make test-upgrade` against a database deployed up to a tag (UPGRADE_FROM, UPGRADE_FROM_SPLIT).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

INSERT INTO dispensaries (name, platform, active) VALUES ('Upgrade Store', 'simulated', true);

SELECT register_worker('upgrade-w', 'analytics_refresh', 'upgrade-host', 4242);
SELECT enqueue_task('analytics_refresh', '{"n": 1}', dedupe_key := 'upgrade:pending');
SELECT enqueue_task('analytics_refresh', '{"n": 2}', dedupe_key := 'upgrade:completed');
SELECT enqueue_task('analytics_refresh', '{"n": 3}', dedupe_key := 'upgrade:running');
SELECT enqueue_task('analytics_refresh', '{"n": 4}', dedupe_key := 'upgrade:failed', max_retries := 0);
SELECT enqueue_task('product_resync', '{}', dispensary_id := (SELECT max(id) FROM dispensaries),
                    scheduled_for := now() + interval '1 day', dedupe_key := 'upgrade:later');

-- Claim three in priority/created order: the second, third and fourth enqueued end up
-- completed, running and failed; the first stays pending for the upgraded claim.
SELECT cancel_task(id) FROM worker_tasks WHERE dedupe_key = 'upgrade:pending';
SELECT count(*) FROM claim_and_start_tasks('analytics_refresh', 'upgrade-w', 3);
-- A release from 0.7.0 on passes each claim's claim_token; one before has none.
SELECT to_regprocedure('complete_task(bigint, text, integer, uuid, jsonb, jsonb)') IS NOT NULL AS claim_tokens \gset
\if :claim_tokens
SELECT complete_task(id, 'upgrade-w', attempt, claim_token, '{"ok": true}')
FROM worker_tasks WHERE dedupe_key = 'upgrade:completed';
SELECT fail_task(id, 'upgrade-w', attempt, claim_token, 'boom', false)
FROM worker_tasks WHERE dedupe_key = 'upgrade:failed';
\else
SELECT complete_task(id, 'upgrade-w', attempt, '{"ok": true}')
FROM worker_tasks WHERE dedupe_key = 'upgrade:completed';
SELECT fail_task(id, 'upgrade-w', attempt, 'boom', false)
FROM worker_tasks WHERE dedupe_key = 'upgrade:failed';
\endif
-- A task claimed but not started, a store whose task runs while another of its tasks waits:
-- the upgraded start, completion and per-store claim must take them on.
SELECT enqueue_task('analytics_refresh', '{"n": 5}', dedupe_key := 'upgrade:claimed');
SELECT count(*) FROM claim_tasks('analytics_refresh', 'upgrade-w', 1);
INSERT INTO dispensaries (name, platform, active) VALUES ('Upgrade Store 2', 'simulated', true);
SELECT enqueue_task('product_resync', '{}', dispensary_id := (SELECT max(id) FROM dispensaries),
                    dedupe_key := 'upgrade:store-running');
SELECT count(*) FROM claim_and_start_tasks('product_resync', 'upgrade-w', 1);
SELECT enqueue_task('product_resync', '{}', dispensary_id := (SELECT max(id) FROM dispensaries),
                    priority := 5, dedupe_key := 'upgrade:store-pending');
SELECT retry_task(id) FROM worker_tasks WHERE dedupe_key = 'upgrade:pending';
