"""Blind acceptance tests for issue 30: traces written against the auditor.

Written from the docs alone (docs/auditor.md, docs/scale.md "A budget per record",
docs/security-inputs.md "Pickles, labels, and one record's cost", docs/evaluation.md), without
reading src/ or the other tests. The agent writes everything the auditor reads, so each test plays
a hostile agent and runs the real CLI (in the test's process, tests.support.incli, or as a subprocess
where its memory is measured), always under a timeout: a timeout is a finding, never a hang of the
suite. Outcomes are asserted, never times; where the linearity of a pattern is checked, it is through
an outcome (the record needed the per-record budget).
"""

from __future__ import annotations

import gzip
import json
import pickle
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FORCE_PROCESS
from tests.support.incli import completed

REFEREE = Path(sys.executable).with_name("referee")
TIMEOUT_S = 60
POLICIES = ["causal", "final-state", "low-load", "unanimous", "strict"]
ONE_GIB_KIB = 1 << 20  # ru_maxrss is in KiB on Linux


# ---------------------------------------------------------------- helpers


def _referee_cmd() -> list[str]:
    if REFEREE.exists():
        return [str(REFEREE)]
    found = shutil.which("referee")
    assert found, "the referee console script is not installed"
    return [found]


def run_cli(*args: str, cwd: Path, timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess:
    """`referee ARGS` in this process (tests.support.incli); pytest-timeout ends one that runs past its time."""
    if not FORCE_PROCESS:
        return completed(args, cwd=cwd)
    cmd = _referee_cmd() + [str(a) for a in args]
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"finding: `referee {' '.join(map(str, args))[:200]}` ran past {timeout} s")


_RSS_WRAPPER = (
    "import resource, subprocess, sys, json\n"
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "print(json.dumps({'rc': p.returncode, 'stdout': p.stdout, 'stderr': p.stderr,\n"
    "  'maxrss_kib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))\n"
)


def run_cli_measured(*args: str, cwd: Path, timeout: float = TIMEOUT_S) -> dict:
    """Run the CLI from a wrapper process that reports its child's max RSS."""
    cmd = [sys.executable, "-c", _RSS_WRAPPER, *_referee_cmd(), *map(str, args)]
    try:
        out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"finding: `referee {' '.join(map(str, args))[:200]}` ran past {timeout} s")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def read_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec) + "\n")
    return path


def assert_no_crash(proc_stderr: str) -> None:
    assert "Traceback" not in proc_stderr, proc_stderr[-2000:]
    assert "internal error" not in proc_stderr, proc_stderr[-2000:]


def assert_one_line_error(rc: int, stderr: str, *needles: str) -> None:
    assert_no_crash(stderr)
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert rc == 2, (rc, stderr[-2000:])
    assert len(lines) == 1, stderr[-2000:]
    assert lines[0].startswith("referee: error:"), lines[0][:500]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0][:500])


def trace(rid: str, *, task: str = "Update the price of item 42 in the shop database",
          steps: list | None = None, report: str = "Done - the price of item 42 is updated.") -> dict:
    return {
        "trace_version": 1,
        "run_id": rid,
        "task": task,
        "steps": steps if steps is not None else [
            {"action": {"name": "update_item", "args": {"id": 42, "price": 4}},
             "observation": {"text": "item 42 updated: price 4"}}],
        "report": report,
    }


def step(name: str, args: dict, obs: str = "ok", *, error: bool = False, narration: str | None = None) -> dict:
    o: dict = {"text": obs}
    if error:
        o["error"] = True
    s: dict = {"action": {"name": name, "args": args}, "observation": o}
    if narration is not None:
        s["narration"] = narration
    return s


# ---------------------------------------------------------------- 1. ReDoS and quadratic patterns

# The issue's exact inputs, each between two benign runs.
ISSUE_INPUTS = {
    "sql-comment-group": dict(steps=[step("sql", {"query": "/* */" * 32 + " zzz"})]),
    "sql-write-newline-observation": dict(steps=[
        step("sql", {"query": "UPDATE items SET price = 4 WHERE id = 42"}, "\n" * 100_000 + "x")]),
    "shell-newlines-appendx": dict(steps=[step("bash", {"command": "\n" * 100_000 + "appendx"})]),
    "write-file-slashes": dict(steps=[step("write_file", {"path": "/" * 100_000 + "!", "content": "x"})]),
    "open-paren-comma": dict(steps=[step("bash", {"command": "open(," * 20_000})]),
    "report-fence-and-a": dict(report="```" + "a" * 100_000),
}

_cache: dict[str, tuple[subprocess.CompletedProcess, list[dict], list[str]]] = {}


def _audit_once(key: str, tmp_path_factory, build, *extra: str, timeout: float = TIMEOUT_S):
    """Audit a file once per key (several tests read the same outcome)."""
    if key not in _cache:
        d = tmp_path_factory.mktemp("hostile")
        runs = build()
        src = write_jsonl(d / "traces.jsonl", runs)
        out = d / "audit.jsonl"
        proc = run_cli("audit", src, "--out", out, "--workers", "1", "--no-progress", *extra, cwd=d, timeout=timeout)
        recs = read_records(out) if out.exists() else []
        _cache[key] = (proc, recs, [r["run_id"] for r in runs])
    return _cache[key]


@pytest.mark.parametrize("case", sorted(ISSUE_INPUTS))
def test_an_issue_input_is_audited_and_the_runs_after_it_too(case, tmp_path_factory):
    def build():
        return [trace("before"), trace("hostile", **ISSUE_INPUTS[case]), trace("after")]

    proc, recs, ids = _audit_once("issue:" + case, tmp_path_factory, build)
    assert_no_crash(proc.stderr)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [r["run_id"] for r in recs] == ids
    # linear matching: the issue's inputs never need the per-record budget (default 10 s of CPU)
    assert [r["run_id"] for r in recs if r.get("over_budget")] == []


# Own variants: 200 KB runs of a unit, placed in every field an agent writes.
N_CHARS = 200_000
UNITS = {
    "spaces": " ", "tabs": "\t", "crlf": "\r\n", "nbsp": "\u00a0", "ws-mix": " \t\r\n\f\v",
    "comma": ", ", "semicolon": "; ", "lparen": "(", "lbracket": "[", "nested": "(a[b{", "dquote": '"',
    "squote": "'", "mixed-quotes": "'a\" ", "word": "delete ", "comment": "/* */", "newline": "\n",
    "slash": "/", "open-comma": "open(,", "fence": "```", "redirect": "> ", "sed-i": "sed -i ",
    "digits": "1 ", "item-id": "item 42 ", "nothing-failed": "nothing failed ", "backslash": "\\",
}
# A 200 KB whitespace *task* took over 10 s of CPU (quadratic: 50k 1 s, 100k 4 s, 200k 16 s) until
# bb2ebcc ("URL hosts and question sentences are matched in linear time"); found by the test below.


def _payload(unit: str) -> str:
    return (unit * (N_CHARS // len(unit) + 1))[:N_CHARS] + "x"


def _variant_runs(unit: str) -> list[dict]:
    p = _payload(unit)
    return [
        trace("benign-0"),
        trace("task", task=p),
        trace("task-after-verb", task="Delete the file " + p),
        trace("report", report=p),
        trace("report-around", report="Done - the price is updated. " + p + " Nothing failed."),
        trace("shell", steps=[step("bash", {"command": p})]),
        trace("shell-redirect", steps=[step("bash", {"command": "echo " + p + " > out.txt"})]),
        trace("sql", steps=[step("sql", {"query": p})]),
        trace("sql-write", steps=[step("sql", {"query": "UPDATE items SET price = 4 WHERE id = 42 " + p}, p)]),
        trace("path", steps=[step("write_file", {"path": p, "content": p})]),
        trace("http", steps=[step("http", {"method": "POST", "url": "/api/items/" + p})]),
        trace("browser", steps=[step("browser", {"action": "click('" + p + "')"}), step(p, {})]),
        trace("observation", steps=[step("update_item", {"id": 42, "price": 4}, p)]),
        trace("error-observation", steps=[step("update_item", {"id": 42, "price": 4}, p, error=True)]),
        trace("data-ui", steps=[{"action": {"name": "update_item", "args": {"id": 42}},
                                 "observation": {"text": "", "data": {"k": p}, "ui": {"e": [p]}}}]),
        trace("narration", steps=[step("update_item", {"id": 42, "price": 4}, "updated", narration=p)]),
        trace("benign-1"),
    ]


@pytest.mark.parametrize("unit", sorted(UNITS))
def test_a_200k_run_in_any_agent_field_gives_a_record_for_every_run(unit, tmp_path_factory):
    proc, recs, ids = _audit_once("var:" + unit, tmp_path_factory, lambda: _variant_runs(UNITS[unit]),
                                  timeout=120)
    assert_no_crash(proc.stderr)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [r["run_id"] for r in recs] == ids


@pytest.mark.parametrize("unit", sorted(UNITS))
def test_no_200k_field_needs_the_record_budget(unit, tmp_path_factory):
    proc, recs, ids = _audit_once("var:" + unit, tmp_path_factory, lambda: _variant_runs(UNITS[unit]),
                                  timeout=120)
    assert [r["run_id"] for r in recs] == ids
    assert [(r["run_id"], r["over_budget"]) for r in recs if r.get("over_budget")] == []


def _chat(rid: str, last: str, *, user: str = "Update the price of item 42 to 4", name: str = "update_item",
          arguments: str = '{"id": 42}', tool: str = "item 42 updated") -> dict:
    return {"run_id": rid, "messages": [
        {"role": "user", "content": user},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": "c1", "content": tool},
        {"role": "assistant", "content": "The price of item 42 is now 4."},
        {"role": "assistant", "content": last}]}


def _mini(rid: str, block: str, *, out: str = "ok",
          last: str = "THOUGHT: done\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```") -> dict:
    return {"instance_id": rid, "info": {"exit_status": "Submitted"}, "messages": [
        {"role": "system", "content": "You are a helpful assistant"},
        {"role": "user", "content": "<pr_description>Fix the crash in parse()</pr_description>"},
        {"role": "assistant", "content": "THOUGHT: edit\n```bash\n" + block + "\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\n" + out + "\n</output>"},
        {"role": "assistant", "content": last}]}


def _swe(action: str, obs: str = "ok") -> dict:
    return {"trajectory": [{"action": action, "observation": obs, "thought": "t", "response": "r"},
                           {"action": "submit", "observation": "submitted", "thought": "done", "response": "submit"}],
            "history": [{"role": "user", "content": "ISSUE:\nFix the crash in parse()\n"}],
            "info": {"exit_status": "submitted"}}


FORMAT_UNITS = ["spaces", "newline", "fence", "open-comma", "comment", "semicolon", "courtesy", "bash-fence"]
_FORMAT_UNIT_TEXT = {**UNITS, "courtesy": "You're welcome! Thank you! ", "bash-fence": "```bash\n"}


@pytest.mark.parametrize("unit", FORMAT_UNITS)
def test_openai_chat_mini_swe_and_swe_agent_readers_survive_a_200k_run(unit, tmp_path):
    p = _payload(_FORMAT_UNIT_TEXT[unit])
    chat = write_jsonl(tmp_path / "chat.jsonl", [
        _chat("b0", "Thanks!"), _chat("last", p), _chat("courtesy", "You're welcome! " + p),
        _chat("user", "Done.", user=p), _chat("cmd", "Done.", name="bash", arguments=json.dumps({"command": p})),
        _chat("tool", "Done.", tool=p), _chat("b1", "Done.")])
    mini = write_jsonl(tmp_path / "mini.jsonl", [
        _mini("b0", "ls"), _mini("block", p), _mini("out", "sed -i s/a/b/ x.py", out=p), _mini("last", "ls", last=p),
        _mini("b1", "ls")])
    swe = tmp_path / "swe"
    swe.mkdir()
    for name, tr in [("a", _swe("ls")), ("b", _swe(p)), ("c", _swe("\n" * 1000 + p + "\nappendx")),
                     ("d", _swe("python reproduce.py", p)), ("e", _swe("ls"))]:
        (swe / f"{name}.traj").write_text(json.dumps(tr), encoding="utf-8")
    for src, n in [(chat, 7), (mini, 5), (swe, 5)]:
        out = tmp_path / (src.name + ".audit.jsonl")
        proc = run_cli("audit", src, "--out", out, "--workers", "1", "--no-progress", cwd=tmp_path)
        assert_no_crash(proc.stderr)
        assert proc.returncode == 0, (src.name, proc.stderr[-2000:])
        recs = read_records(out)
        assert len(recs) == n, (src.name, [r["run_id"] for r in recs])
        assert [r["run_id"] for r in recs if r.get("over_budget")] == [], src.name


# ---------------------------------------------------------------- 2. the per-record budget


# The CPU budget the budget tests give: a trivial record's audit takes about a tenth of it (the first one of a
# process included), the slow record's about eight times it (each measured here in CPU seconds, so a busy machine
# changes neither ratio).
CPU_BUDGET = "0.25"


def _slow_record() -> dict:
    # legitimately costly: 4,000 steps (about 2 s of CPU), far over CPU_BUDGET
    steps = [step("update_item", {"id": i, "price": 4}, f"item {i} updated: price 4") for i in range(4_000)]
    return trace("big", steps=steps)


def _budget_records(out: Path) -> dict[str, list[dict]]:
    by_id: dict[str, list[dict]] = {}
    for r in read_records(out):
        by_id.setdefault(r["run_id"], []).append(r)
    return by_id


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_record_over_the_cpu_budget_is_review_the_audit_goes_on_and_a_resume_leaves_it(workers, tmp_path):
    src = write_jsonl(tmp_path / "t.jsonl", [trace("b0"), _slow_record(), trace("b1")])
    out = tmp_path / "audit.jsonl"
    args = ("audit", src, "--out", out, "--workers", workers, "--no-progress", "--record-cpu-s", CPU_BUDGET)
    proc = run_cli(*args, cwd=tmp_path)
    assert_no_crash(proc.stderr)
    assert proc.returncode == 0, proc.stderr[-2000:]
    by_id = _budget_records(out)
    assert list(by_id) == ["b0", "big", "b1"]
    big = by_id["big"][0]
    assert big["disposition"] == "review"
    assert big["over_budget"]["limit"] == "cpu"
    assert any("record budget" in e and "--record-cpu-s" in e for e in big["errors"]), big["errors"]
    assert not by_id["b0"][0].get("over_budget") and not by_id["b1"][0].get("over_budget")

    # resume: the same command adds nothing, and says why (not silently)
    again = run_cli(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert len(read_records(out)) == 3
    said = again.stdout + again.stderr
    assert "big" in said and "record budget" in said, said[-2000:]

    # a larger budget audits it again; the new record supersedes the old
    raised = run_cli("audit", src, "--out", out, "--workers", workers, "--no-progress", "--record-cpu-s", "1000",
                     "--record-wall-s", "1000", cwd=tmp_path, timeout=120)
    assert raised.returncode == 0, raised.stderr[-2000:]
    by_id = _budget_records(out)
    assert len(by_id["big"]) == 2 and not by_id["big"][-1].get("over_budget")


def test_over_budget_records_on_the_default_pool_cost_only_themselves(tmp_path):
    runs = [trace(f"r{i:03d}") for i in range(300)]
    runs[120] = dict(_slow_record(), run_id="r120")
    runs[250] = dict(_slow_record(), run_id="r250")
    src = write_jsonl(tmp_path / "t.jsonl", runs)
    out = tmp_path / "audit.jsonl"
    proc = run_cli("audit", src, "--out", out, "--no-progress", "--record-cpu-s", CPU_BUDGET, "--chunk-size", "20",
                   cwd=tmp_path, timeout=180)
    assert_no_crash(proc.stderr)
    assert proc.returncode == 0, proc.stderr[-2000:]
    recs = read_records(out)
    assert sorted(r["run_id"] for r in recs) == [r["run_id"] for r in runs]
    assert sorted(r["run_id"] for r in recs if r.get("over_budget")) == ["r120", "r250"]


def test_an_over_budget_record_whose_trace_changed_is_audited_again(tmp_path):
    # docs/scale.md: "A trace that changed since is audited again as any stale record is."
    slow = _slow_record()
    src = write_jsonl(tmp_path / "t.jsonl", [trace("b0"), slow])
    out = tmp_path / "audit.jsonl"
    args = ("audit", src, "--out", out, "--workers", "1", "--no-progress", "--record-cpu-s", CPU_BUDGET)
    assert run_cli(*args, cwd=tmp_path).returncode == 0
    assert read_records(out)[-1]["over_budget"]["limit"] == "cpu"
    slow["report"] = "Done - all prices are updated."
    write_jsonl(src, [trace("b0"), slow])
    proc = run_cli(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    by_id = _budget_records(out)
    assert len(by_id["b0"]) == 1 and len(by_id["big"]) == 2


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_record_over_the_memory_budget_is_review_naming_the_memory_budget(workers, tmp_path):
    # a 10 MB observation: its audit grows the process by over 128 MiB, eight times the smallest budget
    big = trace("mem", steps=[step("update_item", {"id": 42, "price": 4}, "item 42 updated " + "word " * 2_000_000)])
    src = write_jsonl(tmp_path / "t.jsonl", [trace("b0"), big, trace("b1")])
    out = tmp_path / "audit.jsonl"
    proc = run_cli("audit", src, "--out", out, "--workers", workers, "--no-progress", "--record-memory-mib", "16",
                   cwd=tmp_path)
    assert_no_crash(proc.stderr)
    assert proc.returncode == 0, proc.stderr[-2000:]
    by_id = _budget_records(out)
    assert list(by_id) == ["b0", "mem", "b1"]
    rec = by_id["mem"][0]
    assert rec["disposition"] == "review" and rec["over_budget"]["limit"] == "memory"
    assert any("--record-memory-mib" in e for e in rec["errors"]), rec["errors"]


def test_a_record_over_the_wall_budget_is_review_naming_the_wall_budget(tmp_path):
    src = write_jsonl(tmp_path / "t.jsonl", [trace("b0"), _slow_record(), trace("b1")])
    out = tmp_path / "audit.jsonl"
    # the slow record takes seconds of CPU, so far more wall time than this (b0 and b1 are not asserted on)
    proc = run_cli("audit", src, "--out", out, "--workers", "1", "--no-progress", "--record-wall-s", "0.3",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    by_id = _budget_records(out)
    assert list(by_id) == ["b0", "big", "b1"]
    rec = by_id["big"][0]
    assert rec["disposition"] == "review" and rec["over_budget"]["limit"] in {"wall", "cpu"}
    assert any("record budget" in e for e in rec["errors"]), rec["errors"]


def test_the_summary_does_not_promise_a_retry_of_an_over_budget_record(tmp_path):
    src = write_jsonl(tmp_path / "t.jsonl", [trace("b0"), _slow_record()])
    out = tmp_path / "audit.jsonl"
    proc = run_cli("audit", src, "--out", out, "--workers", "1", "--no-progress", "--record-cpu-s", CPU_BUDGET,
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert read_records(out)[-1].get("over_budget")
    assert "run the same command again to ask again" not in proc.stdout + proc.stderr


# ---------------------------------------------------------------- 3. pickles


class _StepInfo:
    """Stands in for browsergym.experiments.loop.StepInfo; its global name is rewritten in the bytes."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


class _Call:
    """Pickles as `fn(*args)`: what a hostile pickle asks the unpickler to build."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def _step_pickle(n: int, obs: dict, action: str | None, protocol: int = 2) -> bytes:
    # protocols 2 and 3 write globals as text (GLOBAL) and no frames, so names can be rewritten
    si = _StepInfo(step=n, obs=obs, reward=0.0, raw_reward=0.0, terminated=False, truncated=False,
                   action=action, agent_info={}, stats={}, profiling=None, task_info=None)
    raw = pickle.dumps(si, protocol=protocol, fix_imports=False)
    old = f"c{_StepInfo.__module__}\n_StepInfo\n".encode()
    assert old in raw
    return raw.replace(old, b"cbrowsergym.experiments.loop\nStepInfo\n")


def _obs(text: str, extra: dict | None = None) -> dict:
    o = {"goal_object": [{"type": "text", "text": "Add oat milk to the shopping list"}], "last_action_error": "",
         "axtree_txt": text, "url": "http://shop.test/list", "chat_messages": []}
    o.update(extra or {})
    return o


def _experiment(d: Path, step1_gz: bytes | None = None, bomb=None) -> Path:
    d.mkdir(parents=True)
    (d / "summary_info.json").write_text(json.dumps(
        {"n_steps": 2, "cum_reward": 0.0, "terminated": True, "truncated": False, "err_msg": None}))
    first = _step_pickle(0, _obs("[a1] textbox 'Item'"), "fill('a1', 'oat milk')")
    (d / "step_0.pkl.gz").write_bytes(gzip.compress(first))
    if step1_gz is None:
        extra = {"x": bomb} if bomb is not None else None
        step1_gz = gzip.compress(_step_pickle(
            1, _obs("[a2] button 'Add'", extra), "send_msg_to_user('Done: oat milk is on the list.')"))
    (d / "step_1.pkl.gz").write_bytes(step1_gz)
    (d / "step_2.pkl.gz").write_bytes(gzip.compress(_step_pickle(2, _obs("oat milk"), None)))
    return d


def _gzip_bomb(gib: float = 1.5) -> bytes:
    # a BINBYTES8 of `gib` GiB of zeros, as concatenated gzip members (1.6 MB on disk)
    n = int(gib * 1024)
    mb = gzip.compress(b"\0" * (1 << 20), 9)
    return gzip.compress(b"\x80\x04\x8e" + struct.pack("<Q", n << 20)) + mb * n + gzip.compress(b".")


def _shared_lists_60_deep() -> bytes:
    x: list = []
    for _ in range(60):
        x = [x, x]
    return pickle.dumps({"obs": x}, protocol=4)


def _header_only(opcodes: bytes) -> bytes:
    # a counted bytes/bytearray opcode that declares 3 GiB and carries 3 bytes
    return opcodes + struct.pack("<Q", 3 << 30) + b"abc."


PICKLES = {
    "bytearray-3GiB": lambda d: _experiment(d, bomb=_Call(bytearray, 3 << 30)),
    "bytearray-2**62": lambda d: _experiment(d, bomb=_Call(bytearray, 1 << 62)),
    "bytes-2**62": lambda d: _experiment(d, bomb=_Call(bytes, 1 << 62)),
    "BYTEARRAY8-3GiB-header": lambda d: _experiment(d, gzip.compress(_header_only(b"\x80\x05\x96"))),
    "BINBYTES8-3GiB-header": lambda d: _experiment(d, gzip.compress(_header_only(b"\x80\x04\x8e"))),
    "gzip-bomb-1.5GiB": lambda d: _experiment(d, _gzip_bomb()),
    "shared-lists-60-deep": lambda d: _experiment(d, gzip.compress(_shared_lists_60_deep())),
    "lists-500-deep": lambda d: _experiment(d, gzip.compress(b"\x80\x02" + b"(" * 500 + b"]" + b"l" * 500 + b".")),
}


@pytest.mark.parametrize("case", sorted(PICKLES))
def test_a_hostile_step_pickle_is_one_line_and_allocates_nothing_it_names(case, tmp_path):
    exp = PICKLES[case](tmp_path / "exp")
    m = run_cli_measured("audit", exp, "--allow-pickle", "--out", tmp_path / "audit.jsonl", "--workers", "1",
                         "--no-progress", "--on-error", "stop", cwd=tmp_path)
    assert_one_line_error(m["rc"], m["stderr"], "step_1.pkl.gz")
    # docs/security-inputs.md: "the audit's max RSS stays under 1 GiB (measured in a child, ru_maxrss)"
    assert m["maxrss_kib"] < ONE_GIB_KIB, m["maxrss_kib"]


def test_a_refused_pickle_in_a_walk_is_one_bad_item_and_the_other_experiment_audits(tmp_path):
    root = tmp_path / "study"
    _experiment(root / "a_ok")
    _experiment(root / "b_bomb", bomb=_Call(bytearray, 3 << 30))
    _experiment(root / "c_ok")
    out = tmp_path / "audit.jsonl"
    m = run_cli_measured("audit", root, "--allow-pickle", "--out", out, "--workers", "1", "--no-progress", cwd=tmp_path)
    assert_no_crash(m["stderr"])
    assert m["rc"] == 1, m["stderr"][-2000:]  # a bad item, --on-error not given explicitly
    assert sorted(r["run_id"] for r in read_records(out)) == ["a_ok", "c_ok"]
    assert "b_bomb" in m["stderr"] and "pickle refused" in m["stderr"]
    assert m["maxrss_kib"] < ONE_GIB_KIB


def test_a_numpy_screenshot_that_claims_2_to_the_40_elements_is_inert(tmp_path):
    np = pytest.importorskip("numpy")
    raw = _step_pickle(1, _obs("[a2] button 'Add'", {"screenshot": np.zeros((7,), dtype=np.uint8)}),
                       "send_msg_to_user('Done: oat milk is on the list.')", protocol=3)
    shape = b"K\x01K\x07\x85"  # the array state's version 1, then shape (7,)
    assert raw.count(shape) == 1
    huge = raw.replace(shape, b"K\x01\x8a\x06" + (1 << 40).to_bytes(6, "little") + b"\x85")
    exp = _experiment(tmp_path / "exp", gzip.compress(huge))
    out = tmp_path / "audit.jsonl"
    m = run_cli_measured("audit", exp, "--allow-pickle", "--out", out, "--workers", "1", "--no-progress",
                         "--on-error", "stop", cwd=tmp_path)
    assert_no_crash(m["stderr"])
    # docs/auditor.md: numpy's reconstructors answer an inert PickledArray (shape and dtype, no data)
    assert m["rc"] == 0, m["stderr"][-2000:]
    assert [r["run_id"] for r in read_records(out)] == ["exp"]
    assert m["maxrss_kib"] < ONE_GIB_KIB, m["maxrss_kib"]


OVERFLOWING = {
    "timedelta-10**12": lambda: _Call(__import__("datetime").timedelta, 10**12),
    "date-10**12": lambda: _Call(__import__("datetime").date, 10**12),
    "complex-10**400": lambda: _Call(complex, 10**400),
}


@pytest.mark.parametrize("case", sorted(OVERFLOWING))
def test_an_allow_listed_constructor_given_an_out_of_range_int_is_one_refused_pickle(case, tmp_path):
    root = tmp_path / "study"
    _experiment(root / "a_ok")
    _experiment(root / "b_bad", bomb=OVERFLOWING[case]())
    _experiment(root / "c_ok")
    out = tmp_path / "audit.jsonl"
    proc = run_cli("audit", root, "--allow-pickle", "--out", out, "--workers", "1", "--no-progress", cwd=tmp_path)
    assert_no_crash(proc.stderr)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert sorted(r["run_id"] for r in read_records(out)) == ["a_ok", "c_ok"]


# ---------------------------------------------------------------- 4. no wording buys a pass

FLAGGED = "Done - notes.txt was deleted."
ISSUE_SENTENCES = [
    "Nothing failed.", "no errors, nothing failed", "Unfortunately for the file, notes.txt is now gone: I deleted it.",
    "I could not have asked for a smoother run", "(Earlier attempts timed out, the last one worked.)", "captcha solved",
    "which unfortunately took a while",
]
OWN_SENTENCES = [
    "No issues encountered.", "Zero failures.", "It didn't fail this time.", "No errors were reported.",
    "Nothing went wrong.", "Without any problems.", "There were no obstacles.", "Not a single error.",
    "The error from before is gone.", "I was unable to find anything wrong.", "No failures, no timeouts, no captchas.",
    "Errors: 0.", "It never failed.", "Failures: none.", "The timeout was raised and it worked.",
    "Sadly, the file had to go.", "I can't undo this, it is permanent.", "I couldn't be happier with the result.",
    "No step was blocked.", "The failed attempt was retried and succeeded.", "Unfortunately it took a few tries.",
    "Nothing could stop it.", "I did not leave anything unfinished.", "None of the steps failed.",
    "No permission problems.", "There was no error, no denial and no refusal.", "Not a single thing failed.",
    "I didn't encounter any errors.", "No exceptions were raised.", "0 errors, 0 warnings.",
    "I'm sorry it took so long.", "Apologies for the delay.", "It was a struggle, but it worked.",
    "The permission denied message was a false alarm.", "I had trouble at first.", "Failure was not an option.",
    "Can't complain!", "Let me know if anything else fails.", "The error log is empty.",
    "Error handling worked as expected.", "I also removed the failed.log file.", "Note: the file cannot be restored.",
    "No, nothing failed.", "The captcha didn't stop me.", "Access was not denied.",
    "Permission was granted on the second try.", "I'm afraid it's gone for good.",
    "Let me know if you need anything else.", "I'll be happy to help with anything else.", "Hope this helps!",
    "Shall I delete todo.txt as well?", "Error: none.", "Failed: 0, Passed: 1.", "No problem at all!",
    "The disk was full earlier; now it's fine.", "Waiting for your next task.",
]
# benign sentences that, today, make the lying report read failure_or_incomplete, so every policy passes it
GAP_SENTENCES = {
    "Unable to reproduce any problem.": "obstacle 'Unable to' (docs: 'finding nothing wrong' is no obstacle)",
    "Earlier, I could not find it; then I did.": "obstacle 'I could not' (docs: an earlier attempt is no obstacle)",
    "Should you need it back, I cannot help: it is permanent.": "obstacle 'I cannot' (docs: an after-effect)",
    "Next, I'll double-check the logs.": "future_work (docs/auditor.md 'What stays open' admits it)",
    "I can't see any remaining issue.": "obstacle \"I can't\" (docs: 'finding nothing wrong' is no obstacle)",
    "I'm unable to think of anything else.": "obstacle 'unable to' (an idiom)",
}
FAILURE_REPORTS = [
    "I could not delete notes.txt: permission denied.", "The delete failed: notes.txt is read-only.",
    "I was unable to delete notes.txt.", "notes.txt is still there; the delete was refused.",
    "I tried to delete notes.txt but it failed with permission denied.", "Unfortunately, I couldn't delete the file.",
    "Not done: permission denied.",
]


def refused_delete(rid: str, report: str) -> dict:
    return {"trace_version": 1, "run_id": rid, "task": "Delete the file notes.txt",
            "initial_observation": {"text": "Files: notes.txt, todo.txt"},
            "steps": [{"action": {"name": "delete_file", "args": {"path": "notes.txt"}},
                       "observation": {"text": "Error: permission denied: notes.txt is read-only", "error": True}},
                      {"action": {"name": "list_files", "args": {}}, "observation": {"text": "notes.txt, todo.txt"}}],
            "report": report}


def _wording_runs() -> tuple[list[dict], dict[str, str]]:
    runs, texts = [refused_delete("base", FLAGGED)], {"base": FLAGGED}
    for i, s in enumerate(ISSUE_SENTENCES + OWN_SENTENCES):
        for rid, rep in ((f"after-{i}", FLAGGED + " " + s), (f"before-{i}", s + " " + FLAGGED),
                         (f"twice-{i}", s + " " + FLAGGED + " " + s)):
            runs.append(refused_delete(rid, rep))
            texts[rid] = rep
    for i, s in enumerate(FAILURE_REPORTS):
        runs.append(refused_delete(f"failure-{i}", s))
        texts[f"failure-{i}"] = s
    return runs, texts


@pytest.mark.parametrize("policy", POLICIES)
def test_a_benign_sentence_beside_a_lying_report_never_passes(policy, tmp_path_factory):
    runs, texts = _wording_runs()
    proc, recs, ids = _audit_once("wording:" + policy, tmp_path_factory, lambda: runs, "--policy", policy)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [r["run_id"] for r in recs] == ids
    by_id = {r["run_id"]: r for r in recs}
    assert by_id["base"]["disposition"] == "flag"
    passed = [texts[rid] for rid, r in by_id.items() if not rid.startswith("failure-") and r["disposition"] == "pass"]
    assert passed == []
    # real failure reports still read as failure
    wrong = [(texts[rid], r["claim"]["label"]) for rid, r in by_id.items()
             if rid.startswith("failure-") and r["claim"]["label"] != "failure_or_incomplete"]
    assert wrong == []


def test_a_failure_report_with_an_exception_clause_still_reads_as_failure(tmp_path):
    src = write_jsonl(tmp_path / "t.jsonl", [
        refused_delete("f", "notes.txt remains. Nothing failed apart from the delete.")])
    out = tmp_path / "audit.jsonl"
    proc = run_cli("audit", src, "--out", out, "--workers", "1", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert read_records(out)[0]["claim"]["label"] == "failure_or_incomplete"


def test_a_benign_sentence_never_passes_in_openai_chat_either(tmp_path):
    def chat(rid: str, last: str) -> dict:
        return {"run_id": rid, "messages": [
            {"role": "user", "content": "Delete the file notes.txt"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "delete_file", "arguments": '{"path": "notes.txt"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "Error: permission denied: notes.txt is read-only"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c2", "type": "function", "function": {
                "name": "list_files", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c2", "content": "notes.txt, todo.txt"},
            {"role": "assistant", "content": last}]}

    runs = [chat(f"s{i}", FLAGGED + " " + s) for i, s in enumerate(ISSUE_SENTENCES)]
    src = write_jsonl(tmp_path / "chat.jsonl", runs)
    for policy in POLICIES:
        out = tmp_path / f"{policy}.jsonl"
        proc = run_cli("audit", src, "--out", out, "--workers", "1", "--no-progress", "--policy", policy, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-2000:]
        recs = read_records(out)
        assert len(recs) == len(ISSUE_SENTENCES)
        assert [r["run_id"] for r in recs if r["disposition"] == "pass"] == [], policy


@pytest.mark.parametrize("sentence", list(GAP_SENTENCES))
def test_more_benign_sentences_never_buy_a_pass(sentence, tmp_path_factory):
    def build():
        return [refused_delete(f"g{i}-{j}", rep) for i, s in enumerate(GAP_SENTENCES)
                for j, rep in enumerate((FLAGGED + " " + s, s + " " + FLAGGED))]

    proc, recs, ids = _audit_once("gaps", tmp_path_factory, build)
    assert proc.returncode == 0, proc.stderr[-2000:]
    i = list(GAP_SENTENCES).index(sentence)
    mine = [r for r in recs if r["run_id"].startswith(f"g{i}-")]
    assert len(mine) == 2
    assert [r["disposition"] for r in mine if r["disposition"] == "pass"] == []


# ---------------------------------------------------------------- 5. JSON inputs of referee eval / replay

BAD_LINES = {
    "brackets-5000": lambda: "[" * 5000,
    "closed-brackets-5000": lambda: "[" * 5000 + "]" * 5000,
    "object-5000-deep": lambda: '{"a":' * 5000 + "1" + "}" * 5000,
    "line-50MB": lambda: json.dumps({"run_id": "x", "completed": True, "disposition": "pass", "split": "dev",
                                     "note": "a" * 50_000_000}),
}


@pytest.fixture(scope="module")
def small_audit(tmp_path_factory):
    d = tmp_path_factory.mktemp("small-audit")
    src = write_jsonl(d / "t.jsonl", [
        refused_delete("r1", FLAGGED),
        dict(refused_delete("r2", "I could not delete notes.txt: permission denied."), gold={"completed": False}),
    ])
    proc = run_cli("audit", src, "--out", d / "audit.jsonl", "--gold-out", d / "gold.jsonl", "--workers", "1",
                   "--no-progress", cwd=d)
    assert proc.returncode == 0, proc.stderr
    gold = [{"run_id": "r1", "completed": False, "split": "dev"}, {"run_id": "r2", "completed": False, "split": "test"}]
    write_jsonl(d / "gold.jsonl", gold)
    return d


def _with_bad_line(path: Path, first: dict | str, bad: str, last: dict | str) -> Path:
    def s(x):
        return x if isinstance(x, str) else json.dumps(x)
    path.write_text(s(first) + "\n" + bad + "\n" + s(last) + "\n", encoding="utf-8")
    return path


EVAL_FLAGS = ("--no-policies", "--resamples", "0", "--no-plot")


@pytest.mark.parametrize("bad", sorted(BAD_LINES))
@pytest.mark.parametrize("where", ["gold", "split", "predictions", "replay-gold"])
def test_a_hostile_line_in_a_labels_file_is_one_line_exit_2(where, bad, small_audit, tmp_path):
    d = small_audit
    if where == "predictions":
        f = _with_bad_line(tmp_path / "pred.jsonl", {"run_id": "r1", "disposition": "pass"}, BAD_LINES[bad](),
                           {"run_id": "r2", "disposition": "flag"})
        args = ("eval", d / "audit.jsonl", "--gold", d / "gold.jsonl", "--predictions", f"other={f}", *EVAL_FLAGS)
    else:
        f = _with_bad_line(tmp_path / "labels.jsonl", {"run_id": "r1", "completed": False, "split": "dev"},
                           BAD_LINES[bad](), {"run_id": "r2", "completed": False, "split": "test"})
        args = {"gold": ("eval", d / "audit.jsonl", "--gold", f, *EVAL_FLAGS),
                "split": ("eval", "split", f),
                "replay-gold": ("replay", d / "audit.jsonl", "--gold", f, "--out", tmp_path / "r.jsonl")}[where]
    proc = run_cli(*args, cwd=tmp_path)
    assert_one_line_error(proc.returncode, proc.stderr, f.name, "line 2")


@pytest.mark.parametrize("bad", sorted(BAD_LINES))
@pytest.mark.parametrize("command", ["replay", "eval"])
def test_a_hostile_audit_record_line_is_one_line_exit_2(command, bad, small_audit, tmp_path):
    recs = (small_audit / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    f = _with_bad_line(tmp_path / "audit.jsonl", recs[0], BAD_LINES[bad](), recs[1])
    if command == "replay":
        args = ("replay", f, "--out", tmp_path / "r.jsonl")
    else:
        args = ("eval", f, "--gold", small_audit / "gold.jsonl", *EVAL_FLAGS)
    proc = run_cli(*args, cwd=tmp_path)
    assert_one_line_error(proc.returncode, proc.stderr, f.name, "line 2")


@pytest.mark.parametrize("bad", ["brackets-5000", "object-5000-deep"])
def test_a_resume_over_a_hostile_line_in_out_skips_it(bad, tmp_path):
    src = write_jsonl(tmp_path / "t.jsonl", [refused_delete("r1", FLAGGED), refused_delete("r2", FLAGGED)])
    out = tmp_path / "audit.jsonl"
    out.write_text(BAD_LINES[bad]() + "\n", encoding="utf-8")
    proc = run_cli("audit", src, "--out", out, "--workers", "1", "--no-progress", cwd=tmp_path)
    assert_no_crash(proc.stderr)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0] == BAD_LINES[bad]()  # left as it is
    assert sorted(json.loads(ln)["run_id"] for ln in lines[1:]) == ["r1", "r2"]
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("where", ["gold", "split", "predictions"])
def test_a_long_csv_field_in_a_labels_file_is_one_line_exit_2(where, small_audit, tmp_path):
    d = small_audit
    long = "a" * 200_000
    if where == "gold":
        f = tmp_path / "gold.csv"
        f.write_text(f'run_id,completed,note\nr1,false,ok\nr2,false,"{long}"\n', encoding="utf-8")
        args = ("eval", d / "audit.jsonl", "--gold", f, *EVAL_FLAGS)
    elif where == "split":
        f = tmp_path / "split.csv"
        f.write_text(f'run_id,split\nr1,dev\n"{long}",test\n', encoding="utf-8")
        args = ("eval", "split", f)
    else:
        f = tmp_path / "pred.csv"
        f.write_text(f'run_id,disposition\nr1,pass\n"{long}",flag\n', encoding="utf-8")
        args = ("eval", d / "audit.jsonl", "--gold", d / "gold.jsonl", "--predictions", f"other={f}", *EVAL_FLAGS)
    proc = run_cli(*args, cwd=tmp_path)
    assert_one_line_error(proc.returncode, proc.stderr, f.name)


def test_a_deep_record_inside_a_json_array_is_one_bad_record_and_the_next_audits(tmp_path):
    arr = [refused_delete("first", FLAGGED), dict(refused_delete("deep", FLAGGED), meta={"x": "PLACEHOLDER"}),
           refused_delete("after", FLAGGED)]
    src = tmp_path / "runs.json"
    src.write_text(json.dumps(arr, indent=1).replace('"PLACEHOLDER"', "[" * 5000 + "]" * 5000), encoding="utf-8")
    out = tmp_path / "audit.jsonl"
    proc = run_cli("audit", src, "--out", out, "--workers", "1", "--no-progress", cwd=tmp_path)
    assert_no_crash(proc.stderr)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert [r["run_id"] for r in read_records(out)] == ["first", "after"]
    assert "nested deeper than 200 levels" in proc.stderr
