-- Verify taskpool:_platform_next_token_at on pg

BEGIN;

-- half a token short at 60 a minute: half a second later
SELECT 1 / (_platform_next_token_at(0.5, '2026-01-01', 60) = '2026-01-01 00:00:00.5')::integer;

ROLLBACK;
