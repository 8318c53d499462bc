-- Revert taskpool:store_products from pg

BEGIN;

DROP TABLE store_products;

COMMIT;
