-- Deploy taskpool:task_roles_claims_platform_token to pg
-- requires: task_roles

BEGIN;
SET client_min_messages = 'warning';

-- A role whose every task makes one request to its platform (a crawl of a store's menu): the
-- claim is the place to take that request's token, so that a claimed task never waits for its
-- platform's rate limit and a slot never holds a task that cannot run. Off by default: a task's
-- platform is also set for roles that never call it (a refresh that reads a saved payload).
ALTER TABLE task_roles ADD COLUMN claims_platform_token boolean NOT NULL DEFAULT false;

COMMENT ON COLUMN task_roles.claims_platform_token IS
    'true: each task of the role makes one request to its platform. A claim hands out such a task '
    'only when the platform''s token bucket holds a token, and takes it (platform_governance.tokens), '
    'so the handler sends its first request at once; further requests use reserve_platform_request.';

COMMIT;
