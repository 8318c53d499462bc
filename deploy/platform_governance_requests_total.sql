-- Deploy taskpool:platform_governance_requests_total to pg
-- requires: platform_governance

BEGIN;
SET client_min_messages = 'warning';

ALTER TABLE platform_governance ADD COLUMN requests_total bigint NOT NULL DEFAULT 0;
COMMENT ON COLUMN platform_governance.requests_total IS
    'Requests acquire_platform_request let through since the row was created: a counter for '
    'taskpool_metrics, kept in the row the request updates anyway.';

COMMIT;
