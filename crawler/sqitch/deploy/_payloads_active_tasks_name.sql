-- Deploy taskpool_crawler:_payloads_active_tasks_name to pg
-- requires: crawl_payload_retention_spares_active_tasks

-- _payloads_active_tasks_name's home: its live body, unchanged from crawl_payload_retention_spares_active_tasks.
-- Change _payloads_active_tasks_name here, with `sqitch rework _payloads_active_tasks_name`.

BEGIN;
SET client_min_messages = 'warning';

-- _payloads_active_tasks_name
-- The payload ids (as text) that pending, claimed and running tasks name in their payload's payload_id.
CREATE OR REPLACE FUNCTION _payloads_active_tasks_name()
RETURNS TABLE (payload_id text)
LANGUAGE sql
STABLE
AS $$
    SELECT DISTINCT t.payload->>'payload_id'
    FROM worker_tasks t
    WHERE t.status IN ('pending', 'claimed', 'running')
      AND t.payload->>'payload_id' IS NOT NULL;
$$;

COMMIT;
