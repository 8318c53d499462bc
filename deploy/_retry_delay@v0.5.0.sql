-- Deploy taskpool:_retry_delay to pg
-- requires: task_roles

BEGIN;
SET client_min_messages = 'warning';

-- _retry_delay
-- How long a task of a role waits before retry number retry_count + 1: least(base * 2^retry_count, cap).
CREATE FUNCTION _retry_delay(role text, retry_count integer)
RETURNS interval
LANGUAGE sql STABLE
AS $$
    -- In seconds, with the exponent bounded, because interval * 2^n overflows long before the cap
    -- would apply.
    SELECT make_interval(secs => least(
               extract(epoch FROM r.backoff_base) * power(2::numeric, least(greatest(_retry_delay.retry_count, 0), 60)),
               extract(epoch FROM r.backoff_cap)))
    FROM task_roles r
    WHERE r.role = _retry_delay.role;
$$;

REVOKE ALL ON FUNCTION _retry_delay(text, integer) FROM PUBLIC;

COMMIT;
