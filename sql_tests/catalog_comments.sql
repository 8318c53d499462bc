-- The catalog documents itself: every public function carries a COMMENT ON FUNCTION (its header
-- sentence, then an example), every public view a COMMENT ON VIEW, and worker_tasks.status says
-- what each state means and where the transitions are. A function that a change drops and
-- creates again loses its comment: these tests name it.
BEGIN;
SELECT plan(8);

-- The public interface: the schema's functions and procedures but the internal ones (`_` prefix)
-- and the trigger functions (`tg_`), and its views; pgTAP's objects are the extension's.
CREATE TEMP VIEW public_routines AS
SELECT p.oid, p.oid::regprocedure::text AS signature, obj_description(p.oid, 'pg_proc') AS comment
FROM pg_proc p
WHERE p.pronamespace = 'public'::regnamespace
  AND p.proname !~ '^(_|tg_)'
  AND NOT EXISTS (SELECT FROM pg_depend d
                  WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e');

CREATE TEMP VIEW public_views AS
SELECT c.oid, c.oid::regclass::text AS name, obj_description(c.oid, 'pg_class') AS comment
FROM pg_class c
WHERE c.relnamespace = 'public'::regnamespace
  AND c.relkind IN ('v', 'm')
  AND NOT EXISTS (SELECT FROM pg_depend d
                  WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e');

/****************************************************************************/
-- structure: the checks below look at the whole interface

SELECT cmp_ok((SELECT count(*) FROM public_routines), '>=', 40::bigint,
    'Should find the schema''s public functions (40 or more, the core alone) to check');
SELECT cmp_ok((SELECT count(*) FROM public_views), '>=', 7::bigint,
    'Should find the schema''s public views (7 or more, the core alone) to check');

/****************************************************************************/
-- behaviour: comments, named when missing (the test's output lists them under "have")

SELECT is(
    (SELECT string_agg(signature, ', ' ORDER BY signature) FROM public_routines WHERE comment IS NULL),
    NULL,
    'Should carry a COMMENT ON FUNCTION on every public function (have: those without one)');
SELECT is(
    (SELECT string_agg(signature, ', ' ORDER BY signature) FROM public_routines
     WHERE comment !~ '^[^\n]+\.\nExample:\n  \S'),
    NULL,
    'Should open every function''s comment with one line, its header sentence, then an example (have: those that do not)');
SELECT is(
    (SELECT string_agg(name, ', ' ORDER BY name) FROM public_views WHERE comment IS NULL),
    NULL,
    'Should carry a COMMENT ON VIEW on every public view (have: those without one)');

SELECT is(
    (SELECT array_agg(s.status ORDER BY s.status)
     FROM (SELECT from_status FROM task_status_transitions
           UNION SELECT to_status FROM task_status_transitions) AS s(status)
     WHERE col_description('worker_tasks'::regclass,
                           (SELECT a.attnum FROM pg_attribute a
                            WHERE a.attrelid = 'worker_tasks'::regclass AND a.attname = 'status'))
           !~ ('\m' || s.status || ': ')),
    NULL,
    'Should say in worker_tasks.status''s comment what each state means (have: the states it leaves out)');
SELECT ok(
    col_description('worker_tasks'::regclass,
                    (SELECT a.attnum FROM pg_attribute a
                     WHERE a.attrelid = 'worker_tasks'::regclass AND a.attname = 'status'))
        ~ '\mtask_status_transitions\M',
    'Should point worker_tasks.status''s comment at task_status_transitions for the allowed changes');

/****************************************************************************/
-- the check itself: a function whose comment is gone is named

COMMENT ON FUNCTION claim_task(text, text) IS NULL;
SELECT is(
    (SELECT string_agg(signature, ', ' ORDER BY signature) FROM public_routines WHERE comment IS NULL),
    'claim_task(text,text)',
    'Should name a function whose comment was dropped');

SELECT * FROM finish();
ROLLBACK;
