-- Revert taskpool_crawler:_payloads_active_tasks_name from pg

-- Nothing to undo: deploy/_payloads_active_tasks_name.sql redefined _payloads_active_tasks_name as crawl_payload_retention_spares_active_tasks had left it.

BEGIN;
COMMIT;
