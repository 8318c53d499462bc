"""`kustomize build`, for the subset of kustomize that kubernetes/ uses, so that the tests can
render the manifests offline: Debian has no kustomize (its kubectl, 1.20, embeds kustomize
2.0.3, which knows none of `labels` and `patches`).

A kustomization may hold `resources` (YAML files, and directories with a kustomization of their
own), `nameSuffix`, `labels` and `patches`; any other field is refused, so that a manifest never
relies on something this renderer would silently skip. Within one kustomization they apply in
kustomize's order: the resources are built, then the patches, then the name suffix, then the
labels. A patch is either a JSON patch (RFC 6902: a list of operations, with a target) or a
strategic merge patch (a mapping, for a built-in kind: lists of containers, env, volumes, volume
mounts and ports merge on their keys, as the API's patchMergeKey says; other lists are replaced).
A target selects by kind, and optionally by exact name and `key=value` label selectors; a patch
that matches nothing is an error here (kustomize skips it), so a renamed object cannot leave a
patch behind unnoticed.
`labels` with includeSelectors also sets a Deployment's selector and pod template labels.
Name references are not rewritten: a reference to a renamed object is written out in the patch
(a ScaledObject's scaleTargetRef), and the tests check that each one names an object there.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonpatch
import yaml

Resource = dict[str, Any]

SUPPORTED_FIELDS = {"apiVersion", "kind", "resources", "nameSuffix", "labels", "patches"}
# Built-in kinds a strategic merge patch may change (a custom resource's patch would be a JSON
# merge patch, replacing lists whole: use a JSON patch for those).
STRATEGIC_MERGE_KINDS = {"Deployment", "Job", "CronJob", "Service", "ConfigMap", "PersistentVolumeClaim"}
# The API's patchMergeKey of the lists a strategic merge patch merges, by field name.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
}


class UnsupportedKustomization(Exception):
    """A kustomization uses something this renderer does not do."""


def build(directory: Path) -> list[Resource]:
    """The resources `kustomize build directory` writes, in order."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unsupported = set(kustomization) - SUPPORTED_FIELDS
    if unsupported:
        raise UnsupportedKustomization(f"{directory}: fields {sorted(unsupported)}")
    resources: list[Resource] = []
    for entry in kustomization.get("resources", []):
        path = directory / entry
        if path.is_dir():
            resources.extend(build(path))
        else:
            resources.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    for patch in kustomization.get("patches", []):
        apply_patch(resources, patch, directory)
    if "nameSuffix" in kustomization:
        for resource in resources:
            resource["metadata"]["name"] += kustomization["nameSuffix"]
    for labels in kustomization.get("labels", []):
        add_labels(resources, labels)
    return resources


def source_files(directory: Path) -> set[Path]:
    """Every file the build of `directory` reads: its kustomizations and resource files."""
    kustomization = directory / "kustomization.yaml"
    files = {kustomization.resolve()}
    for entry in yaml.safe_load(kustomization.read_text()).get("resources", []):
        path = (directory / entry).resolve()
        files |= source_files(path) if path.is_dir() else {path}
    return files


def apply_patch(resources: list[Resource], entry: dict[str, Any], directory: Path) -> None:
    if set(entry) - {"patch", "path", "target"}:
        raise UnsupportedKustomization(f"{directory}: patch fields {sorted(entry)}")
    text = entry["patch"] if "patch" in entry else (directory / entry["path"]).read_text()
    body = yaml.safe_load(text)
    target = entry.get("target")
    if isinstance(body, list):
        if target is None:
            raise UnsupportedKustomization(f"{directory}: a JSON patch needs a target")
        matched = [r for r in resources if matches(r, target)]
        for resource in matched:
            patched = jsonpatch.apply_patch(resource, body)
            resource.clear()
            resource.update(patched)
    else:
        target = target or {"kind": body["kind"], "name": body["metadata"]["name"]}
        matched = [r for r in resources if matches(r, target)]
        for resource in matched:
            if resource["kind"] not in STRATEGIC_MERGE_KINDS:
                raise UnsupportedKustomization(f"{directory}: a strategic merge patch of a {resource['kind']}")
            patch = {key: value for key, value in body.items() if key not in ("apiVersion", "kind", "metadata")}
            strategic_merge(resource, patch)
    if not matched:
        raise UnsupportedKustomization(f"{directory}: a patch whose target matches nothing: {target}")


def matches(resource: Resource, target: dict[str, Any]) -> bool:
    if set(target) - {"kind", "name", "labelSelector"}:
        raise UnsupportedKustomization(f"target fields {sorted(target)}")
    if resource["kind"] != target["kind"]:
        return False
    if "name" in target and resource["metadata"]["name"] != target["name"]:
        return False
    labels = resource["metadata"].get("labels", {})
    for requirement in filter(None, target.get("labelSelector", "").split(",")):
        key, sep, value = requirement.partition("=")
        if not sep or "!" in key or labels.get(key.strip()) != value.strip():
            return False
    return True


def strategic_merge(into: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            into.pop(key, None)
        elif isinstance(value, dict) and isinstance(into.get(key), dict):
            strategic_merge(into[key], value)
        elif isinstance(value, list) and key in MERGE_KEYS and isinstance(into.get(key), list):
            merge_key = MERGE_KEYS[key]
            for item in value:
                same = [old for old in into[key] if old.get(merge_key) == item[merge_key]]
                if same:
                    strategic_merge(same[0], item)
                else:
                    into[key].append(copy.deepcopy(item))
        else:
            into[key] = copy.deepcopy(value)


def add_labels(resources: list[Resource], entry: dict[str, Any]) -> None:
    if set(entry) - {"pairs", "includeSelectors"}:
        raise UnsupportedKustomization(f"labels fields {sorted(entry)}")
    pairs = entry["pairs"]
    for resource in resources:
        resource["metadata"].setdefault("labels", {}).update(pairs)
        if not entry.get("includeSelectors"):
            continue
        if resource["kind"] == "Deployment":
            resource["spec"]["selector"].setdefault("matchLabels", {}).update(pairs)
            resource["spec"]["template"]["metadata"].setdefault("labels", {}).update(pairs)
        elif "selector" in resource.get("spec", {}) or "template" in resource.get("spec", {}):
            raise UnsupportedKustomization(f"labels with includeSelectors on a {resource['kind']}")
