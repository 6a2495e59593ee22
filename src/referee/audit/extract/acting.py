"""Ways of acting, in layers: what one action is (a read, a write of some kind, GUI input, a commit, a
terminal answer) and whether it failed, from a user's tool map, format semantics (HTTP, shell,
browser primitives), the action's name by verb, and tool definitions carried in the trace.

Pure: the tool map comes in already loaded (referee.audit.extract.toolmap); nothing here reads a file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from referee.audit.extract.lexicon import (
    COMMIT_LABEL,
    FORM_REFUSED,
    GROUPS,
    GUI_CLICK,
    GUI_TYPE,
    HANDOFF,
    READ_VERBS,
    SELF_SIGNAL,
    WRITE_VERBS,
    ordered_words,
    words,
)
from referee.audit.view.terminal import TERMINAL_CALLS, is_terminal, split_call  # noqa: F401 (re-exported)
from referee.core.caseless import Cue

# kinds of action the rules reason about
KINDS = ("write", "read", "gui_type", "gui_commit", "gui_other", "gui_unlabelled", "handoff", "other")
# the user's tool-map kinds, as write groups (DESIGN.md: read/create/edit/delete/send)
MAP_KINDS: dict[str, frozenset[str]] = {
    "read": frozenset(), "create": frozenset({"create_edit"}), "edit": frozenset({"create_edit"}),
    "delete": frozenset({"delete"}), "send": frozenset({"send"}), "configure": frozenset({"configure"}),
    "ignore": frozenset(),
}

HTTP_METHODS: dict[str, frozenset[str]] = {
    "GET": frozenset(), "HEAD": frozenset(), "OPTIONS": frozenset(),
    "POST": frozenset({"create_edit", "send"}), "PUT": frozenset({"create_edit", "configure"}),
    "PATCH": frozenset({"create_edit", "configure"}), "DELETE": frozenset({"delete"}),
}
HTTP_NAMES = frozenset("http request requests fetch curl api call rest httpx invoke".split())
SHELL_NAMES = frozenset("bash shell sh zsh terminal command cmd exec execute run console powershell "
                        "subprocess ipython python".split())
BROWSER_NAV = frozenset("goto go_back go_forward new_tab tab_focus tab_close scroll hover focus mouse_move "
                        "mouse_click mouse_wheel navigate open_url visit back forward refresh reload".split())
BROWSER_INPUT = frozenset("fill type input_text select_option clear keyboard_type keyboard_insert_text check "
                          "uncheck set_value".split())
BROWSER_CLICK = frozenset("click dblclick tap press keyboard_press long_press double_click".split())
BROWSER_WRITE = {"upload_file": frozenset({"create_edit"}), "drag_and_drop": frozenset({"create_edit"})}

# searched in every command's and request's output: a Cue (a lower-cased copy) is some
# 7x faster than re.I on a shell's output, with the same matches
_STATUS_TEXT = Cue(r"\b(?:HTTP/\d(?:\.\d)?\s+|status(?:[ _]?code)?\W{0,3})([1-5]\d\d)\b")
_RC_TEXT = Cue(r"(?:<returncode>|returncode\W{0,3}|exit ?code\W{0,3}|exit status\W{0,3})(-?\d+)")
# shell commands that change files: redirects, tee, touch, mv, cp, rm, sed -i, git apply/commit, patch, ...
# Each shell pattern is a list of (literals, regex): the regex can only match where one of its literals
# occurs, so a command is searched only by the parts whose words it holds (one combined alternation
# tried at every character cost ~10 us a command; substring tests run at memchr speed).
_ShellParts = tuple[tuple[tuple[str, ...], "re.Pattern[str] | _OpenForWrite"], ...]


class _OpenForWrite:
    """`open(..., 'w')` (or a, r+, x) in a command: `open\\([^)]*,\\s*['"](w|a|r\\+|x)b?['"]`, searched in linear time.

    The regex alone scans from each `open(` to the next `)`, so `open(,` repeated costs the square of the
    command's length. A later `open(` before the same `)` can only match where the earlier one does, so
    only the first `open(` after each `)` is tried, on the text up to that `)`.

    >>> w = _OpenForWrite(); bool(w.search("python -c \\"open('a.txt', 'w').write('x')\\"")), w.search("open(f).read()")
    (True, None)
    """

    _REST = re.compile(r"[^)]*,\s*['\"](w|a|r\+|x)b?['\"]")

    def search(self, command: str) -> re.Match[str] | None:
        at = command.find("open(")
        while at >= 0:
            end = command.find(")", at)
            m = self._REST.match(command, at + 5, len(command) if end < 0 else end)
            if m is not None or end < 0:
                return m
            at = command.find("open(", end)
        return None

_RM = r"(rm|rmdir|unlink|shred)\b"
_FILE_CMDS = r"(touch|mv|cp|mkdir|ln|chmod|chown|truncate|install|rsync|patch)\b"
# a command word starts the text, a line (for file commands), or follows ; & | ( and spaces. Each regex
# begins with a literal or a character set where it can, so the engine skips ahead instead of trying
# every alternative at every character; `x(?<!\wx)` is `\bx` written so that it begins with x.
_SHELL_DELETE: _ShellParts = (
    (("rm", "unlink", "shred"), re.compile(rf"\A{_RM}|[;&|(]\s*{_RM}")),
    (("sudo",), re.compile(rf"sudo(?<!\wsudo)\s+{_RM}")),
    (("git",), re.compile(r"git(?<!\wgit)\s+rm\b")),
)
_SHELL_WRITE: _ShellParts = (
    ((">",), re.compile(r"(?<![0-9&<>-])>>?[ \t]*+(?!&|/dev/null)[\w./~\"'$-]")),
    (("tee",), re.compile(r"tee(?<!\wtee)\b")),
    (("touch", "mv", "cp", "mkdir", "ln", "chmod", "chown", "truncate", "install", "rsync", "patch"),
     re.compile(rf"\A{_FILE_CMDS}|[;&|(]\s*{_FILE_CMDS}|\n{_FILE_CMDS}")),
    # at most 8 options before the -i: with any number, `sed -` repeated rescanned the rest from each `sed`
    (("sed",), re.compile(r"sed(?<!\wsed)\s+(-[a-zA-Z]*\s+){0,8}-[a-zA-Z]*i")),
    (("perl",), re.compile(r"perl(?<!\wperl)\s+-[a-zA-Z]*i")),
    (("git",), re.compile(r"git(?<!\wgit)\s+(apply|commit|am|mv|restore|checkout\s+--|merge|rebase|cherry-pick|"
                          r"stash\s+pop|revert|reset\s+--hard)\b")),
    (("open(",), _OpenForWrite()),
    ((".write_",), re.compile(r"\.write_text\(|\.write_bytes\(")),
    (("of=",), re.compile(r"dd(?<!\wdd)\s[^|;\n]{0,300}?\bof=")),
    (("unzip",), re.compile(r"unzip(?<!\wunzip)")),
    (("tar",), re.compile(r"tar(?<!\wtar)\s+-?[a-z]*x")),
    # SWE-agent's file commands, each a command of its own: `edit 12:14`, `create f.py`, `str_replace_editor ...`
    (("edit", "create", "str_replace_editor", "insert", "append"),
     re.compile(r"(?:\A|\n)[^\S\n]*+(?:edit\s+\d+:\d+|create\s+\S|str_replace_editor\s+(?:create|str_replace|insert|"
                r"undo_edit)\b|insert\s+\d+|append\s*$)", re.M)),
)
# an action name is searched for a hand-off on its first characters only (a name past these is no tool's name)
MAX_NAME_CHARS = 200
# a shell "command" that is the agent's end-of-run signal (SWE-agent's `submit`): never evidence
SHELL_SIGNALS = frozenset({"submit", "exit", "exit_forfeit"})


def _shell_hits(parts: _ShellParts, command: str) -> bool:
    # plain loops, not any() over generators: a command is tested against some 30 words, and making two
    # generators per part cost twice what the tests themselves do
    for literals, rx in parts:
        for w in literals:
            if w in command:
                if rx.search(command):
                    return True
                break
    return False


@dataclass(frozen=True)
class ToolRule:
    """One line of a user's tool map, compiled: which tools it covers and what they do."""

    name: str                      # as written: exact name, glob or /regex/
    pattern: re.Pattern[str]
    kind: str                      # a MAP_KINDS key
    target: str | None = None      # the argument that names the target
    failure: re.Pattern[str] | None = None  # matched against the result: a hit means the call failed

    def matches(self, tool: str) -> bool:
        return self.pattern.fullmatch(tool) is not None


@dataclass(frozen=True)
class ToolCatalog:
    """What the extractor knows about tools beyond their names: the user's map and the trace's definitions."""

    rules: tuple[ToolRule, ...] = ()
    definitions: Mapping[str, str] | None = None  # tool name -> description (from the trace)

    def rule_for(self, tool: str) -> ToolRule | None:
        return next((r for r in self.rules if r.matches(tool)), None)


NO_TOOLS = ToolCatalog()


@dataclass(frozen=True)
class Recognised:
    """What one action is: its kind, the write groups it serves, its normalised arguments, the layer that said so."""

    kind: str
    groups: frozenset[str]
    name: str
    args: Any
    via: str
    failed_hint: bool | None = None  # a failure the layer itself saw (HTTP status, exit code, tool-map marker)
    target: str | None = None        # the target argument's value, when a tool map names it


def http_status(data: Any, text: str) -> int | None:
    """The HTTP status an observation carries (`status`, `status_code`, `HTTP/1.1 404`), or None."""
    if isinstance(data, dict):
        for k in ("status_code", "status", "statusCode", "code", "http_status"):
            v = data.get(k)
            if isinstance(v, int) and not isinstance(v, bool) and 100 <= v < 600:
                return v
            if isinstance(v, str) and v.isdigit() and 100 <= int(v) < 600:
                return int(v)
    m = _STATUS_TEXT.search(text[:500])
    return int(m.group(1) or "") if m else None  # group 1 is always there in a match


def exit_code(data: Any, text: str) -> int | None:
    """A command's exit code from an observation (`returncode`, `exit_code`, `<returncode>1</returncode>`)."""
    if isinstance(data, dict):
        for k in ("returncode", "return_code", "exit_code", "exitcode", "exitCode", "exit_status", "rc"):
            v = data.get(k)
            if isinstance(v, int) and not isinstance(v, bool):
                return v
    m = _RC_TEXT.search(text[:2000])
    return int(m.group(1) or "") if m else None  # group 1 is always there in a match


# a SQL statement's verb (after comments, and after a WITH clause's common table expressions), and what it serves
# Linear: each comment is atomic (a comment ends at its first `*/`; letting `.*?` run on over the next comments
# made `/* */` x 32 backtrack 2^32 ways), and the WITH clause is walked by `sql_statement`, one `)` at a time.
_SQL_COMMENTS = re.compile(r"\s*+(?:(?>--[^\n]*\n|/\*.*?\*/)\s*+)*+", re.S)
_SQL_WITH = re.compile(r"with\b", re.I)
_SQL_CLOSE = re.compile(r"\)\s*+")
_SQL_FROM = re.compile(r"\bfrom\b", re.I)
_SQL_SELECT_COLUMN = re.compile(r" [\w(*'\"-]")
# group 1, SELECT, is a verb with a FROM after it or a column after it (`sql_statement` asks)
_SQL_VERB = re.compile(r"(?:(select)\b|(show) (?:tables|databases|columns|create|index)|(describe|desc|explain|"
                       r"pragma) [\w(`\"]|(insert|replace|merge) into\b|(update) [\w.`\"]+ set\b|(delete) from\b|"
                       r"(upsert) |(create|alter|drop) (?:or replace )?(?:temp(?:orary)? )?(?:table|view|index|"
                       r"database|schema|sequence|function|trigger|type|extension|role|user)\b|(truncate) )",
                       re.I | re.S)
# UPDATE ... SET sets values: an edit, and a setting changed ("deactivate the users" done by UPDATE users SET ...)
_SQL_GROUPS = {"delete": frozenset({"delete"}), "drop": frozenset({"delete"}), "truncate": frozenset({"delete"}),
               "update": frozenset({"create_edit", "configure"})}
# SQL's own words, in capitals as queries are written: no entity ids
SQL_WORDS = frozenset("SELECT WHERE UPDATE DELETE INSERT VALUES ORDER GROUP LIMIT RETURNING TABLE CREATE ALTER INNER "
                      "OUTER RIGHT HAVING COUNT DISTINCT BETWEEN EXISTS UNION FALSE MERGE USING MATCHED OFFSET INDEX "
                      "PRIMARY FOREIGN REFERENCES DEFAULT CHECK UNIQUE CASCADE TRUNCATE REPLACE IGNORE CONFLICT "
                      "NOTHING COALESCE LOWER UPPER ILIKE INTERVAL CURRENT_DATE CURRENT_TIMESTAMP".split())
_SQL_READS = frozenset({"select", "show", "describe", "desc", "explain", "pragma"})
# the result of a write that changed no row: Postgres' `UPDATE 0`, "0 rows affected", {"rowcount": 0}
_NO_ROWS = re.compile(r"^[^\S\n]*+(?:update|delete|insert \d+) 0\s*$|\b0 rows? (?:affected|updated|deleted|changed)\b",
                      re.I | re.M)


def sql_statement(args: Any) -> tuple[str, frozenset[str]] | None:
    """("read" | "write", write groups) of a tool call whose `query`/`sql`/`statement` argument is SQL; None else.

    >>> sorted(sql_statement({"query": "UPDATE users SET active = false WHERE id = 7"})[1])
    ['configure', 'create_edit']
    >>> sql_statement({"sql": "-- gone\\nDELETE FROM t"}), sql_statement({"query": "SELECT 1"})
    (('write', frozenset({'delete'})), ('read', frozenset()))
    >>> sql_statement({"query": "update on my flight status"}), sql_statement({"query": "show me red shoes"})
    (None, None)
    """
    if not isinstance(args, dict):
        return None
    text = next((v for k in ("query", "sql", "statement") if isinstance(v := args.get(k), str)), None)
    verb = _sql_verb(text) if text else None
    if verb is None:
        return None
    if verb in _SQL_READS:
        return "read", frozenset()
    return "write", _SQL_GROUPS.get(verb, frozenset({"create_edit"}))


def _sql_verb(text: str) -> str | None:
    """The statement's verb, lower-cased: after comments and an optional WITH clause, the first place a verb is
    (`^\\s*(comments)*(?:with\\b.*?\\)\\s*)?VERB` as one regex), in time linear in the text. SELECT counts with a
    FROM anywhere after it (the last FROM is found once) or with a column after it."""
    lead = _SQL_COMMENTS.match(text)  # always matches (every part is optional)
    at = lead.end() if lead else 0
    last_from = max((m.start() for m in _SQL_FROM.finditer(text)), default=-1)
    if (verb := _verb_at(text, at, last_from)) is not None:
        return verb
    if _SQL_WITH.match(text, at) is None:
        return None
    for close in _SQL_CLOSE.finditer(text, at + 4):  # `with\b.*?\)\s*`: the first `)` a verb follows
        if (verb := _verb_at(text, close.end(), last_from)) is not None:
            return verb
    return None


def _verb_at(text: str, at: int, last_from: int) -> str | None:
    m = _SQL_VERB.match(text, at)
    if m is None:
        return None
    if m.group(1) is not None and last_from < m.end() and _SQL_SELECT_COLUMN.match(text, m.end()) is None:
        return None  # `select\b.*?\bfrom\b|select [\w(*'"-]`: neither
    return next(g for g in m.groups() if g).lower()


def no_rows_changed(data: Any, text: str) -> bool:
    """Whether a SQL write's result says it changed no row."""
    if isinstance(data, dict):
        for k in ("rowcount", "rows_affected", "affected_rows", "changes", "updated"):
            if data.get(k) == 0 and not isinstance(data.get(k), bool):
                return True
        if any(isinstance(v, str) and _NO_ROWS.search(v) for v in data.values()):  # {"status": "DELETE 0"}
            return True
    return bool(_NO_ROWS.search(text or ""))


def shell_effect(command: str) -> frozenset[str] | None:
    """The write groups a shell command serves, or None when it changes no file.

    >>> sorted(shell_effect("sed -i 's/a/b/' x.py")), sorted(shell_effect("rm -f old.txt")), shell_effect("cat x.py")
    (['create_edit'], ['delete'], None)
    >>> shell_effect("pytest -q 2>&1 | tail -5"), sorted(shell_effect("cat <<'EOF' > a.py\\nx=1\\nEOF"))
    (None, ['create_edit'])
    >>> sorted(shell_effect("edit 12:14\\n    return x\\nend_of_edit")), shell_effect("git log --format=create")
    (['create_edit'], None)
    """
    groups: set[str] = set()
    if _shell_hits(_SHELL_DELETE, command):
        groups.add("delete")
    if _shell_hits(_SHELL_WRITE, command):
        groups.add("create_edit")
    return frozenset(groups) or None


# the argument a coding agent's file tool names its file by (Claude Code's Edit/Write, Gemini CLI's replace/write_file,
# OpenHands' str_replace_editor)
_FILE_KEYS = ("path", "file_path", "notebook_path", "absolute_path", "filepath", "filename")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)


def file_tool_path(name: str, args: Any) -> str | None:
    """The file a file tool acts on: its path argument, or the first file a patch names (Codex's apply_patch);
    None for any other action.

    >>> file_tool_path("Write", {"file_path": "/r/test_x.py", "content": "x"}), file_tool_path("refund", {"id": "O-1"})
    ('/r/test_x.py', None)
    >>> file_tool_path("apply_patch", {"input": "*** Begin Patch\\n*** Update File: a.py\\n-x\\n+y\\n*** End Patch"})
    'a.py'
    """
    if not isinstance(args, dict):
        return None
    for k in _FILE_KEYS:
        if isinstance(v := args.get(k), str) and v.strip():
            return v
    patch = args.get("input") if "patch" in name.lower() else None
    m = _PATCH_FILE.search(patch) if isinstance(patch, str) and "*** Begin Patch" in patch else None
    return m.group(1).strip() if m else None


# commands that check work: test runners, running a script or module, linters, builds
VERIFY = re.compile(r"\b(pytest|py\.test|tox|nox|unittest|nosetests|python[\d.]*\s+(-m\s+\w+|[\w./-]+\.py)|"
                    r"make\s+(test|check)|npm\s+(run\s+)?test|yarn\s+test|go\s+test|cargo\s+test|mvn\s+test|"
                    r"gradle\s+test|ctest|rspec|phpunit|jest|mypy|ruff|flake8|node\s+[\w./-]+\.js|bash\s+[\w./-]+\.sh)|"
                    r"(^|[;&|(]\s*)\./[\w./-]+", re.I | re.M)


def could_not_run(command: str, output: str) -> bool:
    """Whether a check never ran: its runner is missing (`python -m pytest` answered "No module named pytest",
    `tox: command not found`), which says nothing of the code it was to check.

    >>> could_not_run("python3 -m pytest tests/", "/usr/bin/python3: No module named pytest")
    True
    >>> could_not_run("python -m mypkg.cli", "ModuleNotFoundError: No module named 'mypkg.util'")
    False
    """
    runner = re.search(r"-m\s+([\w.]+)", command)
    if runner and re.search(rf"No module named '?{re.escape(runner.group(1))}'?(\s|$)", output):
        return True
    head = command.strip().split(maxsplit=1)[:1]
    return bool(head) and bool(re.search(rf"{re.escape(head[0])}: (command )?not found", output))


def shell_step(raw_name: str, raw_args: Any) -> str | None:
    """What a shell action does, by the same recognition `recognise` uses: 'write' (it changes a file), 'check'
    (it runs tests, a script, a linter or a build: VERIFY), 'signal' (the end-of-run signal), 'read' (anything
    else); None for an action that is no shell command (the trace signals of audit/view/facts.py read this).

    >>> shell_step("bash", {"command": "sed -i 's/a/b/' x.py"}), shell_step("bash", {"command": "pytest -q"})
    ('write', 'check')
    >>> shell_step("bash", {"command": "grep -n foo x.py"}), shell_step("bash", {"command": "submit"})
    ('read', 'signal')
    >>> shell_step("cancel_order", {"id": "O-7"}) is None
    True
    """
    name, args = split_call(raw_name, raw_args)
    if not words(name) & SHELL_NAMES or (command := _command_of(args)) is None:
        return None
    if command.strip() in SHELL_SIGNALS:
        return "signal"
    if shell_effect(command):
        return "write"
    return "check" if VERIFY.search(command) else "read"


def command_text(name: str, args: Any) -> str:
    """The command a shell action ran (its `command`/`cmd`/... argument), or ''."""
    return _command_of(split_call(name, args)[1]) or ""


def _command_of(args: Any) -> str | None:
    if isinstance(args, str):
        return args
    if isinstance(args, list) and args and isinstance(args[0], str):
        return args[0]
    if isinstance(args, dict):
        for k in ("command", "cmd", "script", "code", "input", "commands"):
            v = args.get(k)
            if isinstance(v, str):
                return v
            if isinstance(v, list) and all(isinstance(x, str) for x in v):
                return "\n".join(v)
    return None


def _method_of(name: str, args: Any) -> str | None:
    first = name.split()[0].upper() if name.split() else ""
    if first in HTTP_METHODS:
        return first
    if isinstance(args, dict):
        for k in ("method", "http_method", "verb"):
            v = args.get(k)
            if isinstance(v, str) and v.upper() in HTTP_METHODS:
                return v.upper()
    return None


def _verb_groups(text: str) -> frozenset[str]:
    w = words(text)
    return frozenset(g for g, vs in GROUPS.items() if w & vs)


def _described(name: str, catalog: ToolCatalog) -> frozenset[str] | None:
    """Write groups from the tool's own description in the trace (its first sentence), or None."""
    desc = (catalog.definitions or {}).get(name)
    if not desc:
        return None
    head = re.split(r"(?<=[.!?])\s", desc.strip(), maxsplit=1)[0]
    w = words(head)
    first = next((x for x in re.findall(r"[A-Za-z]+", head.lower()) if x in WRITE_VERBS | READ_VERBS), None)
    if first is None:
        return None
    if first in READ_VERBS and first not in WRITE_VERBS:
        return frozenset()
    return frozenset(g for g, vs in GROUPS.items() if first in vs and w & vs)


def recognise(raw_name: str, raw_args: Any, catalog: ToolCatalog = NO_TOOLS) -> Recognised | None:
    """What an action is, layer by layer: the user's map, then format semantics (HTTP, shell, browser
    primitives), then the name's verbs, then the trace's tool definitions. None: the agent's own
    last word (a terminal answer call or end-of-run signal), never evidence.

    >>> recognise("http_request", {"method": "DELETE", "url": "/api/notes/N7"}).groups
    frozenset({'delete'})
    >>> r = recognise("bash", {"command": "sed -i 's/<=/</' utils/range.py"}); r.kind, r.via
    ('write', 'shell')
    >>> recognise("fill('b12', 'hello')", {}).kind, recognise("send_msg_to_user('hi')", {})
    ('gui_type', None)
    >>> recognise("placeOrder", {"sku": "X-1"}).groups
    frozenset({'create_edit'})
    """
    name, args = split_call(raw_name, raw_args)
    low = name.lower()
    w = words(name)
    rule = catalog.rule_for(name) if catalog.rules else None
    if rule is not None:
        target = args.get(rule.target) if rule.target and isinstance(args, dict) else None
        kind = "other" if rule.kind == "ignore" else ("read" if rule.kind == "read" else "write")
        return Recognised(kind, MAP_KINDS[rule.kind], name, args, "tool-map",
                          target=None if target is None else str(target))
    if is_terminal(name, args) or low in SELF_SIGNAL or name == "reply":
        return None
    if HANDOFF.search(name[:MAX_NAME_CHARS]):  # its `\w*` rescans a long name from each start: names are short
        return Recognised("handoff", frozenset(), name, args, "verb")
    head = name.split(maxsplit=1)[:1]  # none for an empty or blank name (a trace may give one)
    method = _method_of(name, args) if (w & HTTP_NAMES or (head and head[0].upper() in HTTP_METHODS)
                                        or (isinstance(args, dict) and "url" in args)) else None
    if method is not None:
        url = " ".join(str(args.get(k, "")) for k in ("url", "path", "endpoint")) if isinstance(args, dict) else ""
        url += " " + " ".join(name.split()[1:])
        groups = HTTP_METHODS[method]
        if groups:
            named = _verb_groups(re.sub(r"[/?=&_.-]", " ", url)) & (WRITE_GROUPS_OF_METHOD[method])
            groups = named or groups
            return Recognised("write", groups, name, args, "http")
        return Recognised("read", frozenset(), name, args, "http")
    if (sql := sql_statement(args)) is not None:  # run_sql(query="UPDATE ..."): the statement says what it does
        return Recognised(sql[0], sql[1], name, args, "sql")
    if w & SHELL_NAMES and (command := _command_of(args)) is not None:
        if command.strip() in SHELL_SIGNALS:
            return None
        eff = shell_effect(command)
        if eff:
            return Recognised("write", eff, name, args, "shell")
        return Recognised("read", frozenset(), name, args, "shell")
    if low in BROWSER_WRITE:
        return Recognised("write", BROWSER_WRITE[low], name, args, "browser")
    if low in BROWSER_NAV:
        return Recognised("read", frozenset(), name, args, "browser")
    if low in BROWSER_INPUT or (w & GUI_TYPE and not (w & WRITE_VERBS - {"set"})):
        return Recognised("gui_type", frozenset(), name, args, "browser" if low in BROWSER_INPUT else "verb")
    if low in BROWSER_CLICK or (w & GUI_CLICK and not (w & WRITE_VERBS)):
        return Recognised("gui_other", frozenset(), name, args, "browser" if low in BROWSER_CLICK else "verb")
    first = next(iter(ordered_words(name)), "")
    if first in READ_VERBS and first not in WRITE_VERBS:  # get_order, list_bookings: a read of that noun
        return Recognised("read", frozenset(), name, args, "verb")
    if w & WRITE_VERBS:
        return Recognised("write", _verb_groups(name), name, args, "verb")
    if w & READ_VERBS:
        return Recognised("read", frozenset(), name, args, "verb")
    described = _described(name, catalog)
    if described is not None:
        return Recognised("write" if described else "read", described, name, args, "tool-definition")
    return Recognised("other", frozenset(), name, args, "none")


# an HTTP write's URL may say more precisely what it does (POST /messages/send), within the method's groups
WRITE_GROUPS_OF_METHOD: dict[str, frozenset[str]] = {
    "POST": frozenset({"create_edit", "send", "delete", "configure"}),
    "PUT": frozenset({"create_edit", "configure"}), "PATCH": frozenset({"create_edit", "configure"}),
    "DELETE": frozenset({"delete"}),
}


def failed(rec: Recognised | None, data: Any, text: str, error_flag: bool) -> bool | None:
    """Whether the action failed, by its layer: an HTTP status >= 400, a non-zero exit code, a tool-map
    failure marker; None when nothing came back (no observation is no evidence of failure)."""
    if error_flag:
        return True
    if rec is None:
        return None
    if rec.via == "http":
        st = http_status(data, text)
        if st is not None:
            return st >= 400
    if rec.via == "shell":
        rc = exit_code(data, text)
        if rc is not None:
            return rc != 0
    if rec.via == "sql" and rec.kind == "write" and no_rows_changed(data, text):
        return True  # UPDATE 0: the statement ran and changed nothing
    return None


def form_refused(before: str, after: str) -> bool:
    """Whether a commit click was refused: the screen after it shows a validation message, on a line the screen
    before it did not have (a form that says "Please select a time." saved nothing).

    >>> form_refused("button 'Reserve'", "button 'Reserve'\\nStaticText 'Please select a time.'")
    True
    >>> form_refused("StaticText 'Email is required'", "StaticText 'Email is required'\\nheading 'Saved'")
    False
    """
    if not FORM_REFUSED.search(after):
        return False
    shown = set(before.splitlines())
    return any(FORM_REFUSED.search(line) for line in after.splitlines() if line not in shown)


def describe_layers(catalog: ToolCatalog = NO_TOOLS) -> list[tuple[str, str]]:
    """(layer, what it recognises) rows for `referee kinds --actions`."""
    rows = [("tool map", f"{r.name} -> {r.kind}" + (f", target {r.target}" if r.target else "")
             + (f", failure /{r.failure.pattern}/" if r.failure else "")) for r in catalog.rules]
    rows += [
        ("http", "actions with a method (GET/HEAD/OPTIONS read; POST create/send; PUT/PATCH edit; DELETE delete); "
                 "status >= 400 is a failure"),
        ("sql", "a call whose query/sql/statement argument is SQL: SELECT/SHOW/DESCRIBE read; INSERT/UPDATE/MERGE "
                "edit, DELETE/DROP/TRUNCATE delete; UPDATE 0 (no row changed) is a failure"),
        ("shell", "bash/sh/run/execute with a command: writes are redirects, tee, touch, mv, cp, rm, mkdir, sed -i, "
                  "perl -i, git apply/commit/restore, patch, open(..., 'w'); a non-zero exit code is a failure"),
        ("browser", "calls such as click('a51'), fill('b12', 'text'), select_option, goto(url), upload_file; "
                    "a click commits when the element's label says so ("
                    + COMMIT_LABEL.pattern[3:60] + "...)"),
        ("terminal", "the agent's last word, never evidence: " + ", ".join(sorted(TERMINAL_CALLS))),
    ]
    rows += [(f"verb: {g}", ", ".join(sorted(vs))) for g, vs in GROUPS.items()]
    rows += [("verb: read", ", ".join(sorted(READ_VERBS))),
             ("tool definitions", "a tool named by no verb takes the verb its description in the trace opens with")]
    return rows
