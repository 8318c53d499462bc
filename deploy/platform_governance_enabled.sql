-- Deploy taskpool:platform_governance_enabled to pg
-- requires: platform_governance

BEGIN;
SET client_min_messages = 'warning';

-- A disabled platform: no claim hands out its tasks until it is enabled again (seed 003's
-- sources.enabled), whatever its circuit says.
ALTER TABLE platform_governance
    ADD COLUMN enabled        boolean NOT NULL DEFAULT true,
    ADD COLUMN disabled_at    timestamptz,
    ADD COLUMN disabled_by    text,
    ADD COLUMN disable_reason text,
    ADD CONSTRAINT platform_governance_disabled_at_when_disabled
        CHECK ((disabled_at IS NULL) = enabled),
    ADD CONSTRAINT platform_governance_disable_details_only_when_disabled
        CHECK (NOT enabled OR (disabled_by IS NULL AND disable_reason IS NULL));

COMMENT ON COLUMN platform_governance.enabled IS
    'false while an operator has disabled the platform (disable_platform, enable_platform): no claim '
    'hands out its tasks; enqueues still land, and tasks already claimed or running finish.';
COMMENT ON COLUMN platform_governance.disabled_at IS
    'When the platform was disabled; NULL while it is enabled.';
COMMENT ON COLUMN platform_governance.disabled_by IS
    'The database user whose session disabled the platform.';
COMMENT ON COLUMN platform_governance.disable_reason IS
    'Why the platform was disabled, as the operator said (optional).';

COMMIT;
