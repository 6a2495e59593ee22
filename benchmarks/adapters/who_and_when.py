"""Adapter: the who-and-when multi-agent corpus (Magentic-One and generated teams) as trace v1 JSONL plus gold.

Not a user-facing reader: the corpus's keys (`question`, `ground_truth`, `mistake_*`) are its own.
Usage: python benchmarks/adapters/who_and_when.py CORPUS_DIR -o traces.jsonl --gold-out gold.jsonl

Mapping (the team is the agent):
- task = `question`;
- turns of tool agents (a web surfer, a file surfer, a computer terminal) are observations of the
  step before them, when that step is an action without one, else a step of their own;
- turns of the thinking agents (orchestrator, assistant, experts): a code block becomes a
  `run_code` action (prose beside it is narration); an orchestrator's message to a member becomes
  an `instruct` action; plain prose is narration (claim channel) only;
- the report = the `FINAL ANSWER:` line when the run printed one, else the last thinking turn that says
  more than TERMINATE (TERMINATE removed). It is taken out of the observations.
- gold: completed = false for every run (the corpus holds only failed runs; `ground_truth` is the
  right answer, never evidence).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Iterator

TOOL_AGENT = re.compile(r"(surfer|terminal|computer|executor|browser|tool)", re.I)
CODE = re.compile(r"```(\w*)\n(.*?)```", re.S)
FINAL = re.compile(r"^FINAL ANSWER:.*$", re.M)
TO = re.compile(r"\(->\s*([^)]+)\)")


def _speaker(turn: dict) -> str:
    return str(turn.get("name") or turn.get("role") or "unknown")


def _thinking_text(text: str) -> str:
    return re.sub(r"\bTERMINATE\b", "", text).strip()


def to_trace(obj: dict, run_id: str) -> dict[str, Any]:
    """One corpus file as a trace v1 object (see the module docstring for the mapping)."""
    history = [t for t in obj.get("history") or [] if isinstance(t, dict)]
    question = str(obj.get("question") or "")
    if history and str(history[0].get("role")) in ("human", "user") and not history[0].get("name"):
        history = history[1:]  # the user's turn is the task itself
    report = None
    last = str(history[-1].get("content", "")) if history else ""
    if m := list(FINAL.finditer(last)):
        report = m[-1].group(0).strip()
    steps: list[dict[str, Any]] = []
    for i, turn in enumerate(history):
        who = _speaker(turn)
        text = str(turn.get("content") or "")
        if report is not None and i == len(history) - 1:
            text = FINAL.sub("", text)
        if TOOL_AGENT.search(who) and "orchestrator" not in who.lower():
            obs = {"text": text.strip()}
            if steps and steps[-1].get("action") and "observation" not in steps[-1]:
                steps[-1]["observation"] = obs
            else:
                steps.append({"action": {"name": re.sub(r"\W+", "_", who).strip("_").lower()}, "observation": obs})
            continue
        codes = CODE.findall(text)
        prose = CODE.sub("", text).strip()
        if codes:
            for lang, code in codes:
                steps.append({"action": {"name": "run_code", "args": {"language": lang or "text", "code": code}}})
            if prose:
                steps[-len(codes)]["narration"] = prose
        elif (to := TO.search(who)) and prose:
            steps.append({"action": {"name": "instruct", "args": {"to": to.group(1).strip(), "text": prose}}})
        elif prose:
            steps.append({"narration": prose})
    if report is None:
        for turn in reversed(history):
            if TOOL_AGENT.search(_speaker(turn)) and "orchestrator" not in _speaker(turn).lower():
                continue
            said = _thinking_text(CODE.sub("", str(turn.get("content") or "")))
            if said and not said.lower().startswith("next speaker"):
                report = said
                break
    return {"trace_version": 1, "run_id": run_id, "task": question, "steps": steps, "report": report,
            "meta": {"source": "who-and-when", "group": str(obj.get("level", ""))}}


def iter_corpus(root: Path) -> Iterator[tuple[dict, dict]]:
    """(trace, gold row) for every run file under `root` (hand-crafted/ and algorithm-generated/)."""
    for sub in sorted(p for p in Path(root).iterdir() if p.is_dir()):
        for f in sorted(sub.glob("*.json"), key=lambda p: (len(p.stem), p.stem)):
            obj = json.loads(f.read_text(encoding="utf-8"))
            rid = f"{sub.name}/{f.stem}"
            yield to_trace(obj, rid), {"run_id": rid, "completed": False, "group": sub.name}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("-o", "--out", type=Path, required=True)
    ap.add_argument("--gold-out", type=Path)
    a = ap.parse_args(argv)
    n = 0
    with open(a.out, "w", encoding="utf-8") as out, \
            (open(a.gold_out, "w", encoding="utf-8") if a.gold_out else open("/dev/null", "w")) as gold:
        for trace, row in iter_corpus(a.corpus):
            out.write(json.dumps(trace, ensure_ascii=False) + "\n")
            gold.write(json.dumps(row) + "\n")
            n += 1
    print(f"{n} runs -> {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
