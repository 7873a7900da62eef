"""Credentials hidden in the URLs the tool prints (storage URLs, Ray addresses).

A storage URL such as ``postgresql://user:secret@host/db`` carries its password; every message,
manifest and report that shows such a URL shows ``postgresql://user:***@host/db`` instead.
"""

from __future__ import annotations

import re

__all__ = ["redact", "MASK"]

#: What a password is replaced by.
MASK = "***"

# The password of ``scheme://user:password@host``: everything from the first colon after the
# user name to the last ``@`` of the URL (a password typed with a raw ``@``, ``:`` or ``/`` in
# it is still hidden whole; an ``@`` further on hides more, never less). A URL ends at white
# space or a quote, as it does in a message.
_USERINFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s'\"]*:)[^\s'\"]*@")
# A password given as a query parameter (``?password=...``, libpq and MySQL drivers take it).
_QUERY = re.compile(r"(?P<head>[?&;](?:password|passwd|pwd)=)[^&;#\s'\"]*", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with the password of every URL in it (``scheme://user:PASSWORD@host`` or a
    ``password=`` query parameter) replaced by ``***``; a bare URL or a whole message."""
    text = _USERINFO.sub(lambda m: f"{m['head']}{MASK}@", text)
    return _QUERY.sub(lambda m: f"{m['head']}{MASK}", text)
