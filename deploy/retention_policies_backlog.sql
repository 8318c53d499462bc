-- Deploy taskpool:retention_policies_backlog to pg
-- requires: retention_policies

BEGIN;
SET client_min_messages = 'warning';

-- Whether retention keeps up, for /metrics and `pyworker retention`: apply_retention writes both
-- after each run, so reading them costs nothing (counting what is due can take seconds).
ALTER TABLE retention_policies
    ADD COLUMN backlog      bigint,
    ADD COLUMN behind_since timestamptz;

COMMENT ON COLUMN retention_policies.backlog IS
    'How many rows were due and left when the last apply_retention run of the policy ended: 0 when it '
    'finished, else its pruner''s dry-run count; NULL before its first run.';
COMMENT ON COLUMN retention_policies.behind_since IS
    'When the runs of the policy started ending with rows left (the first unfinished run of the '
    'current streak); NULL when the last run finished. A time far back means retention does not keep up.';

COMMIT;
