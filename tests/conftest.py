"""Shared test setup: make the project root importable so ``tests.fixtures`` and
``tests.web.html_helpers`` import under bare ``pytest`` as under ``python -m pytest``.

(``pythonpath = ["."]`` in pyproject's pytest options would do the same.)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
