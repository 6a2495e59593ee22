"""The Python actor API: subclass `referee.Actor`, save evidence through `StepContext`, return a claim."""

from __future__ import annotations

import importlib
import sys
import traceback
from pathlib import Path
from typing import Any

from referee.errors import PlanError
from referee.fsutil import atomic_write_bytes, atomic_write_json, safe_join
from referee.runner.actors.base import ActorKind, ActorResult, Claim, StepRun, actors


class StepContext:
    """What a Python agent sees of one step; it may write only into `agent_dir`.

    >>> import tempfile; ctx = StepContext("s1", "do it", None, Path(tempfile.mkdtemp()))
    >>> ctx.save("note.txt", "hi").name
    'note.txt'
    >>> ctx.claim(True, "done").dump()["pass"]
    True
    """

    def __init__(self, step_id: str, do: str, app_url: str | None, agent_dir: Path, page: Any = None,
                 script: list | None = None) -> None:
        self.step_id, self.do, self.app_url, self.agent_dir, self.page = step_id, do, app_url, Path(agent_dir), page
        self.script = script or []
        self._saved: list[str] = []

    def save(self, name: str, data: bytes | str) -> Path:
        """Save an evidence file into the agent folder (paths may not escape it)."""
        path = safe_join(self.agent_dir, name)
        atomic_write_bytes(path, data.encode("utf-8") if isinstance(data, str) else data)
        self._saved.append(name)
        return path

    def claim(self, passed: bool, note: str = "", evidence: list[str] | None = None) -> Claim:
        """Build the agent's claim (recorded, never deciding the verdict)."""
        # populate_by_name: without the pydantic plugin mypy knows the field only by its alias, "pass"
        return Claim(passed=passed, note=note,  # type: ignore[call-arg]
                     evidence=list(evidence if evidence is not None else self._saved))


class Actor:
    """Base class of a Python agent: implement `act`; `setup`/`teardown` bracket the plan."""

    def setup(self, app_url: str | None) -> None:  # noqa: B027
        pass

    def act(self, ctx: StepContext) -> Claim | dict | None:
        raise NotImplementedError

    def teardown(self) -> None:  # noqa: B027
        pass


def load_target(target: str, search: tuple[str, ...] = ()) -> type:
    """Import `module:ClassName` (the plan's actor.target), looked for in `search` (the plan's folder),
    then the run's working directory, then PYTHONPATH (`referee check` looks in the same places)."""
    if ":" not in target:
        raise PlanError(f"actor target '{target}' is not 'module:ClassName'", fix="e.g. target: my_agent:MyAgent")
    mod_name, _, cls_name = target.partition(":")
    for folder in reversed((*search, str(Path.cwd()))):
        if folder in sys.path:
            sys.path.remove(folder)
        sys.path.insert(0, folder)
    try:
        mod = importlib.import_module(mod_name)
        cls = getattr(mod, cls_name)
    except (ImportError, AttributeError) as exc:
        raise PlanError(f"cannot load actor target '{target}': {exc}", fix="check the module and class names") from None
    return cls


class PythonActor(ActorKind):
    """Runs a `referee.Actor` subclass in-process; an exception in `act` is recorded as no claim."""

    kind = "python"

    def setup(self, spec, *, app_url, run_dir):
        if not spec.target:
            raise PlanError("the python actor needs `target: module:ClassName`")
        self.agent = load_target(spec.target, self.search_path)()
        self.agent.setup(app_url)

    def perform(self, run: StepRun) -> ActorResult:
        ctx = StepContext(run.step.id, run.step.do, run.app_url, run.agent_dir, page=run.page, script=run.step.script)
        try:
            claim = self.agent.act(ctx)
        except Exception as exc:
            trace = traceback.format_exc()
            return ActorResult(exit_code=1, error=f"{type(exc).__name__}: {exc}", stderr_tail=trace[-4000:],
                               stderr=trace.encode("utf-8", errors="replace")[-(1 << 20):])
        if claim is not None:
            data = claim.dump() if isinstance(claim, Claim) else claim
            atomic_write_json(run.claim_file, data)
        return ActorResult(exit_code=0)

    def teardown(self):
        self.agent.teardown()


actors.add("python", PythonActor)
