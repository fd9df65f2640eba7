"""Checkpoint use cases: inspect a state file (a path, an upload, a file of the kubelet root
dir), convert one with a backup, and check a kubelet root dir before an upgrade or downgrade.

Everything is computed by ``app.domain.checkpoint``; the modules here read files through
``app.adapters.kubelet``, write only through ``app.adapters.statefiles`` and shape the results
for the CLI, the pages and the JSON API. One module per use case:

* ``errors``: the errors the CLI and the web map to exit codes and 4xx answers;
* ``arguments``: manager, policy and target arguments as users type them;
* ``tables``: the file's content as tables for people;
* ``inspection``: one file's report (``inspect_content``, ``inspect_path``,
  ``inspect_kubelet_file``) and the server's kubelet files (``kubelet_files``);
* ``conversion``: ``convert_file`` with its backup;
* ``root_check``: ``check_root_dir`` (``check_root_content`` for content already in
  memory), what a release does with a root dir's state files.

Every name is importable from this package as before the split.
"""

from __future__ import annotations

from app.services.checkpoints.arguments import (
    parse_manager,
    parse_policy,
    parse_targets,
    resolve_target,
)
from app.services.checkpoints.conversion import ConvertOutcome, backup_name, convert_file
from app.services.checkpoints.errors import (
    CheckpointFileError,
    CheckpointServiceError,
    CheckpointUsageError,
    ConversionRefusedError,
    EmptyUploadError,
    UploadTooLargeError,
    UploadTooManyMembersError,
)
from app.services.checkpoints.inspection import (
    MANAGERS,
    MAX_INSPECT_MEMBERS,
    TOO_MANY_MEMBERS,
    InspectionView,
    KubeletFilesView,
    inspect_content,
    inspect_kubelet_file,
    inspect_path,
    kubelet_files,
)
from app.services.checkpoints.root_check import (
    DirCheck,
    FileCheck,
    Rescue,
    RootContent,
    check_root_content,
    check_root_dir,
)
from app.services.checkpoints.tables import Table

__all__ = [
    "MANAGERS",
    "MAX_INSPECT_MEMBERS",
    "TOO_MANY_MEMBERS",
    "CheckpointFileError",
    "CheckpointServiceError",
    "CheckpointUsageError",
    "ConversionRefusedError",
    "ConvertOutcome",
    "DirCheck",
    "EmptyUploadError",
    "FileCheck",
    "InspectionView",
    "KubeletFilesView",
    "Rescue",
    "RootContent",
    "Table",
    "UploadTooLargeError",
    "UploadTooManyMembersError",
    "backup_name",
    "check_root_content",
    "check_root_dir",
    "convert_file",
    "inspect_content",
    "inspect_kubelet_file",
    "inspect_path",
    "kubelet_files",
    "parse_manager",
    "parse_policy",
    "parse_targets",
    "resolve_target",
]
