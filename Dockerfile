# The image kubernetes/ names, taskpool:<version>: pyworker (worker, CLI, dashboard), the
# reference crawler, and Sqitch with both Sqitch projects for the migration Job.
#
#   docker build -t taskpool:0.6.0 .
#
# Built from the repository root; .dockerignore keeps the local cluster, the venv and results out.
# The version is pyworker.__version__ (tests/test_kubernetes.py checks that the manifests name it).

FROM python:3.11-slim-bookworm AS wheels
WORKDIR /src
COPY . .
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels . ./crawler

FROM python:3.11-slim-bookworm
# Sqitch, its PostgreSQL driver and psql: the migration Job runs scripts/deploy, as `make deploy`.
# tini: the init the worker runs under (PID 1 reaps orphans; pyworker does not, see ENTRYPOINT).
RUN apt-get update \
    && apt-get install -y --no-install-recommends sqitch libdbd-pg-perl postgresql-client-15 tini \
    && rm -rf /var/lib/apt/lists/*
COPY --from=wheels /wheels /wheels
RUN pip install --no-cache-dir --find-links /wheels 'taskpool-pg[dashboard]' taskpool-crawler && rm -rf /wheels

WORKDIR /opt/taskpool
COPY sqitch.plan sqitch.conf ./
COPY deploy deploy/
COPY revert revert/
COPY verify verify/
COPY registry registry/
COPY crawler/sqitch crawler/sqitch/
COPY scripts/pgenv scripts/deploy scripts/

# The manifests run it as this user (runAsUser 10001, runAsNonRoot).
RUN useradd --system --uid 10001 --no-create-home --home-dir /nonexistent taskpool
USER 10001
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# tini as PID 1: it forwards signals to pyworker and reaps the orphans a command handler leaves
# (a child of a command that exited is re-parented to PID 1; pyworker, as PID 1, would leave it
# a zombie for good). The worker's manifest names it in its command too (docs/kubernetes.md).
ENTRYPOINT ["tini", "--"]
CMD ["pyworker", "--help"]
