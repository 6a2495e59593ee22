"""Reader for Aider's chat history (`.aider.chat.history.md`), with `.aider.llm.history` beside it where present.

Aider appends every session to one markdown file in the repository: `# aider chat started at
<time>` opens a session; `#### ` lines are what the user typed (a prompt, or an in-chat command
such as `/add`, `/run`, `/test`); lines quoted `> ` (ending in two spaces) are aider's own output
(`Applied edit to app.py`, `Commit 1a2b3c4 ...`, `Run shell command?`, `Added 12 lines of output
to the chat.`); the rest is the model's answer, whose SEARCH/REPLACE blocks are its edits.

What becomes a step, so that an edit, a test run and its result are seen as such:

- each edit block is an `edit_file` call on its file; `Applied edit to <file>` is its result, a
  block aider could not apply (`SEARCH/REPLACE block failed to match`, `did not conform to the edit
  format`) a failed one; an `Applied edit to <file>` with no block read (the `whole` and `udiff`
  formats) is an `edit_file` call of its own with that result;
- `Commit <hash> <message>` is a `git commit` that succeeded;
- a shell command aider ran (`Run shell command? ... y`, `/run CMD`, `/test CMD`) is a `shell`
  call. Aider does not write a command's output into this file: `.aider.llm.history` holds it
  (`I ran this command: ... And got this output: ...`) when that file is there. `/test` adds its
  output only when the command fails, so `/test` followed by `Added N lines of output` is a failed
  run; `Attempt to fix test errors?` (`--auto-test`) and `Fix lint errors?` are failed checks too.
  A command whose output is nowhere has no observation (never a guessed one).

Other in-chat commands (`/add`, `/drop`, `/ls`, `/undo`, `/exit`, ...) are not prompts; `/ask`,
`/code` and `/architect` with a question are. Each session is split into one run per prompt by
`sessions` (`<folder>@<start time>#<n>`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

from referee.audit.ingest.readers import ReadOptions, trace_readers
from referee.audit.ingest.readers.sessions import session_items
from referee.audit.trace import TraceItem, record_error
from referee.core.fsutil import read_regular
from referee.errors import RefereeError, TraceError

MAX_BYTES = 256 << 20  # a chat history read whole (a year of daily use is a few MiB)
# the stamp up to its last non-blank (all blank: one character), in one pass: `(.+?)\s*$` rescanned blanks per step
_START = re.compile(r"^# aider chat started at (.*\S|.)\s*+$")
# An edit block, matched only where its header starts (`_blocks`). Its search part ends at the first `=======` line
# (atomic: when no REPLACE line follows that one, none follows a later one).
_EDIT = re.compile(r"^(?P<path>[^\n`]+?)\n```[^\n]*\n<<<<<<< SEARCH\n(?>(?P<search>.*?)^=======\n)(?P<replace>.*?)"
                   r"^>>>>>>> REPLACE\n```", re.S | re.M)
_FENCED_EDIT = re.compile(r"^```[^\n]*\n(?P<path>[^\n`]+?)\n<<<<<<< SEARCH\n(?>(?P<search>.*?)^=======\n)"
                          r"(?P<replace>.*?)^>>>>>>> REPLACE\n```", re.S | re.M)  # the diff-fenced format
_EDIT_HEAD = re.compile(r"^[^\n`]+\n```[^\n]*\n<<<<<<< SEARCH\n", re.M)
_FENCED_HEAD = re.compile(r"^```[^\n]*\n[^\n`]+\n<<<<<<< SEARCH\n", re.M)


def _blocks(block: re.Pattern[str], head: re.Pattern[str], text: str) -> list[re.Match[str]]:
    """`block.finditer(text)` in one pass: a block is tried at the first header after the last block only. When it
    does not close there, no later header's block closes either (its `=======` and REPLACE lines would follow this
    header too), so the search stops instead of rescanning the text from each later header."""
    out, pos = [], 0
    while (h := head.search(text, pos)) and (m := block.match(text, h.start())):
        out.append(m)
        pos = m.end()
    return out
_APPLIED = re.compile(r"^Applied edit to (.+)$")
_COMMIT = re.compile(r"^Commit ([0-9a-f]{7,40}) (.+)$")
_ADDED = re.compile(r"^Added \d+ lines? of output to the chat")
_RUN_ASK = re.compile(r"^Run shell commands?\? .*:\s*(\w*)\s*$")
_NOT_PROMPT = re.compile(r"^/(?!ask\b|code\b|architect\b|context\b)\w[\w-]*")
_QUESTION = re.compile(r"^/(?:ask|code|architect|context)\s+(.+)$", re.S)
_TOOL_LINE = re.compile(r"^(?:Tokens: |Applied edit to |Commit [0-9a-f]{7}|Running |Run shell command|Add command "
                        r"output|Added \d|Create new file\?|Attempt to fix|Fix lint errors|Aider v|Model: |"
                        r"Main model: |Weak model: |Git repo: |Repo-map: |Added .* to the chat|You can use /undo)")
_RAN = re.compile(r"^I ran this command:\n\n(?P<cmd>.*?)\n\nAnd got this output:\n\n(?P<out>.*)$", re.S)


def sniff_aider(path: Path) -> bool:
    """An Aider chat history by its first non-blank line (`# aider chat started at ...`).

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / ".aider.chat.history.md"
    >>> _ = p.write_text("\\n# aider chat started at 2026-05-01 14:22:33\\n"); sniff_aider(p)
    True
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return head.lstrip().startswith(b"# aider chat started at")


def llm_outputs(path: Path) -> dict[str, list[str]]:
    """The outputs of commands aider added to the chat, from `.aider.llm.history` (`USER I ran this command: ...`),
    by command, in order; each distinct output once (every request repeats the history before it)."""
    try:
        text = read_regular(path, max_bytes=MAX_BYTES).decode("utf-8", "replace")
    except (OSError, RefereeError):
        return {}
    out: dict[str, list[str]] = {}
    seen: set[tuple[str, str]] = set()
    msg: list[str] = []
    for line in [*text.splitlines(), "-------"]:
        if line.startswith("USER ") or line == "USER":
            msg.append(line[5:])
            continue
        if msg:
            m = _RAN.match("\n".join(msg))
            if m and (m["cmd"].strip(), m["out"]) not in seen:
                seen.add((m["cmd"].strip(), m["out"]))
                out.setdefault(m["cmd"].strip(), []).append(m["out"].rstrip("\n"))
            msg = []
    return out


class _Session:
    """One `# aider chat started at` session's messages, in the chat shape `sessions` takes."""

    def __init__(self, started: str, line: int, outputs: dict[str, list[str]], test_cmd: str | None) -> None:
        self.started, self.line, self.outputs = started, line, outputs
        self.test_cmd = test_cmd
        self.messages: list[dict] = []
        self.pending: dict[str, list[str]] = {}  # edited path -> the call ids waiting for "Applied edit to"
        self.asked: str | None = None  # the command aider asked to run
        self.last_shell: str | None = None  # the call id of a /test waiting for "Added N lines"
        self.n = 0

    def _id(self) -> str:
        self.n += 1
        return f"a{self.n}"

    def call(self, name: str, args: dict, result: str | None = None, error: bool = False, content: str | None = None) \
            -> str:
        cid = self._id()
        self.messages.append({"role": "assistant", "content": content,
                              "tool_calls": [{"id": cid, "function": {"name": name, "arguments": args}}]})
        if result is not None:
            self.result(cid, result, error)
        return cid

    def result(self, cid: str, text: str, error: bool = False) -> None:
        self.messages.append({"role": "tool", "tool_call_id": cid, "content": text, "is_error": error})

    def shell(self, command: str, test: bool = False) -> None:
        outs = self.outputs.get(command.strip())
        cid = self.call("shell", {"command": command}, outs.pop(0) if outs else None)
        self.last_shell = cid if test else None

    def answer(self, text: str) -> None:
        """The model's answer: its edit blocks become edit_file calls, its prose the text around them."""
        blocks = sorted([*_blocks(_EDIT, _EDIT_HEAD, text), *_blocks(_FENCED_EDIT, _FENCED_HEAD, text)],
                        key=lambda m: m.start())
        prose = text
        for b in reversed(blocks):
            prose = prose[:b.start()] + prose[b.end():]
        prose = re.sub(r"\n{3,}", "\n\n", prose).strip()
        if not blocks:
            if prose:
                self.messages.append({"role": "assistant", "content": prose})
            return
        calls = []
        for b in blocks:
            cid, path = self._id(), b["path"].strip()
            self.pending.setdefault(path, []).append(cid)
            calls.append({"id": cid, "function": {"name": "edit_file", "arguments": {
                "path": path, "search": b["search"], "replace": b["replace"]}}})
        self.messages.append({"role": "assistant", "content": prose or None, "tool_calls": calls})

    def tool_line(self, text: str) -> None:
        """One line aider printed: what it says of the steps before it."""
        if m := _APPLIED.match(text):
            cids = self.pending.pop(m[1].strip(), [])
            if not cids:  # an edit in another format (whole file, udiff): aider's word is the evidence
                self.call("edit_file", {"path": m[1].strip()}, text)
            for cid in cids:  # aider applies a file's blocks together
                self.result(cid, text)
        elif ("SEARCH/REPLACE block" in text and "failed to match" in text) or \
                "did not conform to the edit format" in text:
            for cid in (c for cids in self.pending.values() for c in cids):
                self.result(cid, text, error=True)
            self.pending.clear()
        elif m := _COMMIT.match(text):
            self.call("shell", {"command": f"git commit -m {m[2]!r}"}, text)
        elif m := _RUN_ASK.match(text):
            if self.asked and m[1].lower().startswith("y"):
                self.shell(self.asked)
            self.asked = None
        elif _ADDED.match(text) and self.last_shell is not None:
            got = next((m for m in self.messages if m.get("tool_call_id") == self.last_shell), None)
            if got is None:
                self.result(self.last_shell, f"{text} (aider adds /test output only when the command fails)", True)
            else:
                got["is_error"] = True
            self.last_shell = None
        elif text.startswith("Attempt to fix test errors?"):
            self.call("shell", {"command": self.test_cmd or "test (aider --auto-test)"},
                      "the tests failed (aider asked: Attempt to fix test errors?)", error=True)
        elif text.startswith("Fix lint errors"):
            self.call("shell", {"command": "lint (aider --auto-lint)"}, f"lint errors ({text})", error=True)
        elif not _TOOL_LINE.match(text) and text and not text.startswith(("/", "#")):
            self.asked = text  # a command aider is about to ask to run (the line before "Run shell command?")
            return
        if not text.startswith("Running "):
            self.asked = None if not _RUN_ASK.match(text) else self.asked

    def user(self, text: str, line: int) -> None:
        self.last_shell = None
        cmd = text.strip()
        if m := re.match(r"^/(run|test)\s+(.+)$", cmd, re.S) or re.match(r"^!(.+)$", cmd, re.S):
            self.shell(m[m.lastindex or 1].strip(), test=cmd.startswith("/test"))
            return
        if m := _QUESTION.match(cmd):
            cmd = m[1]
        elif self.messages and self.messages[-1].get("_echo") == cmd:
            return  # aider writes the text of `/code X` again as a line of its own: one prompt, not two
        elif _NOT_PROMPT.match(cmd) or cmd == "<blank>":
            self.messages.append({"role": "user", "content": cmd, "_prompt": False, "_line": line})
            return
        self.messages.append({"role": "user", "content": cmd, "_line": line,
                              **({"_echo": cmd} if _QUESTION.match(text.strip()) else {})})


def _test_cmd(line: str) -> str | None:
    m = re.search(r"--test-cmd[ =](\"[^\"]+\"|'[^']+'|\S+)", line)
    return m[1].strip("\"'") if m else None


def read_aider(path: Path, options: ReadOptions | None = None) -> Iterator[TraceItem]:
    """One run per prompt of each session in an Aider chat history."""
    file, mode = str(path), (options or ReadOptions()).session_runs
    try:
        text = read_regular(Path(path), max_bytes=MAX_BYTES).decode("utf-8", "replace")
    except (OSError, RefereeError) as exc:
        raise TraceError(f"aider: cannot read the chat history: {exc}", file=file) from None
    llm = Path(path).with_name(".aider.llm.history")
    outputs = llm_outputs(llm) if llm.is_file() else {}
    folder = Path(path).resolve().parent.name or "aider"
    sessions: list[_Session] = []
    s: _Session | None = None
    answer: list[str] = []
    prompt: list[str] = []
    prompt_line = 0
    in_tool = False

    def flush() -> None:
        nonlocal answer, prompt
        if s is not None and prompt:
            s.user("\n".join(prompt), prompt_line)
        if s is not None and "".join(answer).strip():
            s.answer("\n".join(answer).strip("\n") + "\n")
        answer, prompt = [], []

    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip("\n")
        if m := _START.match(line):
            flush()
            s = _Session(m[1], n, outputs, None)
            sessions.append(s)
            in_tool = False
            continue
        if s is None:
            continue
        if line.startswith("#### ") or line == "####":
            if not prompt:
                flush()
                prompt_line = n
            prompt.append(line[5:].rstrip())
            in_tool = False
            continue
        quoted = line.startswith("> ") or line == ">"
        body = line[2:].rstrip() if quoted else line.strip()
        if quoted and (line.endswith("  ") or in_tool or _TOOL_LINE.match(body)):
            flush()
            if s.test_cmd is None and body.startswith("/") and "--test-cmd" in body:
                s.test_cmd = _test_cmd(body)
            s.tool_line(body)
            in_tool = True
            continue
        if in_tool and line.strip():  # a tool message of several lines: only its first is quoted
            continue
        in_tool = False
        if prompt:  # the first line after a prompt (a blank one ends it: aider writes none inside a prompt)
            s.user("\n".join(prompt), prompt_line)
            prompt = []
            if not line.strip():
                continue
        answer.append(line)
    flush()
    if not sessions:
        err = record_error("aider: no '# aider chat started at' line: not an Aider chat history", file=file, line=1)
        yield TraceItem(file=file, line=1, run_id=None, error=err)
        return
    for s in sessions:
        if not any(m.get("role") == "user" and m.get("_prompt") is not False for m in s.messages):
            continue  # aider opened and closed with no request (`/exit`, a failed start): no task, no claim
        sid = f"{folder}@{s.started.replace(' ', 'T')}"
        yield from session_items(s.messages, session_id=sid, file=file, what="aider", mode=mode, line=s.line,
                                 meta={"source": "aider", "started": s.started})


read_aider.takes_options = True  # type: ignore[attr-defined]
read_aider.sniffs = "a markdown file whose first line is '# aider chat started at ...' (.aider.chat.history.md)"  # type: ignore[attr-defined]
trace_readers.register("aider")(read_aider)
