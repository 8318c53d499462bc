-- Deploy taskpool_crawler:payload_storage_sweep to pg
-- requires: crawler_roles
-- requires: unrecorded_payload_paths
-- requires: taskpool:task_schedules_cadence

BEGIN;
SET client_min_messages = 'warning';

-- The role that removes stored payloads no row names (a worker killed between its upload and
-- record_crawl_payload leaves one), served by a crawler worker, which reaches the storage. The
-- tick enqueues it every 6 hours (its schedule; due at once, as the other defaults), so nothing
-- stored stays unrecorded for long without an operator; the sweep leaves objects younger than
-- older_than_seconds (6 hours), far longer than a crawl takes from its upload to its row. A name
-- already taken is left alone.
INSERT INTO task_roles (role, description, requires_store, max_retries, stale_threshold, backoff_base, backoff_cap) VALUES
    ('payload_storage_sweep', 'Remove stored payloads that no row names, once older than a grace period', false, 10, '30 minutes', '1 minute', '1 hour')
ON CONFLICT (role) DO NOTHING;

INSERT INTO task_schedules (name, role, kind, every, priority, payload, next_run_at)
VALUES ('payload_storage_sweep', 'payload_storage_sweep', 'single', interval '6 hours', 0,
        '{"older_than_seconds": 21600}', taskpool_now())
ON CONFLICT (name) DO NOTHING;

COMMIT;
