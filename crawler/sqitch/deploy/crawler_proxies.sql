-- Deploy taskpool_crawler:crawler_proxies to pg
-- requires: taskpool:taskpool_now

BEGIN;
SET client_min_messages = 'warning';

-- crawler_proxies
-- The HTTP proxies each platform's requests go through, in turn, with each proxy's health.
CREATE TABLE crawler_proxies (
    id                    bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    platform              text        NOT NULL,
    url                   text        NOT NULL,
    enabled               boolean     NOT NULL DEFAULT true,
    rest_base             interval    NOT NULL DEFAULT '30 seconds',
    rest_cap              interval    NOT NULL DEFAULT '30 minutes',
    consecutive_failures  integer     NOT NULL DEFAULT 0,
    rested_until          timestamptz,
    last_success_at       timestamptz,
    last_failure_at       timestamptz,
    last_error            text,
    requests_total        bigint      NOT NULL DEFAULT 0,
    failures_total        bigint      NOT NULL DEFAULT 0,
    -- The rotation: the proxy whose turn is lowest goes next; taking it gives it the next turn.
    turn                  bigint      NOT NULL DEFAULT 0,
    added_at              timestamptz NOT NULL DEFAULT taskpool_now(),

    CONSTRAINT crawler_proxies_platform_url_key UNIQUE (platform, url),
    CONSTRAINT crawler_proxies_rest_positive CHECK (rest_base > interval '0' AND rest_cap >= rest_base),
    CONSTRAINT crawler_proxies_counts_not_negative
        CHECK (consecutive_failures >= 0 AND requests_total >= 0 AND failures_total >= 0)
);

CREATE INDEX crawler_proxies_platform_turn_idx ON crawler_proxies (platform, turn);

-- The turns handed out, across every platform: strictly increasing, so no two takes tie.
CREATE SEQUENCE crawler_proxy_turns AS bigint;

COMMENT ON TABLE crawler_proxies IS
    'The HTTP proxies a platform''s requests go through, in turn (take_proxy), with their health '
    '(report_proxy_result). A platform with no enabled proxy is crawled directly. Operators manage '
    'the rows with add_proxy, remove_proxy, enable_proxy and disable_proxy.';
COMMENT ON COLUMN crawler_proxies.url IS
    'http://host:port or https://host:port, optionally with user:password@ before the host; '
    'v_crawler_proxies and the logs show it with the password masked.';
COMMENT ON COLUMN crawler_proxies.rest_base IS
    'How long the first failure in a row rests the proxy; each further one doubles it, up to rest_cap.';
COMMENT ON COLUMN crawler_proxies.rested_until IS
    'take_proxy passes the proxy over until then (set by a failure, cleared by a success).';
COMMENT ON COLUMN crawler_proxies.consecutive_failures IS
    'Failures since the last success: the cooldown grows with them.';
COMMENT ON COLUMN crawler_proxies.requests_total IS 'Requests the proxy was taken for.';
COMMENT ON COLUMN crawler_proxies.failures_total IS 'Requests that failed at the proxy (not at the platform).';

COMMIT;
