-- Deploy taskpool:task_claim_turns to pg
-- requires: task_roles

BEGIN;
SET client_min_messages = 'warning';

-- task_claim_turns
-- When a claim last handed out a role's tasks of each platform: at equal priority the claim
-- serves the platform served least recently first, so one busy platform cannot take every slot.
-- A row is written only by a claim that had ready tasks of more than one platform to choose from.
CREATE TABLE task_claim_turns (
    role       text        NOT NULL REFERENCES task_roles (role) ON DELETE CASCADE,
    -- '' for the tasks without a platform, which take their turn like one more platform
    platform   text        NOT NULL,
    claimed_at timestamptz NOT NULL,
    PRIMARY KEY (role, platform)
);

COMMENT ON TABLE task_claim_turns IS
    'Per role and platform ('''' for tasks without one; a task''s concurrency key follows its platform '
    'after U+001F): when a claim last handed out such a task while other platforms or keys had ready '
    'tasks too. The claim rotates between them at equal priority by it.';

COMMIT;
