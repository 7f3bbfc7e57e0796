"""Stored text on a terminal: shown, never obeyed.

A memory, a query in the audit log or a conflict's note can hold anything an
agent or an import file put there, escape sequences included: ``ESC ] 0 ; ...
BEL`` retitles the window, ``ESC [ 2 J`` clears the screen, others rewrite
what was printed before or talk to the terminal's clipboard. Every place the
CLI prints such text goes through this module.

- ``visible`` is for what people read (search, expand, explain, audit,
  conflicts, agents, golden, error messages, and ``--text`` or a CSV export
  when they go to a terminal). Each C0 control character except newline and
  tab, DEL and each C1 control character (U+0080-U+009F) is replaced by its
  Python escape, written out: ESC becomes the four characters ``\\x1b``, BEL
  ``\\x07``, CSI (U+009B) ``\\x9b``, a carriage return ``\\r``. A lone
  surrogate (which no terminal encoding can carry) becomes ``\\udXXX``. The
  result shows which characters were there and makes the terminal do
  nothing; it is for the eye, not a round trip (text that holds a backslash,
  an ``x`` and two hex digits looks the same). Text for a pipe or a file is
  left as stored.
- ``json_text`` is for ``--json`` and JSON Lines: JSON already escapes C0
  characters; DEL, C1, U+2028/U+2029 and lone surrogates are escaped too
  (``\\u009b``), which changes no value: ``json.loads`` gives back the text
  exactly as stored.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: Everything a terminal may act on, and surrogates (unencodable); newline and tab stay.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
#: The same, newline and tab included: for what must stay on one line.
_CONTROL_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
#: What ``json.dumps(ensure_ascii=False)`` leaves raw but a terminal may act on or an encoder refuse.
_JSON_RAW = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _SHORT.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def visible(text: object, *, one_line: bool = False) -> str:
    """``text`` with every control character written out as its escape (see the module docstring).

    ``one_line``: newlines and tabs are written out too (``\\n``, ``\\t``), for
    an error message or a field that must not break the line it sits in.
    """
    return (_CONTROL_ONE_LINE if one_line else _CONTROL).sub(_escape, str(text))


def json_text(data: Any, *, indent: int | None = None) -> str:
    """``data`` as JSON that carries no raw control character (values unchanged for a JSON reader)."""
    dumped = json.dumps(data, ensure_ascii=False, indent=indent, default=str)
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped)


__all__ = ["visible", "json_text"]
