-- Revert taskpool:store_product_snapshots from pg

BEGIN;

DROP TABLE store_product_snapshots;

COMMIT;
