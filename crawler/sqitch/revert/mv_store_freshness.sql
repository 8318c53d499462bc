-- Revert taskpool:mv_store_freshness from pg

BEGIN;

DROP MATERIALIZED VIEW mv_store_freshness;

COMMIT;
