"""A user's tool map (`referee audit --tools tools.yaml`): teach the auditor a team's own tools without code.

```yaml
tools_version: 1
tools:
  - name: "ehr_*"            # exact name, glob, or /regex/
    kind: create             # read | create | edit | delete | send | configure | ignore
    target: patient_id       # optional: the argument that holds the target id
    failure: '"ok":\\s*false' # optional: a regex over the result that marks the call failed
```
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from referee.audit.extract.acting import MAP_KINDS, ToolCatalog, ToolRule
from referee.core.fsutil import read_yaml
from referee.errors import ToolMapError

MapKind = Literal["read", "create", "edit", "delete", "send", "configure", "ignore"]


class ToolEntry(BaseModel):
    """One tool (or pattern of tools) and what it does."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    kind: MapKind
    target: str | None = None
    failure: str | None = None


class ToolMapFile(BaseModel):
    """The whole file."""

    model_config = ConfigDict(extra="forbid")
    tools_version: Literal[1] = 1
    tools: list[ToolEntry]


def compile_name(name: str) -> re.Pattern[str]:
    """`/regex/` as a regex, a glob (`ehr_*`) as its translation, anything else as the exact name.

    >>> bool(compile_name("ehr_*").fullmatch("ehr_x9")), bool(compile_name("/^ehr_x\\\\d+$/").fullmatch("ehr_x9"))
    (True, True)
    """
    if len(name) > 2 and name.startswith("/") and name.endswith("/"):
        return re.compile(name[1:-1])
    if any(c in name for c in "*?["):
        return re.compile(fnmatch.translate(name))
    return re.compile(re.escape(name))


def load_tool_map(path: Path) -> tuple[ToolCatalog, str]:
    """The compiled catalog and the SHA-256 of the file (it goes into the evidence cache key).

    A problem is one ToolMapError naming the file and the entry: an unknown kind or key, a bad regex.
    """
    path = Path(path)
    raw = read_yaml(path, ToolMapError, "tool map")
    try:
        spec = ToolMapFile.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "tool map"
        extra = f" (known kinds: {', '.join(MAP_KINDS)})" if err["loc"][-1:] == ("kind",) else ""
        raise ToolMapError(f"{loc}: {err['msg']}{extra}", file=str(path),
                           fix="each entry has name, kind and optionally target and failure") from None
    rules = []
    for i, e in enumerate(spec.tools):
        for field, text in (("name", e.name), ("failure", e.failure)):
            if text is None:
                continue
            try:
                pattern = compile_name(text) if field == "name" else re.compile(text)
            except re.error as exc:
                raise ToolMapError(f"tools.{i}.{field}: bad regex {text!r}: {exc}", file=str(path),
                                   fix="write a valid regular expression") from None
            if field == "name":
                name_re = pattern
            else:
                failure_re = pattern
        rules.append(ToolRule(e.name, name_re, e.kind, e.target, failure_re if e.failure else None))
    return ToolCatalog(rules=tuple(rules)), hashlib.sha256(path.read_bytes()).hexdigest()
