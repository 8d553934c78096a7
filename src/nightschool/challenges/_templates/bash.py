"""Cluster `bash`: shell scripts (`solution.sh`) for log reports, renaming files, word counts.

Each template lives in its own module (`bash_access_log`, `bash_rename_files`,
`bash_word_freq`), its starter tier in `starters.bash`; every seed draws its
task from the template's family of tasks (see `_kit.variant`).
"""

from __future__ import annotations

from nightschool.challenges._templates.bash_access_log import AccessLog
from nightschool.challenges._templates.bash_rename_files import RenameFiles
from nightschool.challenges._templates.bash_word_freq import WordFreq

TEMPLATES = (AccessLog(), RenameFiles(), WordFreq())
"""The cluster's templates."""

__all__ = ["TEMPLATES", "AccessLog", "RenameFiles", "WordFreq"]
