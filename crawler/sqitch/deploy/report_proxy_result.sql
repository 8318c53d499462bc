-- Deploy taskpool_crawler:report_proxy_result to pg
-- requires: crawler_proxy_functions

-- report_proxy_result's home: its live body, unchanged from crawler_proxy_functions.
-- Change report_proxy_result here, with `sqitch rework report_proxy_result`.

BEGIN;
SET client_min_messages = 'warning';

-- report_proxy_result
-- Records how a request through a proxy went: a failure rests the proxy, longer with each in a row; a success clears its failures.
CREATE OR REPLACE FUNCTION report_proxy_result(proxy_id bigint, succeeded boolean, error text DEFAULT NULL)
RETURNS timestamptz
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT report_proxy_result(3, false, 'connection refused');
-- Returns rested_until: NULL after a success, or for a proxy removed since it was taken (the
-- report is then ignored). Report failures of the proxy only (it cannot be reached, it answers
-- 502/503/504 itself, a timeout through it): an answer the platform gave through it is a
-- success of the proxy. The n-th failure in a row rests it for rest_base * 2^(n-1), at most
-- rest_cap.
DECLARE
    v_rested_until timestamptz;
BEGIN
    IF report_proxy_result.succeeded IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'succeeded is required';
    END IF;
    IF report_proxy_result.succeeded THEN
        UPDATE crawler_proxies p
        SET consecutive_failures = 0, rested_until = NULL, last_success_at = taskpool_now()
        WHERE p.id = report_proxy_result.proxy_id;
        RETURN NULL;
    END IF;
    UPDATE crawler_proxies p
    SET consecutive_failures = p.consecutive_failures + 1,
        failures_total = p.failures_total + 1,
        last_failure_at = taskpool_now(),
        last_error = left(coalesce(nullif(btrim(report_proxy_result.error), ''), 'failed (no error given)'), 1000),
        rested_until = taskpool_now()
            + least(p.rest_cap, p.rest_base * power(2, least(p.consecutive_failures, 30)))
    WHERE p.id = report_proxy_result.proxy_id
    RETURNING p.rested_until INTO v_rested_until;
    RETURN v_rested_until;
END;
$$;

COMMIT;
