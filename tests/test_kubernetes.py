"""kubernetes/: the kustomizations render (tests/kustomize_build.py), every manifest is valid for
the Kubernetes API (kubernetes-validate's bundled schemas, unknown fields refused) and every
ScaledObject for KEDA's CRD (vendored in kubernetes/schemas/), the pieces name one another
rightly (roles, probes, grace periods, secrets, commands, the image), and a simulation on a real
database: a queue filled and drained, the ScaledObject's own query read as the workers' login
at each poll, and the replicas KEDA would set from it, by its documented rule.
"""

from __future__ import annotations

import copy
import math
import re
import shlex
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import psycopg
import pytest
import yaml
from click.testing import CliRunner
from core_fixtures import REPO_ROOT
from kustomize_build import Resource, build, source_files
from psycopg import sql
from psycopg.types.json import Jsonb
from worker_support import make_stores

from pyworker import __version__
from pyworker.admin import cli

KUBERNETES = REPO_ROOT / "kubernetes"
BASE = KUBERNETES / "base"
CRAWLER = KUBERNETES / "crawler"
KEDA_CRD = KUBERNETES / "schemas" / "keda.sh_scaledobjects.yaml"
# The oldest Kubernetes the manifests are for (KEDA 2.20 needs a recent one anyway), and the
# newest whose schemas kubernetes-validate bundles.
KUBERNETES_VERSIONS = ("1.30", kubernetes_validate.latest_version())
IMAGE = f"taskpool:{__version__}"
# The Secrets the manifests read, which an operator creates (docs/kubernetes.md says how).
SECRETS = {
    "taskpool-database": {"worker-url", "owner-url"},
    "taskpool-dashboard": {"token"},
    "taskpool-crawler-bucket": {"access-key-id", "secret-access-key"},
}
ROLE_LABEL = "taskpool.dev/role"
# pyworker's own default when a Deployment does not set TASKPOOL_SHUTDOWN_GRACE_SECONDS.
DEFAULT_SHUTDOWN_GRACE = 30.0
# What a worker needs after its shutdown grace: hand back its tasks, deregister, exit.
HAND_BACK_SECONDS = 10


def of_kind(resources: list[Resource], kind: str) -> list[Resource]:
    return [r for r in resources if r["kind"] == kind]


def named(resources: list[Resource], kind: str, name: str) -> Resource:
    (found,) = [r for r in of_kind(resources, kind) if r["metadata"]["name"] == name]
    return found


def pod_spec(resource: Resource) -> dict[str, Any]:
    if resource["kind"] == "CronJob":
        return resource["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return resource["spec"]["template"]["spec"]


def containers(resources: list[Resource]) -> Iterator[tuple[Resource, dict[str, Any]]]:
    for resource in resources:
        if resource["kind"] in ("Deployment", "Job", "CronJob"):
            for container in pod_spec(resource)["containers"]:
                yield resource, container


def env_value(container: dict[str, Any], name: str) -> Any:
    """The env entry `name`'s value, or its valueFrom; None when the container does not set it."""
    for entry in container.get("env", []):
        if entry["name"] == name:
            return entry.get("value", entry.get("valueFrom"))
    return None


# KEDA's CRD, its schema closed to unknown fields: `kubectl apply` validates fields strictly on
# the server (a misspelt field is an error, not dropped), which a structural schema alone allows.


def closed(schema: Any) -> Any:
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {key: closed(value) for key, value in schema.items()}
    if (
        "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        schema["additionalProperties"] = False
    return schema


@pytest.fixture(scope="module")
def keda_validator() -> jsonschema.Validator:
    crd = yaml.safe_load(KEDA_CRD.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    schema = closed(version["schema"]["openAPIV3Schema"])
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def validate(resource: Resource, keda_validator: jsonschema.Validator) -> None:
    if resource["kind"] == "ScaledObject":
        assert resource["apiVersion"] == "keda.sh/v1alpha1"
        keda_validator.validate(resource)
        return
    for version in KUBERNETES_VERSIONS:
        kubernetes_validate.validate(resource, version, strict=True)


# The manifests themselves


@pytest.mark.parametrize("directory", [BASE, CRAWLER], ids=["base", "crawler"])
def test_every_manifest_is_valid_for_kubernetes_and_keda(
    directory: Path, keda_validator: jsonschema.Validator
) -> None:
    resources = build(directory)
    assert resources
    for resource in resources:
        validate(resource, keda_validator)
    kinds_and_names = [(r["kind"], r["metadata"]["name"]) for r in resources]
    assert len(set(kinds_and_names)) == len(kinds_and_names), kinds_and_names


def test_the_validation_refuses_what_kubernetes_and_keda_would(keda_validator: jsonschema.Validator) -> None:
    resources = build(CRAWLER)
    deployment = copy.deepcopy(of_kind(resources, "Deployment")[0])
    deployment["spec"]["replica"] = 1  # misspelt
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(deployment, keda_validator)
    scaled = of_kind(resources, "ScaledObject")[0]
    misspelt = copy.deepcopy(scaled)
    misspelt["spec"]["minReplicas"] = 0
    with pytest.raises(jsonschema.ValidationError):
        validate(misspelt, keda_validator)
    # Trigger metadata is a map of strings: a bare number is refused by the API server.
    number = copy.deepcopy(scaled)
    number["spec"]["triggers"][0]["metadata"]["targetQueryValue"] = 4
    with pytest.raises(jsonschema.ValidationError):
        validate(number, keda_validator)


def test_every_file_under_kubernetes_is_part_of_a_build() -> None:
    rendered = source_files(BASE) | source_files(CRAWLER)
    files = {path.resolve() for path in KUBERNETES.rglob("*.yaml") if "schemas" not in path.parts}
    assert files - rendered == set()


def test_every_container_runs_the_image_of_this_version_as_a_non_root_user() -> None:
    for resource, container in containers(build(CRAWLER)):
        assert container["image"] == IMAGE, resource["metadata"]["name"]
        assert pod_spec(resource)["securityContext"]["runAsNonRoot"] is True
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert {"requests", "limits"} <= set(container["resources"]), resource["metadata"]["name"]
    dockerfile = (REPO_ROOT / "Dockerfile").read_text()
    assert "useradd --system --uid 10001" in dockerfile


def test_the_commands_are_ones_the_image_has() -> None:
    resources = build(CRAWLER)
    dockerfile = (REPO_ROOT / "Dockerfile").read_text()
    (workdir,) = re.findall(r"^WORKDIR (/opt/\S+)$", dockerfile, re.M)
    copied = {
        path for line in re.findall(r"^COPY (?!--from)(.*)$", dockerfile, re.M) for path in shlex.split(line)[:-1]
    }
    # pyworker's commands: the worker's, the tick's and the dashboard's (its extra is installed)
    assert "'taskpool-pg[dashboard]'" in dockerfile
    # (the worker's under tini, which the image installs: tests/test_pid1_reaping.py)
    for command in (["tini", "--", "pyworker"], ["pyworker", "scheduler", "--once"],
                    ["pyworker", "dashboard", "--host", "0.0.0.0", "--port", "8080"]):
        assert command in [c["command"] for _, c in containers(resources)]
        result = CliRunner().invoke(cli.main, [*command[command.index("pyworker") + 1 :], "--help"])
        assert result.exit_code == 0, result.output
    # the migration: scripts of this repository, copied into the image's working directory
    job = named(resources, "Job", "taskpool-migrate")
    (migrate,) = pod_spec(job)["containers"]
    assert migrate["workingDir"] == workdir
    assert migrate["command"] == ["scripts/pgenv", "scripts/deploy"]
    (core_only,) = pod_spec(named(build(BASE), "Job", "taskpool-migrate"))["containers"]
    assert core_only["command"] == [*migrate["command"], "--core-only"]
    for script in migrate["command"]:
        assert (REPO_ROOT / script).is_file() and script in copied
    for project in ("sqitch.plan", "deploy", "revert", "verify", "registry", "crawler/sqitch"):
        assert project in copied


def test_the_secrets_and_volumes_named_are_the_documented_and_rendered_ones() -> None:
    resources = build(CRAWLER)
    docs = (REPO_ROOT / "docs" / "kubernetes.md").read_text()
    read: dict[str, set[str]] = {}
    for resource, container in containers(resources):
        for entry in container.get("env", []):
            ref = entry.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                read.setdefault(ref["name"], set()).add(ref["key"])
        for source in container.get("envFrom", []):
            assert named(resources, "ConfigMap", source["configMapRef"]["name"])
        for volume in pod_spec(resource).get("volumes", []):
            if "persistentVolumeClaim" in volume:
                assert named(resources, "PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"])
    assert read == SECRETS
    for secret, keys in SECRETS.items():
        assert all(f"{secret}" in docs and f"{key}=" in docs for key in keys), (secret, keys)


def test_the_dashboard_service_reaches_the_dashboard_pods() -> None:
    resources = build(BASE)
    deployment = named(resources, "Deployment", "taskpool-dashboard")
    service = named(resources, "Service", "taskpool-dashboard")
    (container,) = pod_spec(deployment)["containers"]
    assert container["command"] == ["pyworker", "dashboard", "--host", "0.0.0.0", "--port", "8080"]
    # Listening on every interface, it requires a log-in to read: the token is not optional.
    assert "optional" not in env_value(container, "TASKPOOL_DASHBOARD_TOKEN")["secretKeyRef"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert ports == {"http": 8080}
    assert [port["targetPort"] for port in service["spec"]["ports"]] == ["http"]


def test_the_tick_runs_once_a_minute_never_two_at_once() -> None:
    cronjob = named(build(BASE), "CronJob", "taskpool-tick")
    assert cronjob["spec"]["schedule"] == "* * * * *"
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    assert cronjob["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"] < 60


def test_workers_stop_within_their_grace_and_probe_their_metrics_port() -> None:
    workers = [r for r in of_kind(build(CRAWLER), "Deployment") if ROLE_LABEL in r["metadata"]["labels"]]
    assert workers
    for deployment in workers:
        name = deployment["metadata"]["name"]
        assert "replicas" not in deployment["spec"], f"{name}: KEDA sets the replicas"
        (container,) = pod_spec(deployment)["containers"]
        grace = float(env_value(container, "TASKPOOL_SHUTDOWN_GRACE_SECONDS") or DEFAULT_SHUTDOWN_GRACE)
        assert pod_spec(deployment)["terminationGracePeriodSeconds"] >= grace + HAND_BACK_SECONDS, name
        ports = {port["name"]: port["containerPort"] for port in container["ports"]}
        assert str(ports["metrics"]) == env_value(container, "TASKPOOL_METRICS_PORT"), name
        probes = {kind: container[kind]["httpGet"] for kind in ("startupProbe", "livenessProbe", "readinessProbe")}
        assert {kind: (probe["path"], probe["port"]) for kind, probe in probes.items()} == {
            "startupProbe": ("/healthz", "metrics"),
            "livenessProbe": ("/healthz", "metrics"),
            "readinessProbe": ("/readyz", "metrics"),
        }, name
        assert env_value(container, "DATABASE_URL") == {
            "secretKeyRef": {"name": "taskpool-database", "key": "worker-url"}
        }
        assert env_value(container, "TASKPOOL_ROLE") == {
            "fieldRef": {"fieldPath": f"metadata.labels['{ROLE_LABEL}']"}
        }
        role = deployment["spec"]["template"]["metadata"]["labels"][ROLE_LABEL]
        assert deployment["spec"]["selector"]["matchLabels"][ROLE_LABEL] == role, name
    roles = [d["spec"]["selector"]["matchLabels"][ROLE_LABEL] for d in workers]
    assert len(set(roles)) == len(roles), "two worker Deployments select the same pods"


# KEDA: one ScaledObject a role, and what it would do


@dataclass(frozen=True)
class Scaler:
    """A ScaledObject's PostgreSQL trigger and bounds, and the replicas KEDA sets from a value."""

    deployment: str
    query: str
    target: float
    activation: float
    min_replicas: int
    max_replicas: int

    @classmethod
    def of(cls, scaled_object: Resource) -> Scaler:
        spec = scaled_object["spec"]
        (trigger,) = spec["triggers"]
        assert trigger["type"] == "postgresql"
        metadata = trigger["metadata"]
        # The rule below is the one for the default metric type, AverageValue.
        assert trigger.get("metricType", "AverageValue") == "AverageValue"
        return cls(
            deployment=spec["scaleTargetRef"]["name"],
            query=metadata["query"],
            target=float(metadata["targetQueryValue"]),
            activation=float(metadata.get("activationTargetQueryValue", "0")),
            min_replicas=spec.get("minReplicaCount", 0),
            max_replicas=spec.get("maxReplicaCount", 100),
        )

    def replicas(self, value: float) -> int:
        """KEDA's rule: a scaler is active while value > activationTargetQueryValue; inactive, the
        Deployment goes to minReplicaCount (after cooldownPeriod when that is 0); active, the HPA
        KEDA made sets ceil(value / targetQueryValue), between max(1, minReplicaCount) and
        maxReplicaCount. (The HPA's 10% tolerance and its scale-down stabilization window only
        delay a change; they are left out.)"""
        if value <= self.activation and self.min_replicas == 0:
            return 0
        return min(self.max_replicas, max(1, self.min_replicas, math.ceil(value / self.target)))


def scalers(resources: list[Resource]) -> dict[str, Scaler]:
    """The crawler's ScaledObjects by the role of the Deployment each one scales."""
    found = {}
    for scaled_object in of_kind(resources, "ScaledObject"):
        scaler = Scaler.of(scaled_object)
        deployment = named(resources, "Deployment", scaler.deployment)
        found[deployment["spec"]["template"]["metadata"]["labels"][ROLE_LABEL]] = scaler
    return found


def read_value(keda: psycopg.Connection, query: str) -> float:
    """The query as KEDA's scaler reads it: one row of one column, a number (a NULL or no row
    is an error there)."""
    rows = keda.execute(query).fetchall()
    assert len(rows) == 1 and len(rows[0]) == 1, rows
    (value,) = rows[0]
    assert isinstance(value, int | float), value
    return float(value)


def test_each_role_has_a_scaled_worker_whose_query_the_workers_login_reads(
    conn: psycopg.Connection, worker_login_url: str
) -> None:
    resources = build(CRAWLER)
    by_role = scalers(resources)
    assert set(by_role) == {role for (role,) in conn.execute("SELECT role FROM task_roles")}
    with psycopg.connect(worker_login_url, autocommit=True) as keda:
        for role, scaler in by_role.items():
            assert scaler.query == f"SELECT task_slots_wanted('{role}', 1)"
            assert read_value(keda, scaler.query) == 0
            deployment = named(resources, "Deployment", scaler.deployment)
            (container,) = pod_spec(deployment)["containers"]
            # A pod runs TASKPOOL_CONCURRENCY tasks at once: the value KEDA divides by.
            assert float(env_value(container, "TASKPOOL_CONCURRENCY")) == scaler.target, role
            assert scaler.min_replicas == 0 and scaler.max_replicas >= 1, role
    for scaled_object in of_kind(resources, "ScaledObject"):
        deployment = named(resources, "Deployment", scaled_object["spec"]["scaleTargetRef"]["name"])
        (container,) = pod_spec(deployment)["containers"]
        (trigger,) = scaled_object["spec"]["triggers"]
        assert env_value(container, trigger["metadata"]["connectionFromEnv"]) is not None


# The simulation: product_resync's ScaledObject over a queue that fills and drains. A step is one
# task's length (STEP) of taskpool's clock: the tasks the pods hold complete, the pods (as many
# as KEDA set at the last poll) claim what they can run, and KEDA polls.

SIMULATED_ROLE = "product_resync"
STEP = 5  # minutes: what a task takes, and the time between two polls here
STORES = 200  # one running task a store: enough for every slot of the largest fleet
FILL = 3000
REFILL = 600


class Fleet:
    def __init__(self, conn: psycopg.Connection, keda: psycopg.Connection, scaler: Scaler, slots: int) -> None:
        self.conn = conn
        self.keda = keda
        self.scaler = scaler
        self.slots = slots
        self.minutes = 0
        self.replicas = 0
        self.held: dict[str, list[tuple[int, int, uuid.UUID]]] = {}
        self.polls: list[tuple[int, float, int]] = []  # (minute, value, replicas)

    def poll(self) -> int:
        value = read_value(self.keda, self.scaler.query)
        self.replicas = self.scaler.replicas(value)
        self.polls.append((self.minutes, value, self.replicas))
        return self.replicas

    def step(self) -> int:
        self.minutes += STEP
        self.conn.execute("SELECT set_taskpool_clock_offset(%s::interval)", (f"{self.minutes} minutes",))
        for pod, tasks in self.held.items():
            completions = [
                {"task_id": task_id, "attempt": attempt, "claim_token": str(token)} for task_id, attempt, token in tasks
            ]
            self.conn.execute("SELECT count(*) FROM complete_tasks(%s, %s)", (pod, Jsonb(completions)))
        self.held = {}
        for n in range(self.replicas):
            pod = f"{SIMULATED_ROLE}-pod-{n}"
            claimed = self.conn.execute(
                "SELECT id, attempt, claim_token FROM claim_and_start_tasks(%s, %s, %s)",
                (SIMULATED_ROLE, pod, self.slots),
            ).fetchall()
            if claimed:
                self.held[pod] = claimed
        return self.poll()

    def enqueue(self, count: int, stores: list[int]) -> None:
        specs = [{"role": SIMULATED_ROLE, "dispensary_id": stores[n % len(stores)]} for n in range(count)]
        self.conn.execute("SELECT count(*) FROM enqueue_tasks(%s)", (Jsonb(specs),))

    def busy(self) -> tuple[int, int]:
        ready, running = self.capacity("ready_tasks", "running_tasks")
        return ready, running

    def capacity(self, *columns: str) -> tuple[Any, ...]:
        return self.conn.execute(
            sql.SQL("SELECT {} FROM v_worker_capacity WHERE role = %s").format(
                sql.SQL(", ").join(map(sql.Identifier, columns))
            ),
            (SIMULATED_ROLE,),
        ).fetchone()

    def table(self) -> str:
        return "\n".join(f"{minute:>5} min  value {value:>5g}  replicas {replicas}" for minute, value, replicas in self.polls)


def test_keda_scales_a_role_up_and_down_with_its_queue(conn: psycopg.Connection, worker_login_url: str) -> None:
    resources = build(CRAWLER)
    scaler = scalers(resources)[SIMULATED_ROLE]
    (container,) = pod_spec(named(resources, "Deployment", scaler.deployment))["containers"]
    slots = int(env_value(container, "TASKPOOL_CONCURRENCY"))
    stores = make_stores(conn, STORES)
    assert scaler.max_replicas * slots <= STORES
    with psycopg.connect(worker_login_url, autocommit=True) as keda:
        fleet = Fleet(conn, keda, scaler, slots)
        try:
            simulate(fleet, stores)
        finally:
            print(fleet.table())


def simulate(fleet: Fleet, stores: list[int]) -> None:
    scaler = fleet.scaler
    assert fleet.poll() == 0, "nothing to do: no pod"

    # A burst, with no completion yet (the rate unknown): one pod, then one more once it is busy.
    fleet.enqueue(FILL, stores)
    assert fleet.poll() == 1
    assert fleet.step() == 2
    # The first completions give the rate (60 / STEP tasks a slot-hour), and the backlog wants
    # more slots than maxReplicaCount pods have: the count stops at the maximum.
    assert fleet.step() == scaler.max_replicas
    assert fleet.polls[-1][1] > scaler.max_replicas * scaler.target

    # While tasks wait, every slot is busy and no busy pod is scaled away; once the last ones are
    # claimed, the count falls to the pods those keep busy, then to none.
    while True:
        replicas = fleet.step()
        ready, running = fleet.busy()
        if not ready:
            break
        assert replicas == scaler.max_replicas, fleet.polls[-1]
    assert replicas == math.ceil(running / scaler.target) < scaler.max_replicas
    assert fleet.step() == 0
    assert fleet.busy() == (0, 0)

    # A smaller backlog, the rate known: straight to the pods that drain it within the hour the
    # query asks for, ceil(ceil(REFILL / rate) / targetQueryValue), below the maximum; they stay
    # while it drains, then go. (The rate is 60 / STEP tasks a slot-hour, a little less for the
    # real time the test takes between a claim and its completion.)
    fleet.enqueue(REFILL, stores)
    (rate,) = fleet.capacity("tasks_per_worker_hour")
    assert 0.9 * 60 / STEP < rate <= 60 / STEP
    wanted_slots = math.ceil(REFILL / rate)
    pods = math.ceil(wanted_slots / scaler.target)
    assert fleet.poll() == pods < scaler.max_replicas
    assert fleet.polls[-1][1] == wanted_slots
    while fleet.busy() != (0, 0):
        assert fleet.step() in (pods, 0), fleet.polls[-1]
    assert fleet.replicas == 0 or fleet.step() == 0
