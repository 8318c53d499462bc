-- Deploy taskpool:_retry_delay to pg
-- requires: _retry_delay@v0.5.0
-- requires: task_roles_backoff_jitter
-- requires: worker_tasks_own_backoff

BEGIN;
SET client_min_messages = 'warning';

-- The task's own base and cap are new arguments: the two-argument function goes, as a second one
-- beside it would make a call of two arguments ambiguous.
DROP FUNCTION _retry_delay(text, integer);

-- _retry_delay
-- How long a task waits before retry number retry_count + 1: the capped exponential delay of its
-- role (or of its own backoff_base and backoff_cap), spread by the role's jitter.
CREATE FUNCTION _retry_delay(
    role         text,
    retry_count  integer,
    backoff_base interval DEFAULT NULL,
    backoff_cap  interval DEFAULT NULL)
RETURNS interval
LANGUAGE sql
-- random(): each call draws its own jitter.
VOLATILE
AS $$
    -- Example:
    --   SELECT _retry_delay('product_resync', 2);                      -- the role's backoff
    --   SELECT _retry_delay('product_resync', 2, interval '5 seconds'); -- a task's own base
    -- capped = least(base * multiplier^retry_count, cap); full jitter: random in [0, capped),
    -- equal: [capped / 2, capped), none: capped. The one place a retry delay is computed.
    SELECT make_interval(secs => (CASE r.backoff_jitter
                                      WHEN 'full'  THEN random() * d.capped
                                      WHEN 'equal' THEN d.capped / 2 + random() * d.capped / 2
                                      ELSE d.capped
                                  END)::double precision)
    FROM task_roles r
    CROSS JOIN LATERAL (
        SELECT extract(epoch FROM coalesce(_retry_delay.backoff_base, r.backoff_base)) AS base,
               extract(epoch FROM coalesce(_retry_delay.backoff_cap, r.backoff_cap)) AS cap,
               greatest(_retry_delay.retry_count, 0) AS n
    ) AS b
    CROSS JOIN LATERAL (
        -- The cap is decided on logarithms, because base * multiplier^n overflows long before
        -- a retry count as large as it may be would apply it. (double precision: random() is.)
        SELECT (CASE WHEN b.cap <= b.base OR b.n * ln(r.backoff_multiplier) >= ln(b.cap / b.base)
                     THEN b.cap
                     ELSE b.base * power(r.backoff_multiplier, b.n)
                END)::double precision AS capped
    ) AS d
    WHERE r.role = _retry_delay.role;
$$;

REVOKE ALL ON FUNCTION _retry_delay(text, integer, interval, interval) FROM PUBLIC;

COMMIT;
