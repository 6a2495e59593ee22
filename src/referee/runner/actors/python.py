"""The Python actor API: subclass `referee.Actor`, save evidence through `StepContext`, return a claim.

The agent runs in its own process (`referee.runner.actors.pyhost`), never inside the runner."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

from referee.core.fsutil import atomic_write_bytes, safe_join
from referee.errors import PlanError
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


SEARCH_ENV = "REFEREE_PYTHON_SEARCH"  # the folders the host looks for the agent's module in, once started


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


def check_target(target: str, cwd: Path, search: tuple[str, ...] = ()) -> None:
    """PlanError unless `target` is `module:ClassName` whose top-level module can be found (in `search`,
    the plan's folder, then `cwd`, then PYTHONPATH): found, not imported, since importing it would run
    the agent's code inside the runner."""
    from importlib.machinery import PathFinder

    if ":" not in target:
        raise PlanError(f"actor target '{target}' is not 'module:ClassName'", fix="e.g. target: my_agent:MyAgent")
    top = target.partition(":")[0].split(".")[0]
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    where = [*search, str(cwd), *extra, *sys.path]
    if top not in sys.builtin_module_names and PathFinder.find_spec(top, where) is None:
        raise PlanError(f"cannot load actor target '{target}': no module named '{top}'",
                        fix="check the module name; it is looked up in the plan's folder, the working directory "
                            "and PYTHONPATH")


class PythonActor(ActorKind):
    """Runs a `referee.Actor` subclass in a child process per step, isolated like a command agent.

    The runner never imports the agent's code: an agent that patches referee patches only its own child.
    `setup` and `teardown` bracket each step (a fresh process); keep state across steps in files.
    """

    kind = "python"

    @classmethod
    def preflight(cls, spec) -> None:
        from referee.runner.actors.command import check_isolation

        check_isolation(spec)

    def setup(self, spec, *, app_url, run_dir):
        from referee.runner.actors.command import sandbox_for

        if not spec.target:
            raise PlanError("the python actor needs `target: module:ClassName`")
        self.cwd = Path.cwd()
        check_target(spec.target, self.cwd, self.search_path)
        self.target = spec.target
        self.argv = [sys.executable, "-P", "-m", "referee.runner.actors.pyhost", spec.target]
        self.sandbox = sandbox_for(spec, run_dir=Path(run_dir), cwd=self.cwd, command=self.argv,
                                   extra_read=self.search_path)

    def perform(self, run: StepRun) -> ActorResult:
        from referee.runner.actors.command import agent_env, as_result, step_payload
        from referee.runner.agentproc import run_agent

        # the child imports referee from where the runner did, and the agent's module from the plan's
        # folder, then the cwd, then PYTHONPATH (the order `referee check` looks in); those two folders are
        # not on its PYTHONPATH, where Python's start would import a `sitecustomize.py` the agent left there:
        # the host puts them on sys.path itself, once it has started, to import the agent's module
        here = str(Path(referee_file()).parent.parent)
        env = agent_env(run)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
        env[SEARCH_ENV] = os.pathsep.join((*self.search_path, str(self.cwd)))
        out = run_agent(self.argv, sandbox=self.sandbox, agent_dir=run.agent_dir, cwd=self.cwd, env=env,
                        stdin=step_payload(run), timeout_s=run.timeout_s)
        return as_result(out)

    def teardown(self):
        if self.sandbox is not None:
            self.sandbox.close()


def referee_file() -> str:
    import referee

    return str(referee.__file__)


actors.add("python", PythonActor)
