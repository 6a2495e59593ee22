"""One plugin contract, every pluggable kind: a real dist-info on PYTHONPATH declares entry points, and
the CLI uses each plugin end to end (docs/plugins.md).

Groups: referee.validators, referee.captures, referee.ocr_engines (a plan run and its re-grade);
referee.extractors, referee.claim_readers, referee.readers (`referee audit`).
"""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from pathlib import Path

import pytest

from referee.core.registry import FACTORY, FUNCTION, Registry, subclass_of
from referee.errors import PluginError, UsageError
from tests.conftest import run_cli

PKG = "referee_kinds_demo"

MODULES = {
    # a capture kind: reads the app's state file (here a file in the run's cwd) into the evidence
    "captures.py": '''
        from referee.runner.captures import CaptureKind, CaptureParams


        class StateFile(CaptureKind):
            summary = "the number an app keeps in a state file, taken by the runner"

            class Params(CaptureParams):
                path: str

            def take(self, params, ctx):
                text = ((ctx.cwd or ctx.out_dir) / params.path).read_text().strip()
                out = ctx.out_dir / f"{params.name}.txt"
                out.write_text(text)
                return [out]
        ''',
    "validators.py": '''
        from referee.validators import Outcome, ValidatorKind, ValidatorParams


        class NumberIsEven(ValidatorKind):
            summary = "the number in an evidence file is even"

            class Params(ValidatorParams):
                evidence: str

            def check(self, params, ev, index):
                n = int(ev.read_text(params.evidence).strip())
                return Outcome.hold(f"{n} is even") if n % 2 == 0 else Outcome.fail(f"{n} is odd")
        ''',
    # an OCR engine that "reads" a fixed line from any image
    "ocr.py": '''
        from referee.ocr import OcrEngine, OcrLine


        class FixedEngine(OcrEngine):
            def read(self, img):
                return [OcrLine("hello from the plugin engine", 0.99, (0, 0, img.width, img.height))]
        ''',
    # an extractor backend given as a class: built with no config
    "extractors.py": '''
        from dataclasses import dataclass

        from referee.audit.records import FINDING_FIELDS, Finding


        @dataclass(frozen=True)
        class Sceptic:
            name: str = "sceptic"
            model: str | None = None
            prompt_version: str = "1"

            def extract(self, view, sample=0):
                return {f: Finding(value="no", support=[0], note="plugin") for f in FINDING_FIELDS}
        ''',
    # claim readers: one given as a factory function, one that declares it needs an LLM client
    "claims.py": '''
        from dataclasses import dataclass
        from typing import Any

        from referee.audit.records import ClaimReading


        @dataclass(frozen=True)
        class Believer:
            name: str = "believer"
            model: str | None = None
            prompt_version: str = "1"

            def read(self, report):
                return ClaimReading(label="success", votes=["success"], backend=self.name, cue="believes anything")


        def make_believer():
            return Believer()


        @dataclass
        class ModelNamer:
            needs_llm = True
            client: Any
            name: str = "model-namer"
            prompt_version: str = "1"

            @property
            def model(self):
                return self.client.config.model

            def read(self, report):  # never calls the endpoint: it only shows the client it was given
                return ClaimReading(label="unclear", votes=["unclear"], backend=self.name,
                                    cue=f"client for {self.client.config.model}")
        ''',
    # a trace reader for a line format: RUN / TASK / DO / SEE / SAY
    "readers.py": '''
        import json

        from referee.audit.trace import TraceItem, parse_trace


        def read_lines(path):
            file = str(path)
            run = None

            def done(run):
                return TraceItem(file=file, line=run["line"], run_id=run["run_id"],
                                 trace=parse_trace({k: v for k, v in run.items() if k != "line"},
                                                   file=file, line=run["line"]))

            for no, raw in enumerate(open(path, encoding="utf-8"), 1):
                word, _, rest = raw.strip().partition(" ")
                if word == "RUN":
                    if run:
                        yield done(run)
                    run = {"run_id": rest, "task": "", "steps": [], "report": None, "line": no}
                elif word == "TASK":
                    run["task"] = rest
                elif word == "DO":
                    name, _, args = rest.partition(" ")
                    run["steps"].append({"action": {"name": name, "args": json.loads(args or "{}")}})
                elif word == "SEE":
                    run["steps"][-1]["observation"] = {"text": rest}
                elif word == "SAY":
                    run["report"] = rest
            if run:
                yield done(run)
        ''',
}

ENTRY_POINTS = f"""
[referee.validators]
number_is_even = {PKG}.validators:NumberIsEven

[referee.captures]
state_file = {PKG}.captures:StateFile

[referee.ocr_engines]
fixed = {PKG}.ocr:FixedEngine

[referee.extractors]
sceptic = {PKG}.extractors:Sceptic

[referee.claim_readers]
believer = {PKG}.claims:make_believer
model-namer = {PKG}.claims:ModelNamer

[referee.readers]
linetrace = {PKG}.readers:read_lines
"""


def make_site(root: Path, entry_points: str = ENTRY_POINTS, name: str = "referee_kinds_demo") -> Path:
    """A site folder holding the plugin package and its dist-info, as `pip install` would leave them."""
    site = root / "site"
    pkg = site / PKG
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    for mod, src in MODULES.items():
        (pkg / mod).write_text(textwrap.dedent(src))
    dist = site / f"{name}-0.1.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(entry_points)
    return site


def env_with(site: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return make_site(tmp_path_factory.mktemp("plugins"))


# ============================================================ runner: capture, validator and OCR engine plugins

AGENT = textwrap.dedent("""
    import os
    from PIL import Image

    n = {"four": "4", "three": "3"}[os.environ["REFEREE_STEP_ID"]]
    open("state.txt", "w").write(n)  # the "app" state the runner's capture reads
    Image.new("RGB", (40, 20), "white").save(os.path.join(os.environ["REFEREE_AGENT_DIR"], "shot.png"))
""")

PLAN = textwrap.dedent("""
    steps:
      - id: four
        do: set the number to 4
        capture: [{kind: state_file, name: state, path: state.txt}]
        validators:
          - {kind: number_is_even, evidence: state}
          - {kind: ocr_contains, evidence: shot.png, text: plugin engine, engine: fixed}
      - id: three
        do: set the number to 3
        capture: [{kind: state_file, name: state, path: state.txt}]
        validators:
          - {kind: number_is_even, evidence: state}
""")


def _verdicts(out: str) -> dict[str, tuple[str, str]]:
    return {s["id"]: (s["verdict"], s["reason"]) for s in json.loads(out)["runs"][0]["steps"]}


def _reasons(out: str) -> dict[str, list[str]]:
    return {s["id"]: [v["reason"] for v in s["validators"]] for s in json.loads(out)["runs"][0]["steps"]}


def test_plugin_capture_validator_and_ocr_engine_run_and_regrade(tmp_path, site):
    env = env_with(site)
    rc, out, err = run_cli(["kinds", "--json"], cwd=tmp_path, env=env)
    assert rc == 0, err
    kinds = json.loads(out)
    assert kinds["captures"]["state_file"]["summary"].startswith("the number an app keeps")
    assert "path" in kinds["captures"]["state_file"]["params"]
    assert "number_is_even" in kinds["validators"]

    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "plan.yaml").write_text(PLAN)
    rc, out, err = run_cli(["run", "plan.yaml", "--agent", f"{sys.executable} agent.py", "--out", "runs", "--json"],
                           cwd=tmp_path, env=env)
    assert rc == 1, err
    verdicts = _verdicts(out)
    assert verdicts["four"][0] == "PASS", verdicts
    assert any("plugin engine" in r for r in _reasons(out)["four"]), _reasons(out)
    assert verdicts["three"] == ("FAIL", "number_is_even#0: 3 is odd")
    run_dir = Path(json.loads(out)["runs"][0]["run_dir"])
    if not run_dir.is_absolute():
        run_dir = tmp_path / run_dir
    assert (run_dir / "evidence" / "four" / "after" / "state.txt").read_text() == "4"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    files = manifest["files"] if isinstance(manifest, dict) and "files" in manifest else manifest
    assert any(f.get("kind") == "state_file" and f.get("captured_by") == "runner" for f in files), files

    # the grader reads the persisted evidence: the same verdicts, with the app state gone
    (tmp_path / "state.txt").unlink()
    rc, out, err = run_cli(["grade", str(run_dir), "--json"], cwd=tmp_path, env=env)
    assert rc == 1, err
    assert _verdicts(out) == verdicts
    assert any("plugin engine" in r for r in _reasons(out)["four"])


def test_without_the_plugins_the_kinds_are_unknown_with_a_hint(tmp_path):
    (tmp_path / "plan.yaml").write_text(
        "steps:\n  - id: a\n    do: x\n    capture: [{kind: state_fil, name: s, path: x}]\n    validators: []\n")
    rc, out, err = run_cli(["check", "plan.yaml"], cwd=tmp_path)
    assert rc == 2 and "unknown capture kind 'state_fil'" in err and "known capture kinds:" in err
    assert "state_file" not in err


def test_a_misspelled_plugin_capture_gets_did_you_mean(tmp_path, site):
    (tmp_path / "plan.yaml").write_text(
        "steps:\n  - id: a\n    do: x\n    capture: [{kind: state_fil, name: s, path: x}]\n    validators: []\n")
    rc, out, err = run_cli(["check", "plan.yaml"], cwd=tmp_path, env=env_with(site))
    assert rc == 2 and "did you mean 'state_file'?" in err, err


# ============================================================ auditor: extractor, claim reader and trace reader plugins

LINETRACE = textwrap.dedent("""
    RUN lt-1
    TASK Delete note N42
    DO delete_note {"id": "N42"}
    SEE deleted N42
    SAY Deleted N42.
    RUN lt-2
    TASK Delete note N43
    DO delete_note {"id": "N43"}
    SEE error: note N43 is locked
    SAY I could not delete N43: it is locked.
""").lstrip()


def _audit(tmp_path, env, *args, name="a"):
    out = tmp_path / f"{name}.jsonl"
    rc, stdout, err = run_cli(["audit", *args, "--out", out, "--no-progress"], cwd=tmp_path, env=env)
    return rc, err, [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []


def test_plugin_trace_reader_extractor_and_claim_reader_in_one_audit(tmp_path, site):
    src = tmp_path / "runs.lines"
    src.write_text(LINETRACE)
    env = env_with(site)
    rc, err, recs = _audit(tmp_path, env, src, "--format", "linetrace")
    assert rc == 0, err
    assert [r["run_id"] for r in recs] == ["lt-1", "lt-2"]
    by = {r["run_id"]: r for r in recs}
    assert by["lt-1"]["claim"]["label"] == "success" and by["lt-1"]["backend"]["name"] == "rules"
    assert by["lt-2"]["claim"]["label"] == "failure_or_incomplete"

    rc, err, recs = _audit(tmp_path, env, src, "--format", "linetrace", "--backend", "sceptic",
                           "--claims", "believer", name="b")
    assert rc == 0, err
    assert all(r["backend"]["name"] == "sceptic" for r in recs)
    assert all(r["claim"]["label"] == "success" and r["claim"]["cue"] == "believes anything" for r in recs)
    assert all(r["trace_state"] == "not_completed" and r["disposition"] == "flag" for r in recs)


def test_a_claim_reader_plugin_that_needs_llm_gets_the_client(tmp_path, site):
    src = tmp_path / "runs.lines"
    src.write_text(LINETRACE)
    env = dict(env_with(site), OPENAI_API_KEY="test-key")
    env.pop("OPENAI_BASE_URL", None)
    rc, err, recs = _audit(tmp_path, env, src, "--format", "linetrace", "--claims", "model-namer")
    assert rc == 2 and "no model endpoint given" in err, err  # it needs a client, so an endpoint
    rc, err, recs = _audit(tmp_path, env, src, "--format", "linetrace", "--claims", "model-namer",
                           "--base-url", "http://127.0.0.1:9/v1", "--model", "tiny-model", name="c")
    assert rc == 0, err
    assert {r["claim"]["cue"] for r in recs} == {"client for tiny-model"}
    assert all(r["claim"]["backend"] == "model-namer" for r in recs)
    assert all(r["backend"]["runs"] == 1 for r in recs)  # the rules extractor: one run, llm client or not


def test_tools_with_a_plugin_extractor_that_does_not_take_them(tmp_path, site):
    src = tmp_path / "runs.lines"
    src.write_text(LINETRACE)
    tools = tmp_path / "tools.yaml"
    tools.write_text("tools_version: 1\ntools:\n  - {name: delete_note, kind: delete, target: id}\n")
    rc, err, _ = _audit(tmp_path, env_with(site), src, "--format", "linetrace", "--backend", "sceptic",
                        "--tools", tools)
    assert rc == 2
    assert "--tools is read by the rules and rules+llm backends; the 'sceptic' backend does not use it" in err


@pytest.mark.parametrize("option, bad, what, near", [
    ("--format", "linetrac", "trace format", "linetrace"),
    ("--backend", "sceptik", "extractor backend", "sceptic"),
    ("--claims", "believr", "claim reader backend", "believer"),
])
def test_unknown_plugin_names_list_the_known_ones(tmp_path, site, option, bad, what, near):
    src = tmp_path / "runs.lines"
    src.write_text(LINETRACE)
    rc, err, _ = _audit(tmp_path, env_with(site), src, *(["--format", "linetrace"] if option != "--format" else []),
                        option, bad)
    assert rc == 2, err
    assert f"unknown {what} '{bad}'" in err and f"did you mean '{near}'?" in err and near in err.split("known")[-1]
    assert "Traceback" not in err


def test_without_the_plugins_the_backends_are_unknown(tmp_path):
    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps({"run_id": "r", "task": "t", "steps": []}) + "\n")
    for option, name, what in (("--backend", "sceptic", "extractor backend"),
                               ("--claims", "believer", "claim reader backend"),
                               ("--format", "linetrace", "trace format")):
        rc, err, _ = _audit(tmp_path, dict(os.environ), src, option, name, name=name)
        assert rc == 2 and f"unknown {what} '{name}'" in err, err


def test_an_entry_point_that_gives_the_wrong_thing_is_one_line_exit_2(tmp_path):
    site = make_site(tmp_path, "[referee.captures]\nbroken = referee_kinds_demo.validators:NumberIsEven\n",
                     name="referee_broken_demo")
    rc, out, err = run_cli(["kinds"], cwd=tmp_path, env=env_with(site))
    assert rc == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "entry point referee.captures:broken" in err and "referee-broken-demo" in err
    assert "NumberIsEven" in err and re.search(r"not an? .*capture ?kind", err, re.I), err


# ============================================================ the contract itself, in process


class Kind:
    kind = ""


def test_one_adapt_for_built_ins_and_entry_points():
    reg = Registry("thing", item=Kind, name_attr="kind")

    class A(Kind):
        pass

    reg.add("a", A)  # a class: instantiated once, named
    reg.add("b", lambda: A())  # a factory with no arguments
    inst = A()
    reg.add("c", inst)  # an instance: kept
    assert isinstance(reg.get("a"), A) and reg.get("a").kind == "a"
    assert isinstance(reg.get("b"), A) and reg.get("c") is inst
    with pytest.raises(PluginError, match="not an instance of"):
        reg.add("d", 42)
    with pytest.raises(PluginError, match="gave str"):
        reg.add("e", lambda: "x")

    def needs_arg(x):
        return A()

    with pytest.raises(PluginError, match="with no arguments failed"):
        reg.add("f", needs_arg)


def test_registries_of_factories_functions_and_classes():
    factories = Registry("backend", item=FACTORY)

    class Backend:
        def __init__(self, *, client=None):
            self.client = client

    factories.add("x", Backend)
    assert factories.get("x") is Backend  # factories are kept, not called
    assert factories.create("x", client="c").client == "c"
    with pytest.raises(PluginError, match="cannot be called with tools="):
        factories.create("x", tools="t")

    readers = Registry("reader", item=FUNCTION)

    def read(path):
        return iter(())

    class ReadCls:
        def __call__(self, path):
            return iter(())

    readers.add("fn", read)
    readers.add("cls", ReadCls)
    assert readers.get("fn") is read and isinstance(readers.get("cls"), ReadCls)

    class Base:
        pass

    class Sub(Base):
        pass

    classes = Registry("actor", item=subclass_of(Base))
    classes.add("sub", Sub)
    assert classes.get("sub") is Sub


def test_every_pluggable_registry_declares_its_items_and_group():
    from referee.audit.claim.reader import claim_readers
    from referee.audit.extract import extractors
    from referee.audit.ingest.readers import trace_readers
    from referee.ocr import engines
    from referee.runner.captures import captures
    from referee.validators import validators

    groups = {r.what: r.entry_point_group for r in (validators, captures, engines, extractors, claim_readers,
                                                     trace_readers)}
    assert groups == {"validator kind": "referee.validators", "capture kind": "referee.captures",
                      "OCR engine": "referee.ocr_engines", "extractor backend": "referee.extractors",
                      "claim reader backend": "referee.claim_readers", "trace format": "referee.readers"}
    for reg in (validators, captures, engines, extractors, claim_readers, trace_readers):
        assert reg.item is not None, reg.what


def test_backends_are_built_from_declarations():
    from referee.audit.run.backends import make_backends

    made = []

    class Client:
        class config:
            model = "m"

        def close(self):
            made.append("closed")

    def llm_client():
        made.append("client")
        return Client()

    b = make_backends("rules", "rules", llm_client=llm_client)
    assert made == [] and b.client is None and b.default_runs == 1
    b = make_backends("llm", "llm", llm_client=llm_client)
    assert made == ["client"]  # one client, shared
    assert b.extractor.client is b.claim_reader.client is b.client
    assert b.default_runs == 5
    b.close()
    assert made == ["client", "closed"]
    with pytest.raises(UsageError, match=r"--tools is read by the rules and rules\+llm backends; the 'llm' backend "):
        make_backends("llm", "rules", llm_client=llm_client, tools=Path("tools.yaml"))
