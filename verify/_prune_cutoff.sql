-- Verify taskpool:_prune_cutoff on pg

BEGIN;

SELECT has_function_privilege('_prune_cutoff(interval)', 'execute');

ROLLBACK;
