-- Revert taskpool:apply_retention from pg

BEGIN;

DROP FUNCTION count_retention();
DROP PROCEDURE apply_retention_in_batches(integer, numeric, numeric, jsonb);
DROP FUNCTION apply_retention(integer);
DROP FUNCTION _retention_pruner(retention_policies);

COMMIT;
