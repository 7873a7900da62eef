"""Making the folders that output goes to, with one-line errors when that cannot be done."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import TiersweepError

__all__ = ["make_folder"]


def make_folder(folder: str | Path, what: str) -> Path:
    """Create ``folder`` (and its parents) if needed and return it.

    Raises:
        TiersweepError: A file stands where a folder is needed; the message names ``what``
            (the option or the output it is for) and the file in the way.
    """
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((p for p in [folder, *folder.parents] if p.exists() and not p.is_dir()), folder)
        raise TiersweepError(f"{what}: cannot make the folder {folder}: {blocker} is a file, not a folder") from None
    return folder
