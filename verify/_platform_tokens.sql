-- Verify taskpool:_platform_tokens on pg

BEGIN;

-- half a minute at 60 a minute refills 30 tokens, capped at the burst of 5
SELECT 1 / (_platform_tokens(0, now() - interval '30 seconds', 60, now()) = 5)::integer;

ROLLBACK;
