-- Deploy taskpool:_jsonb_timestamptz to pg

BEGIN;
SET client_min_messages = 'warning';

-- _jsonb_timestamptz
-- The JSON string as a timestamptz when it parses as one, else NULL (never an error).
CREATE FUNCTION _jsonb_timestamptz(value jsonb)
RETURNS timestamptz
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
BEGIN
    IF jsonb_typeof(value) IS DISTINCT FROM 'string' THEN
        RETURN NULL;
    END IF;
    -- Only dates of our era: 'infinity', 'now'-style keywords and BC dates would parse but
    -- schedule nothing sane.
    IF value #>> '{}' !~ '^\s*\d{4}-\d{2}-\d{2}' OR value #>> '{}' ~* '\mBC\M' THEN
        RETURN NULL;
    END IF;
    RETURN (value #>> '{}')::timestamptz;
EXCEPTION WHEN data_exception THEN
    -- Bad dates, times, zones and offsets each raise their own code; all mean "not a timestamp".
    RETURN NULL;
END;
$$;

REVOKE ALL ON FUNCTION _jsonb_timestamptz(jsonb) FROM PUBLIC;

COMMIT;
