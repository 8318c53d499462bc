-- Deploy taskpool:cron_next_run to pg

BEGIN;
SET client_min_messages = 'warning';

-- _cron_field
-- The values one field of a cron expression allows, sorted; raises 22023 naming the field.
CREATE FUNCTION _cron_field(field text, field_name text, low integer, high integer, names text[] DEFAULT NULL)
RETURNS integer[]
LANGUAGE plpgsql
IMMUTABLE
AS $$
-- Example:
--   SELECT _cron_field('*/15', 'minute', 0, 59);    -- {0,15,30,45}
--   SELECT _cron_field('mon-fri', 'day of week', 0, 7, ARRAY['sun','mon','tue','wed','thu','fri','sat']);
-- An item is *, a value, or a range a-b, each with an optional /step; a/step runs from a to the
-- field's end. Names (jan..dec, sun..sat) stand for their numbers. The caller maps day of
-- week 7 to 0.
DECLARE
    v_item   text;
    v_parts  text[];
    v_from   integer;
    v_to     integer;
    v_step   integer;
    v_values integer[] := '{}';
BEGIN
    FOREACH v_item IN ARRAY string_to_array(lower(field), ',') LOOP
        v_parts := regexp_match(v_item, '^(\*|[0-9a-z]+)(?:-([0-9a-z]+))?(?:/([0-9]+))?$');
        IF v_parts IS NULL OR (v_parts[1] = '*' AND v_parts[2] IS NOT NULL) THEN
            RAISE EXCEPTION USING
                ERRCODE = '22023',
                MESSAGE = format('cron %s field %L is not a value, a range or a step', field_name, field),
                HINT = 'Each field is a comma list of *, N, A-B, */S, N/S or A-B/S.';
        END IF;
        v_from := CASE WHEN v_parts[1] = '*' THEN low
                       WHEN v_parts[1] ~ '^[0-9]+$' THEN left(v_parts[1], 9)::integer
                       ELSE low + array_position(names, v_parts[1]) - 1 END;
        v_to := CASE WHEN v_parts[1] = '*' THEN high
                     WHEN v_parts[2] IS NOT NULL AND v_parts[2] ~ '^[0-9]+$' THEN left(v_parts[2], 9)::integer
                     WHEN v_parts[2] IS NOT NULL THEN low + array_position(names, v_parts[2]) - 1
                     WHEN v_parts[3] IS NOT NULL THEN high
                     ELSE v_from END;
        v_step := coalesce(left(v_parts[3], 9)::integer, 1);
        IF v_from IS NULL OR v_to IS NULL OR v_from NOT BETWEEN low AND high OR v_to NOT BETWEEN low AND high
           OR v_from > v_to OR v_step = 0 THEN
            RAISE EXCEPTION USING
                ERRCODE = '22023',
                MESSAGE = format('cron %s field %L is out of range', field_name, field),
                HINT = format('The %s goes from %s to %s%s; a range goes upwards; a step is 1 or more.', field_name, low, high,
                              CASE WHEN names IS NULL THEN '' ELSE ' (or ' || array_to_string(names, ', ') || ')' END);
        END IF;
        v_values := v_values || ARRAY(SELECT generate_series(v_from, v_to, v_step));
    END LOOP;
    RETURN ARRAY(SELECT DISTINCT v FROM unnest(v_values) AS v ORDER BY v);
END;
$$;

-- _cron_parse
-- A cron expression as the values of its five fields, and whether a day must match both day fields.
CREATE FUNCTION _cron_parse(
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

-- cron_next_run
-- The first time strictly after `after` at which a cron expression fires, read in a time zone.
CREATE FUNCTION cron_next_run(cron text, after timestamptz, time_zone text DEFAULT 'UTC')
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
AS $$
-- Example:
--   SELECT cron_next_run('*/15 * * * *', now());
--   SELECT cron_next_run('30 2 * * *', '2026-03-08 00:00-05', 'America/New_York');  -- 03:30 EDT: the skipped hour
-- Slots are wall-clock times in time_zone. A slot in the hour a daylight-saving change skips
-- runs an hour later (02:30 at 03:30), once; a slot in the hour repeated runs once, at its
-- second occurrence. So no slot is skipped and none fires twice. Raises 22023 for an unknown
-- time zone or an expression that never fires (31 February).
DECLARE
    v_cron     record;
    v_zone     text := coalesce(cron_next_run.time_zone, 'UTC');
    v_day      date;
    v_last_day date;
    v_found    timestamptz;
    v_slot     timestamptz;
BEGIN
    IF cron_next_run.cron IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'a cron expression is required';
    END IF;
    v_cron := _cron_parse(cron_next_run.cron);
    IF cron_next_run.after IS NULL OR NOT isfinite(cron_next_run.after) THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('after must be a finite time, not %s', cron_next_run.after);
    END IF;
    -- A day's slots can fall before the previous day's near a daylight-saving change, so the
    -- search starts a day early and looks one matching day past the first that has a slot.
    v_day := (cron_next_run.after AT TIME ZONE v_zone)::date - 1;
    -- Eight years holds every 29 February the Gregorian calendar can skip to.
    v_last_day := v_day + 8 * 366;
    WHILE v_day <= v_last_day LOOP
        IF extract(month FROM v_day)::integer = ANY (v_cron.months)
           AND (CASE WHEN v_cron.both_day_fields
                     THEN extract(day FROM v_day)::integer = ANY (v_cron.days)
                          AND extract(dow FROM v_day)::integer = ANY (v_cron.weekdays)
                     ELSE extract(day FROM v_day)::integer = ANY (v_cron.days)
                          OR extract(dow FROM v_day)::integer = ANY (v_cron.weekdays) END) THEN
            SELECT min((v_day + make_time(h, m, 0)) AT TIME ZONE v_zone) INTO v_slot
            FROM unnest(v_cron.hours) AS h, unnest(v_cron.minutes) AS m
            WHERE (v_day + make_time(h, m, 0)) AT TIME ZONE v_zone > cron_next_run.after;
            IF v_slot IS NOT NULL THEN
                IF v_found IS NOT NULL THEN
                    RETURN least(v_found, v_slot);
                END IF;
                v_found := v_slot;
                v_last_day := v_day + 1;
            END IF;
        END IF;
        v_day := v_day + 1;
    END LOOP;
    IF v_found IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('cron expression %L never fires', cron_next_run.cron),
            HINT = 'Its day of month does not occur in its months.';
    END IF;
    RETURN v_found;
END;
$$;

REVOKE ALL ON FUNCTION _cron_field(text, text, integer, integer, text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION _cron_parse(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION cron_next_run(text, timestamptz, text) FROM PUBLIC;

COMMENT ON FUNCTION cron_next_run(text, timestamptz, text) IS $$The first time strictly after `after` at which a five-field cron expression (or @hourly, @daily, @weekly, @monthly, @yearly) fires, its slots read as wall-clock times in time_zone; a slot in a skipped hour runs an hour later, one in a repeated hour at its second occurrence.
Example:
  SELECT cron_next_run('*/15 * * * *', now());
  SELECT cron_next_run('30 2 * * *', '2026-03-08 00:00-05', 'America/New_York');  -- 2026-03-08 03:30 EDT$$;

COMMIT;
