-- Deploy taskpool:_jsonb_interval to pg

BEGIN;
SET client_min_messages = 'warning';

-- _jsonb_interval
-- The JSON value as an interval: a string PostgreSQL reads as one ("1 hour", "PT1H") or a number of seconds; else NULL (never an error).
CREATE FUNCTION _jsonb_interval(value jsonb)
RETURNS interval
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
AS $$
BEGIN
    IF jsonb_typeof(value) NOT IN ('number', 'string') THEN
        RETURN NULL;
    END IF;
    -- Only a value that may parse pays for the subtransaction of an exception block.
    BEGIN
        IF jsonb_typeof(value) = 'number' THEN
            RETURN make_interval(secs => (value #>> '{}')::double precision);
        END IF;
        RETURN (value #>> '{}')::interval;
    EXCEPTION WHEN data_exception THEN
        -- Bad syntax, out-of-range fields and numbers too big each raise their own code; all
        -- mean "not an interval".
        RETURN NULL;
    END;
END;
$$;

REVOKE ALL ON FUNCTION _jsonb_interval(jsonb) FROM PUBLIC;

COMMIT;
