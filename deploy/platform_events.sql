-- Deploy taskpool:platform_events to pg
-- requires: platform_governance

BEGIN;
SET client_min_messages = 'warning';

-- platform_events
-- The circuit breaker's history: each time a platform's circuit opened or closed.
CREATE TABLE platform_events (
    id                    bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    platform              text        NOT NULL REFERENCES platform_governance (platform) ON DELETE CASCADE,
    event                 text        NOT NULL,
    at                    timestamptz NOT NULL DEFAULT taskpool_now(),
    consecutive_failures  integer     NOT NULL,
    error_message         text,

    CONSTRAINT platform_events_event_known CHECK (event IN ('opened', 'closed'))
);

COMMENT ON TABLE platform_events IS 'Circuit-breaker events, written by record_platform_result.';

CREATE INDEX platform_events_platform_at_idx ON platform_events (platform, at);
COMMENT ON INDEX platform_events_platform_at_idx IS 'A platform''s events in time order.';

COMMIT;
