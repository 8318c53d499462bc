-- Revert taskpool:platform_governance_enabled from pg

BEGIN;

ALTER TABLE platform_governance
    DROP CONSTRAINT platform_governance_disable_details_only_when_disabled,
    DROP CONSTRAINT platform_governance_disabled_at_when_disabled,
    DROP COLUMN disable_reason,
    DROP COLUMN disabled_by,
    DROP COLUMN disabled_at,
    DROP COLUMN enabled;

COMMIT;
