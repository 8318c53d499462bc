-- Deploy taskpool:platform_governance to pg
-- requires: taskpool_now

BEGIN;
SET client_min_messages = 'warning';

-- platform_governance
-- Per platform: its request rate limit (a token bucket) and its circuit breaker.
CREATE TABLE platform_governance (
    platform              text             PRIMARY KEY,
    requests_per_minute   integer          NOT NULL DEFAULT 120,
    failure_threshold     integer          NOT NULL DEFAULT 5,
    cooldown              interval         NOT NULL DEFAULT '5 minutes',
    tokens                double precision NOT NULL DEFAULT 0,
    tokens_at             timestamptz      NOT NULL DEFAULT '-infinity',
    consecutive_failures  integer          NOT NULL DEFAULT 0,
    open_until            timestamptz,
    last_success_at       timestamptz,
    last_failure_at       timestamptz,
    last_error            text,

    CONSTRAINT platform_governance_platform_not_blank CHECK (btrim(platform) <> '' AND length(platform) <= 100),
    CONSTRAINT platform_governance_rate_positive CHECK (requests_per_minute > 0),
    CONSTRAINT platform_governance_threshold_positive CHECK (failure_threshold > 0),
    CONSTRAINT platform_governance_cooldown_positive CHECK (cooldown > interval '0'),
    CONSTRAINT platform_governance_failures_not_negative CHECK (consecutive_failures >= 0)
);

COMMENT ON TABLE platform_governance IS
    'One row per platform, created with the defaults the first time a handler asks for it. '
    'Operators tune requests_per_minute, failure_threshold and cooldown here.';
COMMENT ON COLUMN platform_governance.tokens IS
    'The token bucket: refills at requests_per_minute / 60 per second up to a burst of '
    'greatest(1, requests_per_minute / 12) (5 seconds'' worth); each request takes one.';
COMMENT ON COLUMN platform_governance.open_until IS
    'Set when consecutive_failures reaches failure_threshold: until then the circuit is open, '
    'claim_task hands out none of the platform''s tasks and acquire_platform_request refuses. '
    'After it, requests go through again; the first success closes the circuit, a failure reopens it.';

COMMIT;
