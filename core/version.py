"""Version strings recorded with every result: the model version and the code digest."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

import numpy

__all__ = ["MODEL_VERSION", "code_digest", "code_digest_of", "code_folder", "code_origin", "source_digest"]

#: Changes whenever simulation semantics change, so that stored results computed under other
#: semantics are never mistaken for current ones.
MODEL_VERSION = "2"
#: The files whose bytes make up the code digest.
SOURCE_PATTERNS = ("*.py", "*.pyx", "*.pxd")


def source_digest(folder: str | Path) -> str:
    """16 hex digits of SHA-256 over every source file under ``folder`` (``*.py``, and the
    Cython sources of the compiled path, ``*.pyx`` and ``*.pxd``): each file's path relative
    to ``folder`` and its bytes, in sorted order (compiled caches and binaries are not read).

    Any edit of a source file changes it; where the files lie and their timestamps do not.
    """
    root = Path(folder)
    sha = hashlib.sha256()
    sources = [path for pattern in SOURCE_PATTERNS for path in root.rglob(pattern)]
    for path in sorted(sources, key=lambda p: p.relative_to(root).as_posix()):
        if "__pycache__" in path.parts:
            continue
        sha.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0")
        data = path.read_bytes()
        sha.update(len(data).to_bytes(8, "little") + data)
    return sha.hexdigest()[:16]


def code_folder() -> Path:
    """The folder of the simulator's source this process imported (``tiersweep.core``)."""
    return Path(__file__).resolve().parent


def code_digest_of(folder: str | Path, numpy_version: str) -> str:
    """16 hex digits of SHA-256 over the :func:`source_digest` of ``folder`` and the version of
    the numpy its runs draw their random numbers with.

    numpy promises the same random streams only on the same build of numpy (its compatibility
    policy, NEP 19): under another release a run may draw other numbers, so the release is part
    of what produced a result, as the source is.
    """
    material = f"{source_digest(folder)}\0numpy {numpy_version}"
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]


@lru_cache(maxsize=1)
def code_digest() -> str:
    """The digest of the simulator's source as this process imported it and of the numpy it
    draws with (:func:`code_digest_of` the ``tiersweep.core`` package folder and
    ``numpy.__version__``), computed once per process.

    It is what a stored row says of the code that produced it. It is taken from the files
    themselves, not from a version number: an installed copy and an edited source tree of
    the same version differ here (they once gave different results under one cell id, when
    Ray workers imported the source tree and the driver the installed copy).
    """
    return code_digest_of(code_folder(), numpy.__version__)


def code_origin() -> str:
    """Where this process's simulator came from, for a message: its source folder and numpy."""
    return f"{code_folder()} with numpy {numpy.__version__}"
