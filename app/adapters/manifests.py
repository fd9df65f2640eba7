"""Read pod manifests: YAML or JSON text, one or many documents, pods or v1 ``List``s.

The domain (``app.domain.pod.manifest.pod_from_manifest``) turns one decoded Pod object into a ``Pod``;
this adapter owns the text formats (PyYAML stays out of the domain):

* JSON text (starting with ``{`` or ``[``) is decoded with ``json`` first, so tab-indented JSON
  works; anything else, or JSON that fails to decode, is read as YAML (``safe_load_all``).
* Empty documents are skipped. A document is a Pod, a ``List``/``PodList`` whose ``items`` are
  Pods, or a JSON array of Pods.
* Decoding is bounded (``app.adapters.safe_yaml``: depth, digits, YAML aliases expanded) and
  a text holds at most ``MAX_PODS`` pods; beyond, ``ManifestLimitError`` (field ``manifest``).
* Errors are ``PodManifestError``: the field path gains an ``items[i].`` prefix inside a list,
  and the message names the document number when the text has more than one document.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

from app.adapters.safe_yaml import load_yaml_all, loads_json
from app.domain.limits import MAX_PODS, InputLimitError
from app.domain.pod.manifest import pod_from_manifest
from app.domain.pod.model import Pod, PodManifestError

_LIST_KINDS = ("List", "PodList")


class ManifestSyntaxError(PodManifestError):
    """The text is neither valid YAML nor valid JSON."""


class ManifestLimitError(PodManifestError):
    """The text is beyond a limit of ``app.domain.limits`` (depth, aliases, digits, pods)."""

    def __init__(self, err: InputLimitError) -> None:
        super().__init__("manifest", err.detail)


def _load_documents(text: str) -> list[Any]:
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return [loads_json(text, "manifest")]
        except InputLimitError as err:
            raise ManifestLimitError(err) from None
        except json.JSONDecodeError:
            pass  # maybe YAML flow style; let YAML report the problem
    try:
        return [d for d in load_yaml_all(text, "manifest") if d is not None]
    except InputLimitError as err:
        raise ManifestLimitError(err) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        raise ManifestSyntaxError("", f"invalid YAML{where}: {problem}") from err


def _too_many_pods() -> ManifestLimitError:
    return ManifestLimitError(
        InputLimitError("manifest", f"more than {MAX_PODS} pods in one request")
    )


def _pods_of(doc: Any, prefix: str, pod_level_resources_enabled: bool) -> list[Pod]:
    items: list[tuple[str, Any]]
    if isinstance(doc, list):
        items = [(f"{prefix}[{i}]", item) for i, item in enumerate(doc)]
    elif isinstance(doc, Mapping) and doc.get("kind") in _LIST_KINDS:
        raw = doc.get("items")
        if raw is None:
            raw = []
        if not isinstance(raw, list):
            raise PodManifestError(f"{prefix}items", "expected a list")
        items = [(f"{prefix}items[{i}]", item) for i, item in enumerate(raw)]
    else:
        return [_pod(doc, prefix, pod_level_resources_enabled)]
    if len(items) > MAX_PODS:
        raise _too_many_pods()
    pods: list[Pod] = []
    for path, item in items:
        pods.extend(_pods_of(item, f"{path}.", pod_level_resources_enabled))
    return pods


def _pod(doc: Any, prefix: str, pod_level_resources_enabled: bool) -> Pod:
    try:
        return pod_from_manifest(doc, pod_level_resources_enabled=pod_level_resources_enabled)
    except PodManifestError as err:
        field = f"{prefix}{err.field}" if err.field else prefix.rstrip(".")
        raise PodManifestError(field, err.detail) from err


def parse_pod_manifests(text: str, *, pod_level_resources_enabled: bool = True) -> list[Pod]:
    """Every pod in ``text`` (YAML or JSON, multi-document, ``List`` objects expanded)."""
    if not isinstance(text, str):
        raise ManifestSyntaxError("", f"manifest text must be a string, got {type(text).__name__}")
    docs = _load_documents(text)
    pods: list[Pod] = []
    for number, doc in enumerate(docs, start=1):
        try:
            pods.extend(_pods_of(doc, "", pod_level_resources_enabled))
            if len(pods) > MAX_PODS:
                raise ManifestLimitError(
                    InputLimitError("manifest", f"more than {MAX_PODS} pods in one request")
                )
        except ManifestLimitError:
            raise
        except PodManifestError as err:
            if len(docs) == 1:
                raise
            raise PodManifestError(err.field, err.detail, document=number) from err
    return pods
