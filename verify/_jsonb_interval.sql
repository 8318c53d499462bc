-- Verify taskpool:_jsonb_interval on pg

BEGIN;

SELECT 1/(_jsonb_interval('"1 hour"') = interval '1 hour')::int;
SELECT 1/(_jsonb_interval('90') = interval '90 seconds')::int;
SELECT 1/(_jsonb_interval('"soon"') IS NULL)::int;

ROLLBACK;
