-- Verify taskpool:platform_governance on pg

BEGIN;

SELECT platform, requests_per_minute, failure_threshold, cooldown, tokens, tokens_at,
       consecutive_failures, open_until, last_success_at, last_failure_at, last_error
FROM platform_governance
WHERE FALSE;

ROLLBACK;
