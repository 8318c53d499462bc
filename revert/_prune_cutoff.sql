-- Revert taskpool:_prune_cutoff from pg

BEGIN;

DROP FUNCTION _prune_cutoff(interval);

COMMIT;
