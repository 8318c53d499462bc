# taskpool: build, database and test targets. `make help` lists them.
#
# Everything talks to the server named by DATABASE_URL, through the libpq variables (PGHOST,
# PGPORT, PGUSER, PGDATABASE, ...) that scripts/pgenv derives from it. Left alone, DATABASE_URL
# is the project-local cluster that `make db` starts (scripts/cluster); set it in the
# environment (or on the command line) to use an existing server instead: then `make db`
# starts nothing and only checks that the server answers.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:
# The steps share server-wide objects (the roles that deploy creates): one after the other, even
# under -j. `make test` runs its SQL steps at once, in a make of its own (SQL_STEPS_AT_ONCE), only
# after `deploy` has created the roles, which then every step finds there and none drops.
ifndef SQL_STEPS_AT_ONCE
.NOTPARALLEL:
endif
MAKEFLAGS += --no-print-directory

# The local cluster's port: the one it runs on, whatever port started it, so that `make psql` and
# the rest use it; 55432 when it is not running. PGPORT in the environment or on the command line
# decides instead (and `export PGPORT=N` is what pyworker and the tests read too).
ifeq ($(origin PGPORT),undefined)
PGPORT := $(or $(shell scripts/cluster port 2>/dev/null),55432)
endif
DB_NAME ?= taskpool
DATABASE_URL ?= postgresql://postgres@127.0.0.1:$(PGPORT)/$(DB_NAME)
ROUNDTRIP_DB ?= taskpool_roundtrip
UPGRADE_DB ?= taskpool_upgrade
# The releases an upgrade in place starts from. UPGRADE_FROM, deployed with the combined plan of
# before the split: @v0.3.0 (the last release before the lean claim and the one-process runtime,
# which issue 13 asks to upgrade from) and the combined plan's last tag. UPGRADE_FROM_SPLIT,
# deployed with the split plans themselves (core and crawler, each --to the tag): the last tag of
# sqitch.plan that has changes after it, when the combined plan does not have it.
LAST_TAG_WITH_CHANGES = $(shell awk '/^@/ { tag = $$1 } /^[a-z_]/ { from = tag } END { print from }' $(1))
UPGRADE_FROM ?= $(sort @v0.3.0 $(call LAST_TAG_WITH_CHANGES,registry/combined.plan))
UPGRADE_FROM_SPLIT ?= $(filter-out $(shell awk '/^@/ { print $$1 }' registry/combined.plan),$(call LAST_TAG_WITH_CHANGES,sqitch.plan))
TEST_DB ?= taskpool_test
CRAWLER_TEST_DB ?= taskpool_crawler_test
# The SQL steps copy these instead of each running Sqitch (half a minute of CPU a deploy of both
# plans): the core's plan deployed alone (SQL_TEMPLATE_CORE), and a copy of it with the crawler's
# deployed on top (SQL_TEMPLATE).
SQL_TEMPLATE_CORE ?= taskpool_sql_template_core
SQL_TEMPLATE ?= taskpool_sql_template
# The commit whose sqitch.plan is the combined plan of before the split (registry/combined.plan):
# the parent of the commit that added registry/combined.plan. test-upgrade deploys its releases.
COMBINED_REV ?= $(shell git rev-list -1 HEAD -- registry/combined.plan 2>/dev/null)^
DEMO_DB ?= taskpool_demo
PG_BINDIR ?= /usr/lib/postgresql/15/bin
PYTHON ?= python3
VENV ?= .venv
# --durations: the slowest tests at the end of every run, where the suite's time goes.
PYTEST_ARGS ?= -q --durations=25
# pytest-xdist workers for test-py (0: none, the tests run in pytest's own process). The tests
# mostly wait on processes, sleeps and the server, so more workers than cores pay.
# --dist loadgroup keeps the tests of an xdist_group (a module's expensive fixture) on one worker;
# --no-loadscope-reorder hands the tests out in the collection's order, where
# tests/slowest_first.py puts the slowest first.
PYTEST_WORKERS ?= 6
# What test-py runs: narrow it to a file (PYTEST_PATHS=tests/test_worker.py) to run that alone.
PYTEST_PATHS ?= tests/ crawler/tests/
BENCH_ARGS ?=
BENCH_FLEET_ARGS ?=
SOAK_MINUTES ?= 10
FAULTS_ARGS ?=
DEB_PACKAGES ?= postgresql-15 postgresql-client-15 postgresql-15-cron postgresql-15-pgtap tinyproxy \
	sqitch libdbd-pg-perl libtap-parser-sourcehandler-pgtap-perl pgbouncer chromium chromium-driver tini jq
# What `make faults-ha` alone needs, installed by it when missing: a Patroni pair's DCS, HA manager
# and proxy.
HA_DEB_PACKAGES ?= patroni etcd-server etcd-client haproxy
# The failover suite's options (FAULTS_HA_ARGS='--quick --only switchover,frozen'), and the range its
# pair takes ports from (HA_PORTS=56300-56399; empty: any free port).
FAULTS_HA_ARGS ?=
HA_PORTS ?=

# An explicit DATABASE_URL (environment or command line) means: use that server, start nothing.
ifneq ($(filter environment% command%,$(origin DATABASE_URL)),)
EXTERNAL_DB := 1
endif

export DATABASE_URL PG_BINDIR
# PostgreSQL's own client programs ahead of Debian's /usr/bin wrappers (postgresql-common's
# pg_wrapper, a Perl program that picks a version, then runs the program): Sqitch runs psql twice
# a change, pg_prove once a file, so the wrapper's start-up was half of a deploy's CPU (a deploy
# of both plans: 28 s of CPU through the wrappers, 14 s without). With DATABASE_URL's libpq
# variables set, the wrapper would run these same programs (the client of PG_BINDIR's version).
ifeq ($(filter $(PG_BINDIR),$(subst :, ,$(PATH))),)
export PATH := $(PG_BINDIR):$(PATH)
endif
PGENV := scripts/pgenv
CLUSTER := scripts/cluster
VENV_STAMP := $(VENV)/.installed

.PHONY: help deps db db-stop deploy revert psql cron demo bench bench-fleet screenshots test check-sql test-roundtrip test-upgrade test-sql test-sql-core test-sql-crawler sql-template-core sql-template sql-prove test-py faults faults-quick faults-ha clean

# TARGET help: list the targets (the default goal)
help:
	@echo 'Usage: make TARGET [VAR=value ...]'
	@echo
	@awk '/^# TARGET [^:]+: / { sub(/^# TARGET /, ""); i = index($$0, ":"); \
		printf "  %-16s %s\n", substr($$0, 1, i - 1), substr($$0, i + 2) }' $(MAKEFILE_LIST)
	@echo
	@echo 'Variables: DATABASE_URL=$(DATABASE_URL)'
	@echo '           PGPORT=$(PGPORT) DB_NAME=$(DB_NAME) TEST_DB=$(TEST_DB) ROUNDTRIP_DB=$(ROUNDTRIP_DB) DEMO_DB=$(DEMO_DB)'
	@echo '           QUICK=1 (make bench: the quick form) BENCH_ARGS=$(BENCH_ARGS) (e.g. --prefetch 50 --only drain)'

# TARGET deps: install the missing Debian packages, then the Python environment (.venv)
deps:
	@scripts/apt-install $(DEB_PACKAGES)
	@$(MAKE) -s $(VENV_STAMP)

# pyworker/__init__.py holds the package version that pip records. The crawler (crawler/) is a
# package of its own, installed beside the core.
$(VENV_STAMP): pyproject.toml pyworker/__init__.py crawler/pyproject.toml
	@if [[ ! -x $(VENV)/bin/python ]]; then \
		echo "deps: creating $(VENV)"; \
		command -v $(PYTHON) >/dev/null || scripts/apt-install python3 python3-venv; \
		if ! $(PYTHON) -m venv $(VENV) >/dev/null 2>&1; then \
			rm -rf $(VENV); \
			scripts/apt-install python3-venv; \
			$(PYTHON) -m venv $(VENV); \
		fi; \
	fi
	@echo "deps: installing the project into $(VENV) (pip install -e '.[dashboard,test]' -e crawler)"
	@# The distribution was called taskpool before 0.6.0: its copy would shadow this one's entry points.
	@$(VENV)/bin/pip uninstall --quiet --yes taskpool 2>/dev/null || true
	@rm -rf taskpool.egg-info
	@$(VENV)/bin/pip install --quiet --disable-pip-version-check -e '.[dashboard,test]' -e ./crawler
	@touch $@

# TARGET db: start the local cluster (init if missing, restarted if its settings are old), its database and pg_cron; with DATABASE_URL set, only check that server answers
db: deps
ifdef EXTERNAL_DB
	@$(PGENV) pg_isready -q -t 10 || { echo 'db: the server in DATABASE_URL does not answer' >&2; exit 1; }
else
	@$(CLUSTER) up --port '$(PGPORT)' --dbname '$(DB_NAME)'
endif

# TARGET db-stop: stop the local cluster (fast mode) if it runs
db-stop:
	@$(CLUSTER) stop

# TARGET deploy: deploy the core's Sqitch plan, then the crawler's (crawler/sqitch/), into DATABASE_URL, verifying each change
deploy: deps db
	@$(PGENV) scripts/deploy

# TARGET revert: revert every Sqitch change from DATABASE_URL: the crawler's, then the core's
revert: deps db
	@$(PGENV) scripts/revert

# TARGET cron: deploy, then schedule the tick (tick_schedules()) every minute with pg_cron (pyworker cron install)
cron: deps db deploy
	@$(VENV)/bin/pyworker cron install

# TARGET demo: crawl the simulated platform end to end in a fresh database (DEMO_DB): discovery, crawls, a resync round, analytics, a summary
demo: deps db
	@DEMO_DB='$(DEMO_DB)' VENV='$(VENV)' scripts/demo

# TARGET bench: measure drain, wake-up, enqueue, depth and history against pgbench ceilings (QUICK=1: about a minute; BENCH_ARGS for more); writes results/
bench: deps db
	@$(PGENV) $(VENV)/bin/python -m bench $(if $(QUICK),--quick) $(BENCH_ARGS)

# TARGET screenshots: take the dashboard's pictures in docs/images/ again (a scratch database, Debian's chromium at 1280 px)
screenshots: deps db
	@$(PGENV) $(VENV)/bin/python scripts/screenshots docs/images

# TARGET bench-fleet: crawl 24,000 simulated stores on four platforms in compressed time (6 crawls a day in minutes): rates against limits, slot shares, waiting on limits, freshness, database size, claim cost (QUICK=1: about 2 minutes; BENCH_FLEET_ARGS for more); writes results/
bench-fleet: deps db
	@$(PGENV) $(VENV)/bin/python -m bench.fleet $(if $(QUICK),--quick) $(BENCH_FLEET_ARGS)

# TARGET bench-history: load 10 million finished tasks into the history (QUICK=1: 100,000), report claim and completion costs, /metrics, v_task_counts and the dashboard's overview, the hot table through a 30-minute churn, and a day's drop (BENCH_HISTORY_ARGS='--tasks 100000000')
bench-history: deps db
	@$(PGENV) $(VENV)/bin/python -m bench.history $(if $(QUICK),--quick) $(BENCH_HISTORY_ARGS)

# TARGET psql: deploy into DATABASE_URL (a no-op when up to date), then open psql on it
psql: deps db deploy
	@$(PGENV) psql

# TARGET test: deploy into DATABASE_URL, check the SQL files (check-sql), then run every test: test-py, and beside it test-roundtrip, test-upgrade and test-sql at once (their output after pytest's)
# The SQL steps need about two minutes of CPU, pytest ten minutes of six workers that often wait:
# side by side, pytest no longer waits for the SQL steps to end before it starts. Not niced: at a
# lower priority they would wait for pytest's end instead, on a machine its workers keep busy.
test: deps db deploy check-sql
	@sql_log=$$(mktemp); trap 'rm -f "$$sql_log"' EXIT; \
	$(MAKE) SQL_STEPS_AT_ONCE=1 --jobs=4 --output-sync=target \
		test-roundtrip test-upgrade test-sql-core test-sql-crawler >"$$sql_log" 2>&1 & sql_steps=$$!; \
	py_status=0; $(MAKE) test-py || py_status=$$?; \
	sql_status=0; wait "$$sql_steps" || sql_status=$$?; \
	echo '== test: the SQL steps (test-roundtrip, test-upgrade, test-sql), run beside pytest =='; \
	cat "$$sql_log"; \
	if ((sql_status)); then echo 'test: an SQL step failed (above)' >&2; fi; \
	if ((py_status)); then echo 'test: pytest failed (its summary is above the SQL steps)' >&2; fi; \
	exit $$((py_status || sql_status))

# TARGET check-sql: deploy into DATABASE_URL, then check that every function's live body and view's definition comes from the deploy file of its name and no deployed function is unused (scripts/check-sql-homes)
check-sql: deps db deploy
	@$(PGENV) $(VENV)/bin/python scripts/check-sql-homes

# TARGET test-roundtrip: in a copy (ROUNDTRIP_DB) of a fresh deploy of the core and the crawler (SQL_TEMPLATE), revert every change and deploy again
test-roundtrip: deps db sql-template
	@$(PGENV) dropdb --if-exists --force '$(ROUNDTRIP_DB)'; \
	$(PGENV) createdb --template='$(SQL_TEMPLATE)' '$(ROUNDTRIP_DB)'; \
	$(PGENV) -d '$(ROUNDTRIP_DB)' scripts/revert; \
	$(PGENV) -d '$(ROUNDTRIP_DB)' scripts/deploy; \
	$(PGENV) dropdb --force '$(ROUNDTRIP_DB)'

# TARGET test-upgrade: for each release in UPGRADE_FROM, deploy it with the combined plan of before the split (COMBINED_REV), and for each in UPGRADE_FROM_SPLIT with the split plans; give it tasks in every state, upgrade in place to the head of the split plans, check the tasks and that schema and Sqitch registry equal a fresh deploy's (SQL_TEMPLATE's; UPGRADE_DB)
test-upgrade: deps db sql-template
	@old=$$(mktemp -d); trap 'rm -rf "$$old"' EXIT; \
	git archive '$(COMBINED_REV)' sqitch.plan sqitch.conf deploy revert verify | tar -x -C "$$old"; \
	cmp -s "$$old/sqitch.plan" registry/combined.plan || { \
		echo 'test-upgrade: the sqitch.plan of COMBINED_REV=$(COMBINED_REV) is not registry/combined.plan' >&2; exit 1; }; \
	$(PGENV) dropdb --if-exists --force '$(UPGRADE_DB)_fresh'; \
	$(PGENV) createdb --template='$(SQL_TEMPLATE)' '$(UPGRADE_DB)_fresh'; \
	$(PGENV) -d '$(UPGRADE_DB)_fresh' scripts/registry-state >"$$old/fresh.state"; \
	$(PGENV) dropdb --force '$(UPGRADE_DB)_fresh'; \
	for from in $(UPGRADE_FROM); do \
		echo "test-upgrade: from $$from of the combined plan to the head of the split plans"; \
		$(PGENV) dropdb --if-exists --force '$(UPGRADE_DB)'; \
		$(PGENV) createdb '$(UPGRADE_DB)'; \
		(cd "$$old" && $(CURDIR)/$(PGENV) -d '$(UPGRADE_DB)' sqitch deploy --verify --to "$$from"); \
		$(PGENV) -d '$(UPGRADE_DB)' psql -X -q -o /dev/null -f sql_tests/upgrade/seed.sql; \
		$(PGENV) -d '$(UPGRADE_DB)' scripts/deploy; \
		$(PGENV) -d '$(UPGRADE_DB)' scripts/registry-state >"$$old/upgraded.state"; \
		diff -u --label fresh --label "upgraded from $$from" "$$old/fresh.state" "$$old/upgraded.state" || { \
			echo "test-upgrade: the schema or registry upgraded from $$from differs from a fresh deploy's" >&2; exit 1; }; \
		$(PGENV) -d '$(UPGRADE_DB)' psql -X -q -v ON_ERROR_STOP=1 -f registry/split_crawler.sql; \
		$(PGENV) -d '$(UPGRADE_DB)' scripts/registry-state | diff -q - "$$old/upgraded.state" >/dev/null || { \
			echo 'test-upgrade: registry/split_crawler.sql run again changed the split registry' >&2; exit 1; }; \
		$(PGENV) -d '$(UPGRADE_DB)' psql -X -q -v ON_ERROR_STOP=1 -c 'SET client_min_messages = warning' \
			-c 'CREATE EXTENSION IF NOT EXISTS pgtap'; \
		$(PGENV) -d '$(UPGRADE_DB)' pg_prove --failures --set old_roles_jitter=none sql_tests/upgrade/check.sql; \
		$(PGENV) dropdb --force '$(UPGRADE_DB)'; \
	done; \
	for from in $(UPGRADE_FROM_SPLIT); do \
		echo "test-upgrade: from $$from of the split plans to their head"; \
		$(PGENV) dropdb --if-exists --force '$(UPGRADE_DB)'; \
		$(PGENV) createdb '$(UPGRADE_DB)'; \
		$(PGENV) -d '$(UPGRADE_DB)' sqitch deploy --verify --to "$$from" >/dev/null; \
		(cd crawler/sqitch && $(CURDIR)/$(PGENV) -d '$(UPGRADE_DB)' sqitch deploy --verify --to "$$from" >/dev/null); \
		$(PGENV) -d '$(UPGRADE_DB)' psql -X -q -o /dev/null -f sql_tests/upgrade/seed.sql; \
		$(PGENV) -d '$(UPGRADE_DB)' scripts/deploy; \
		$(PGENV) -d '$(UPGRADE_DB)' scripts/registry-state >"$$old/upgraded.state"; \
		diff -u --label fresh --label "upgraded from $$from" "$$old/fresh.state" "$$old/upgraded.state" || { \
			echo "test-upgrade: the schema or registry upgraded from $$from differs from a fresh deploy's" >&2; exit 1; }; \
		$(PGENV) -d '$(UPGRADE_DB)' psql -X -q -v ON_ERROR_STOP=1 -c 'SET client_min_messages = warning' \
			-c 'CREATE EXTENSION IF NOT EXISTS pgtap'; \
		$(PGENV) -d '$(UPGRADE_DB)' pg_prove --failures --set old_roles_jitter=full sql_tests/upgrade/check.sql; \
		$(PGENV) dropdb --force '$(UPGRADE_DB)'; \
	done; \
	echo 'test-upgrade: a registry with a change the combined plan does not have stops the upgrade'; \
	$(PGENV) dropdb --if-exists --force '$(UPGRADE_DB)'; \
	$(PGENV) createdb '$(UPGRADE_DB)'; \
	(cd "$$old" && $(CURDIR)/$(PGENV) -d '$(UPGRADE_DB)' sqitch deploy --to @v0.3.0 >/dev/null); \
	$(PGENV) -d '$(UPGRADE_DB)' psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO sqitch.changes \
		SELECT md5('unknown'), NULL, 'not_in_the_combined_plan', project, '', now(), committer_name, \
		       committer_email, planned_at, planner_name, planner_email FROM sqitch.changes LIMIT 1"; \
	if $(PGENV) -d '$(UPGRADE_DB)' scripts/deploy >"$$old/unknown.log" 2>&1 \
		|| ! grep -q 'changes it does not know: not_in_the_combined_plan' "$$old/unknown.log"; then \
		cat "$$old/unknown.log" >&2; echo 'test-upgrade: the unknown change was not refused' >&2; exit 1; \
	fi; \
	$(PGENV) dropdb --force '$(UPGRADE_DB)'

# TARGET test-sql: the core's pgTAP files (sql_tests/) in a database with the core alone (TEST_DB), the crawler's (crawler/sql_tests/) with both (CRAWLER_TEST_DB)
test-sql: test-sql-core test-sql-crawler

# test-sql-core: the core's pgTAP files (test-sql's first half)
test-sql-core: deps db sql-template-core
	@scripts/split-registry --check
	@$(MAKE) -s sql-prove SQL_DB='$(TEST_DB)' SQL_DB_TEMPLATE='$(SQL_TEMPLATE_CORE)' SQL_TESTS=sql_tests \
		SQL_FIXTURES=crawler/sqitch/deploy/crawler_roles.sql

# test-sql-crawler: the crawler's pgTAP files (test-sql's second half)
test-sql-crawler: deps db sql-template
	@$(MAKE) -s sql-prove SQL_DB='$(CRAWLER_TEST_DB)' SQL_DB_TEMPLATE='$(SQL_TEMPLATE)' SQL_TESTS=crawler/sql_tests

# sql-template-core: the core's plan alone deployed with Sqitch into a fresh SQL_TEMPLATE_CORE.
sql-template-core: deps db
	@$(PGENV) dropdb --if-exists --force '$(SQL_TEMPLATE_CORE)'
	@$(PGENV) createdb '$(SQL_TEMPLATE_CORE)'
	@$(PGENV) -d '$(SQL_TEMPLATE_CORE)' scripts/deploy --core-only >/dev/null

# sql-template: a copy of SQL_TEMPLATE_CORE with the crawler's plan deployed on top (SQL_TEMPLATE):
# what a fresh deploy of both plans leaves. Nobody connects to either template but to copy it
# (CREATE DATABASE ... TEMPLATE refuses a database someone is connected to).
sql-template: sql-template-core
	@$(PGENV) dropdb --if-exists --force '$(SQL_TEMPLATE)'
	@$(PGENV) createdb --template='$(SQL_TEMPLATE_CORE)' '$(SQL_TEMPLATE)'
	@$(PGENV) -d '$(SQL_TEMPLATE)' scripts/deploy >/dev/null

# sql-prove: copy SQL_DB_TEMPLATE into a fresh SQL_DB, load pgTAP, sql_tests/helpers and
# SQL_FIXTURES, run pg_prove on SQL_TESTS/*.sql. The core's tests use six roles and their chains
# as data: the crawler's (crawler/sqitch/deploy/crawler_roles.sql, INSERTs into core tables and
# no crawler object), loaded as a fixture into the core-only database.
sql-prove:
	@$(PGENV) dropdb --if-exists --force '$(SQL_DB)'
	@$(PGENV) createdb --template='$(SQL_DB_TEMPLATE)' '$(SQL_DB)'
	@$(PGENV) -d '$(SQL_DB)' psql -X -q -v ON_ERROR_STOP=1 -c 'SET client_min_messages = warning' \
		-c 'CREATE EXTENSION IF NOT EXISTS pgtap'
	@export LC_ALL=C; shopt -s nullglob; for helper in sql_tests/helpers/*.sql $(SQL_FIXTURES); do \
		echo "test-sql: loading $$helper into $(SQL_DB)"; \
		$(PGENV) -d '$(SQL_DB)' psql -X -q -v ON_ERROR_STOP=1 -f "$$helper"; \
	done
	@echo 'test-sql: $(SQL_TESTS) against $(SQL_DB) (a copy of $(SQL_DB_TEMPLATE))'
	@$(PGENV) -d '$(SQL_DB)' pg_prove --ext .sql --failures $$(LC_ALL=C ls $(SQL_TESTS)/*.sql)

# TARGET test-py: run the Python tests (pytest: the core's tests/ and the crawler's crawler/tests/; PYTEST_PATHS narrows them, PYTEST_WORKERS=6 parallel workers) against DATABASE_URL's server
test-py: deps db
	@$(PGENV) $(VENV)/bin/pytest -n '$(PYTEST_WORKERS)' --dist loadgroup --no-loadscope-reorder $(PYTEST_ARGS) $(PYTEST_PATHS)

# TARGET faults: run the fault and abuse suite in full, soak included (SOAK_MINUTES=10, FAULTS_ARGS='--only 1,4'), print its table, write it to results/
faults: deps db
	@$(PGENV) $(VENV)/bin/python -m faults --soak-minutes '$(SOAK_MINUTES)' $(FAULTS_ARGS)

# TARGET faults-quick: the fault suite's short form, as `make test` runs it (tests/test_faults.py), with the table
faults-quick: deps db
	@$(PGENV) $(VENV)/bin/python -m faults --quick $(FAULTS_ARGS)

# TARGET faults-ha: the failover suite on a real Patroni pair (etcd, two PostgreSQL 15 nodes, HAProxy) per scenario, installing HA_DEB_PACKAGES first (FAULTS_HA_ARGS='--quick --only switchover', HA_PORTS=LOW-HIGH); its table to results/
faults-ha: deps
	@scripts/apt-install $(HA_DEB_PACKAGES)
	@FAULTS_HA_PORTS='$(HA_PORTS)' $(VENV)/bin/python -m faults.ha $(FAULTS_HA_ARGS)

# TARGET clean: stop the local cluster and delete it, .venv and caches
clean:
	@$(CLUSTER) remove
	rm -rf $(VENV) .pytest_cache *.egg-info crawler/*.egg-info .demo
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
