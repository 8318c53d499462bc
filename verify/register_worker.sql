-- Verify taskpool:register_worker on pg

BEGIN;

SELECT 'register_worker(text,text,text,integer)'::regprocedure;
SELECT 'register_worker(text,text[],text,integer)'::regprocedure;
SELECT 'register_worker(text,text[],text,integer,integer)'::regprocedure;

ROLLBACK;
