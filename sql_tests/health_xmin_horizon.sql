-- health_xmin_horizon: the health view of what holds back vacuum. (That it names another session
-- holding an old snapshot is shown by the fault suite's scenario 13: it takes two sessions.)
BEGIN;
SELECT plan(6);

/****************************************************************************/
-- Structure
SELECT has_view('v_xmin_horizon', 'Should have view v_xmin_horizon');
SELECT columns_are('v_xmin_horizon', ARRAY['holder', 'pid', 'user_name', 'application_name', 'client_addr',
    'state', 'xact_start', 'transaction_age', 'xmin_age'],
    'Should name each holder, its session and how old its snapshot is');
SELECT hasnt_column('v_xmin_horizon', 'last_query',
    'Should not show a session''s SQL text (it may hold another application''s password)');
SELECT col_type_is('v_xmin_horizon', 'transaction_age', 'interval', 'Should give the transaction''s age as an interval');

/****************************************************************************/
-- Behaviour
SELECT is((SELECT count(*)::integer FROM v_xmin_horizon WHERE pid = pg_backend_pid()), 0,
    'Should leave out the session that asks');

/****************************************************************************/
-- Privileges
SELECT ok(NOT has_table_privilege('taskpool_worker', 'v_xmin_horizon', 'select'),
    'Should not show the sessions to taskpool_worker');

SELECT * FROM finish();
ROLLBACK;
