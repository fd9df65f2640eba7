"""Read kubelet files from disk: a KubeletConfiguration file (YAML or JSON).

The parsing rules live in ``app.domain.kubelet_config``; this adapter only reads text and
decodes it. It never writes: observed kubelet directories are read-only for Numascope.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml

from app.adapters.safe_yaml import load_yaml
from app.domain.kubelet_config import (
    DEFAULT_RELEASE,
    KubeletConfig,
    KubeletConfigError,
    kubelet_config_from_dict,
)
from app.domain.limits import InputLimitError

MAX_CONFIG_BYTES = 1024 * 1024


#: Texts up to this size are parsed once (fleets repeat a few configurations; YAML parsing is
#: most of an upgrade check's cost): a ``KubeletConfig`` is an immutable value.
MEMO_BYTES = 16 * 1024


def parse_kubelet_config_text(
    text: str, release: str = DEFAULT_RELEASE, *, check_gates: bool = True
) -> KubeletConfig:
    if len(text) <= MEMO_BYTES:
        return _parse_memo(text, release, check_gates)
    return _parse(text, release, check_gates)


@functools.lru_cache(maxsize=128)
def _parse_memo(text: str, release: str, check_gates: bool) -> KubeletConfig:
    return _parse(text, release, check_gates)  # an error is raised again each time, not kept


def _parse(text: str, release: str, check_gates: bool) -> KubeletConfig:
    try:
        obj: Any = load_yaml(text, "KubeletConfiguration") if text.strip() else {}
    except InputLimitError as exc:
        raise KubeletConfigError("KubeletConfiguration", exc.detail) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise KubeletConfigError("KubeletConfiguration", f"not valid YAML or JSON{where}") from None
    return kubelet_config_from_dict(obj, release, check_gates=check_gates)


def load_kubelet_config(path: str | Path, release: str = DEFAULT_RELEASE) -> KubeletConfig:
    p = Path(path)
    try:
        if p.stat().st_size > MAX_CONFIG_BYTES:
            raise KubeletConfigError(str(p), "file is larger than 1 MiB")
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KubeletConfigError(str(p), "no such file") from None
    except PermissionError:
        raise KubeletConfigError(str(p), "permission denied") from None
    except IsADirectoryError:
        raise KubeletConfigError(str(p), "is a directory, expected a file") from None
    except UnicodeDecodeError:
        raise KubeletConfigError(str(p), "is not UTF-8 text") from None
    return parse_kubelet_config_text(text, release)
