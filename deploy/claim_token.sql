-- Deploy taskpool:claim_token to pg
-- requires: worker_tasks
-- requires: worker_task_attempts

BEGIN;
SET client_min_messages = 'warning';

-- The attempt counter alone is no fence across lost writes: a claim acknowledged by a primary
-- whose WAL never reached the replica promoted in its place is forgotten, and the next claim of
-- the task gets the same attempt number, maybe for the same worker (measured on a Patroni pair
-- with asynchronous replication: 712 tasks). A random token per claim is one the forgotten
-- claim cannot have had, whatever the database remembers. gen_random_uuid() (core since
-- PostgreSQL 13, 122 bits from the server's strong random source) rather than a random bigint:
-- no extension to install, a collision never in question, and psql prints it whole. No index:
-- every call that checks it finds the task by its id, and an unindexed column keeps the
-- claim's and the completion's updates HOT.
ALTER TABLE worker_tasks ADD COLUMN claim_token uuid;
ALTER TABLE worker_task_attempts ADD COLUMN claim_token uuid;

COMMENT ON COLUMN worker_tasks.claim_token IS
    'The token of the task''s claim (random, new at every claim; NULL while pending): every worker call passes it with the attempt.';
COMMENT ON COLUMN worker_task_attempts.claim_token IS
    'The token of the claim this attempt was (NULL for attempts recorded before claim tokens).';

-- Tasks claimed or running at the upgrade get a token their worker never saw: the worker's
-- calls are refused as for a lost claim, and the task comes back by stale recovery. Finished
-- tasks keep none: no call can act on them any more.
UPDATE worker_tasks SET claim_token = gen_random_uuid() WHERE status IN ('claimed', 'running');

COMMIT;
