-- Deploy taskpool:_cron_parse to pg
-- requires: cron_next_run

-- _cron_parse's home: its live body, unchanged from cron_next_run.
-- Change _cron_parse here, with `sqitch rework _cron_parse`.

BEGIN;
SET client_min_messages = 'warning';

-- _cron_parse
-- A cron expression as the values of its five fields, and whether a day must match both day fields.
CREATE OR REPLACE FUNCTION _cron_parse(
    cron         text,
    OUT minutes  integer[],
    OUT hours    integer[],
    OUT days     integer[],
    OUT months   integer[],
    OUT weekdays integer[],
    OUT both_day_fields boolean)
LANGUAGE plpgsql
IMMUTABLE
STRICT
AS $$
-- Example:
--   SELECT * FROM _cron_parse('*/15 9-17 * * mon-fri');
-- The five fields pg_cron accepts (minute, hour, day of month, month, day of week), and its
-- macros @yearly, @annually, @monthly, @weekly, @daily, @midnight and @hourly. As in cron, when
-- both day fields are restricted a day matches either; when one is *, it must match both.
DECLARE
    v_fields text[];
BEGIN
    v_fields := regexp_split_to_array(
        CASE lower(btrim(cron))
            WHEN '@yearly' THEN '0 0 1 1 *' WHEN '@annually' THEN '0 0 1 1 *'
            WHEN '@monthly' THEN '0 0 1 * *' WHEN '@weekly' THEN '0 0 * * 0'
            WHEN '@daily' THEN '0 0 * * *' WHEN '@midnight' THEN '0 0 * * *'
            WHEN '@hourly' THEN '0 * * * *'
            ELSE btrim(left(cron, 200)) END,
        '\s+');
    IF length(cron) > 200 OR cardinality(v_fields) <> 5 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('cron expression %L does not have five fields', left(cron, 200)),
            HINT = 'minute hour day-of-month month day-of-week, e.g. ''*/15 * * * *'' or ''0 3 * * mon-fri'', or @hourly, @daily, @weekly, @monthly, @yearly.';
    END IF;
    minutes := _cron_field(v_fields[1], 'minute', 0, 59);
    hours := _cron_field(v_fields[2], 'hour', 0, 23);
    days := _cron_field(v_fields[3], 'day of month', 1, 31);
    months := _cron_field(v_fields[4], 'month', 1, 12,
                          ARRAY['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']);
    weekdays := ARRAY(SELECT DISTINCT d % 7 FROM unnest(_cron_field(v_fields[5], 'day of week', 0, 7,
                          ARRAY['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'])) AS d ORDER BY 1);
    both_day_fields := v_fields[3] LIKE '*%' OR v_fields[5] LIKE '*%';
END;
$$;

COMMIT;
