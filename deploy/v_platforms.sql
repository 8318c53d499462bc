-- Deploy taskpool:v_platforms to pg
-- requires: platform_governance
-- requires: platform_events
-- requires: platform_governance_enabled
-- requires: v_platforms@v0.8.0
-- requires: _platform_tokens
-- requires: _platform_next_token_at

BEGIN;
SET client_min_messages = 'warning';

-- v_platforms
-- Per platform: its rate limit, its circuit's state, and how often the circuit opened and closed
-- in the last day, for the dashboard's platforms page.
CREATE OR REPLACE VIEW v_platforms AS
SELECT g.platform,
       -- false: an operator disabled it (disable_platform), and no claim hands out its tasks
       g.enabled,
       g.disabled_at,
       g.disabled_by,
       g.disable_reason,
       g.requests_per_minute,
       g.failure_threshold,
       g.cooldown,
       -- open: no task of the platform is claimed until open_until; half_open: past it, the
       -- next request decides (a success closes the circuit, a failure opens it again)
       CASE WHEN g.open_until > taskpool_now() THEN 'open'
            WHEN g.open_until IS NOT NULL THEN 'half_open'
            ELSE 'closed' END AS circuit,
       g.open_until,
       g.consecutive_failures,
       g.last_success_at,
       g.last_failure_at,
       g.last_error,
       coalesce(e.opened_last_day, 0) AS opened_last_day,
       coalesce(e.closed_last_day, 0) AS closed_last_day,
       e.last_event_at,
       -- the token bucket now: the whole tokens are what claims and requests may take at once
       -- (negative: tokens reserved ahead by reserve_platform_request, not yet refilled)
       _platform_tokens(g.tokens, g.tokens_at, g.requests_per_minute, taskpool_now()) AS tokens_now,
       -- when the next request may go: no claim hands out a task that takes a token before then
       greatest(taskpool_now(), _platform_next_token_at(g.tokens, g.tokens_at, g.requests_per_minute)) AS next_token_at
FROM platform_governance g
LEFT JOIN LATERAL (
    SELECT count(*) FILTER (WHERE ev.event = 'opened' AND ev.at > taskpool_now() - interval '1 day') AS opened_last_day,
           count(*) FILTER (WHERE ev.event = 'closed' AND ev.at > taskpool_now() - interval '1 day') AS closed_last_day,
           max(ev.at) AS last_event_at
    FROM platform_events ev
    WHERE ev.platform = g.platform
) AS e ON true;

COMMENT ON VIEW v_platforms IS
    'Per platform: enabled (false while disable_platform holds its tasks back: disabled_at, '
    'disabled_by, disable_reason); requests_per_minute, failure_threshold and cooldown; circuit (open until '
    'open_until, half_open past it until a request succeeds, else closed); the circuit''s openings '
    'and closings in the last day (platform_events) and its last event; tokens_now, its rate limit''s '
    'token bucket now, and next_token_at, when its next request may go (a claim of a role with '
    'claims_platform_token hands out none of its tasks before).';

COMMIT;
