"""Which folders `bindscale publish` wrote: the published answer's marker file and the test for it.

Kept apart from :mod:`bindscale.report.publish` so that the run's option checks
(:mod:`bindscale.run.options`, which import nothing heavy) can refuse to run into a published folder.
"""

from __future__ import annotations

import json
from pathlib import Path

from bindscale.store.storage import is_url

#: The file publish writes at the top of a published folder, naming itself its writer.
MANIFEST = "MANIFEST.json"


def published_root(path: "str | Path") -> Path | None:
    """The published folder ``path`` is, or is a study's folder of: the one holding the :data:`MANIFEST` that
    publish writes. None for anything else (a run directory, a URL, a folder published before the manifest)."""
    if is_url(path):
        return None
    here = Path(path)
    for root in (here, here.parent):
        try:
            if json.loads((root / MANIFEST).read_text(encoding="utf-8")).get("written_by") == "bindscale publish":
                return root
        except (OSError, ValueError, AttributeError):
            continue
    return None
