-- Verify taskpool:complete_tasks on pg

BEGIN;

SELECT 'complete_tasks(text,jsonb)'::regprocedure;

ROLLBACK;
