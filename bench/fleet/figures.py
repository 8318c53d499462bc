"""The fleet bench's arithmetic, apart from any database: the fleet it simulates, the manifests'
concurrency, and the figures computed from the samples taken during a run."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.report import percentile

# The crawl cadence of the reference workload: every store six times a day.
CADENCE_HOURS = 4.0


@dataclass(frozen=True)
class Platform:
    """A simulated platform at fleet scale (real time): its stores, its rate limit, its latency."""

    name: str
    store_share: float
    requests_per_minute: int
    latency_ms: int


# 24,000 stores at six crawls a day ask stores / 240 requests a minute of their platform. Three
# platforms allow more than that; weedmaps allows less (a platform that throttles the fleet),
# which is where the claim's blindness to limits (issue 29) costs the others their slots.
PLATFORMS = (
    Platform("dutchie", 0.40, 60, 300),   # 9,600 stores ask 40/min
    Platform("jane", 0.30, 40, 600),      # 7,200 stores ask 30/min
    Platform("leafly", 0.20, 24, 1000),   # 4,800 stores ask 20/min
    Platform("weedmaps", 0.10, 8, 1500),  # 2,400 stores ask 10/min
)


def store_counts(total: int, platforms: Sequence[Platform] = PLATFORMS) -> dict[str, int]:
    """`total` stores split by the platforms' shares (the rounding remainder to the first)."""
    counts = {p.name: int(total * p.store_share) for p in platforms}
    counts[platforms[0].name] += total - sum(counts.values())
    return counts


def discovery_rounds(counts: dict[str, int], rounds: int) -> list[tuple[str, int, int]]:
    """(platform, first store number, how many) batches that add every platform's stores in
    `rounds` rounds, each round a slice of every platform in proportion to its stores."""
    batches = []
    for r in range(rounds):
        for name, count in counts.items():
            first, last = count * r // rounds, count * (r + 1) // rounds
            if last > first:
                batches.append((name, first, last - first))
    return batches


def compressed_limit(platform: Platform, compression: float) -> int:
    """The requests a minute the platform allows in compressed time (platform_governance's
    requests_per_minute is whole)."""
    return max(1, round(platform.requests_per_minute * compression))


def bucket_burst(requests_per_minute: int) -> float:
    """The token bucket's burst (acquire_platform_request): five seconds' worth, at least one."""
    return max(1.0, requests_per_minute / 12.0)


@dataclass(frozen=True)
class RoleFleet:
    """A role's workers as the Kubernetes manifests run them: tasks at once a pod, most pods."""

    role: str
    concurrency: int
    max_pods: int


def manifest_fleet(kubernetes_dir: Path, roles: Iterable[str]) -> dict[str, RoleFleet]:
    """Each role's TASKPOOL_CONCURRENCY (the base Deployment's unless the role's patch sets it)
    and maxReplicaCount, read from kubernetes/worker and kubernetes/crawler/roles/<role>."""
    base = yaml.safe_load((kubernetes_dir / "worker" / "deployment.yaml").read_text())
    base_concurrency = _concurrency(base)
    fleet = {}
    for role in roles:
        kustomization = kubernetes_dir / "crawler" / "roles" / role.replace("_", "-") / "kustomization.yaml"
        document = yaml.safe_load(kustomization.read_text())
        concurrency, max_pods = base_concurrency, None
        for patch in document.get("patches", []):
            body = yaml.safe_load(patch["patch"])
            if isinstance(body, dict):
                concurrency = _concurrency(body) or concurrency
            else:
                for op in body:
                    if op.get("path") == "/spec/maxReplicaCount":
                        max_pods = int(op["value"])
        if concurrency is None or max_pods is None:
            raise ValueError(f"{kustomization} names no TASKPOOL_CONCURRENCY or maxReplicaCount")
        fleet[role] = RoleFleet(role, concurrency, max_pods)
    return fleet


def _concurrency(deployment: dict[str, Any]) -> int | None:
    for container in deployment["spec"]["template"]["spec"]["containers"]:
        for env in container.get("env", []):
            if env.get("name") == "TASKPOOL_CONCURRENCY":
                return int(env["value"])
    return None


# Figures from the samples


def max_window_rate(samples: Sequence[tuple[float, int]], window: float) -> float | None:
    """The highest rate of a counter over any stretch of at least `window` seconds between two
    samples ((seconds, count) pairs in time order); None when the samples span less."""
    best = None
    j = 0
    for i, (t_i, c_i) in enumerate(samples):
        j = max(j, i + 1)
        while j < len(samples) and samples[j][0] - t_i < window:
            j += 1
        if j == len(samples):
            break
        t_j, c_j = samples[j]
        rate = (c_j - c_i) / (t_j - t_i)
        best = rate if best is None else max(best, rate)
    return best


def mean_rate(samples: Sequence[tuple[float, int]]) -> float | None:
    if len(samples) < 2 or samples[-1][0] <= samples[0][0]:
        return None
    return (samples[-1][1] - samples[0][1]) / (samples[-1][0] - samples[0][0])


def slot_shares(busy_seconds: dict[str, float], slot_seconds: float, names: Iterable[str]) -> dict[str, float]:
    """Each name's share of the slots' time (`slot_seconds`: slots × seconds), from the seconds
    its attempts kept a slot busy, and "idle" the rest: the shares sum to 1."""
    shares = {name: 0.0 for name in names}
    if slot_seconds <= 0:
        return {**shares, "idle": 1.0}
    for name, seconds in busy_seconds.items():
        shares[name] = shares.get(name, 0.0) + seconds / slot_seconds
    shares["idle"] = 1.0 - sum(shares.values())
    return shares


def spread(values: Sequence[float]) -> dict[str, float | int | None]:
    """count, p50, p95 and max of `values` (None each when there are none)."""
    if not values:
        return {"count": 0, "p50": None, "p95": None, "max": None}
    return {"count": len(values), "p50": percentile(values, 50), "p95": percentile(values, 95),
            "max": max(values)}


def growth_per_hour(samples: Sequence[tuple[float, int]]) -> float | None:
    """Bytes an hour of bench time by a least-squares line through (seconds, bytes) samples."""
    if len(samples) < 2:
        return None
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_b = sum(b for _, b in samples) / n
    var = sum((t - mean_t) ** 2 for t, _ in samples)
    if var == 0:
        return None
    slope = sum((t - mean_t) * (b - mean_b) for t, b in samples) / var
    return slope * 3600

