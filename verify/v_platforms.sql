-- Verify taskpool:v_platforms on pg

BEGIN;

SELECT platform, enabled, disabled_at, disabled_by, disable_reason, requests_per_minute, failure_threshold, cooldown, circuit, open_until,
       consecutive_failures, last_success_at, last_failure_at, last_error, opened_last_day,
       closed_last_day, last_event_at, tokens_now, next_token_at
FROM v_platforms
WHERE false;

ROLLBACK;
