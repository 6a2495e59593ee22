"""The agent's terminal answer call (`send_msg_to_user(...)`, `answer(...)`, `FINISH([...])`): its last word.

It is claim channel: the claim reader may read it (when there is no report), the claim-blind view
keeps only its name, and no extractor takes it as evidence. Pure.
"""

from __future__ import annotations

import ast
import re
from typing import Any

# terminal calls: the agent's own last word (claim channel), never evidence
TERMINAL_CALLS = frozenset("send_msg_to_user report_infeasible answer final_answer finish submit_answer respond "
                           "respond_to_user reply_to_user return_answer give_up infeasible noop".split())
ANSWER_KEYS = frozenset("answer text result response value final_answer output message content".split())
CALL = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*\((.*)\)\s*;?\s*$", re.S)


def split_call(name: str, args: Any) -> tuple[str, Any]:
    """An action written as a call (`click('a51')`, `fill('b12', 'hi')`) as a name and its argument list.

    >>> split_call("fill('b12', 'hello')", {})
    ('fill', ['b12', 'hello'])
    >>> split_call("delete_note", {"id": "N7"})
    ('delete_note', {'id': 'N7'})
    """
    m = CALL.match(name)
    if not m or args:
        return name, args
    raw = m.group(2)
    try:
        val = ast.literal_eval(f"({raw},)") if raw.strip() else ()
        parsed: Any = list(val)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        parsed = [raw]
    return m.group(1), parsed


def is_terminal(name: str, args: Any) -> bool:
    """The agent's last word: a terminal answer call (`answer(...)`, `send_msg_to_user(...)`, `FINISH(...)`),
    or `submit` carrying only an answer (a form's submit button is a write, not this).

    >>> is_terminal("FINISH", ["S123"]), is_terminal("submit", {"answer": "42"}), is_terminal("submit", {"form": "f1"})
    (True, True, False)
    """
    low = name.lower()
    if low in TERMINAL_CALLS:
        return True
    if low in ("submit", "submit_answer"):
        if isinstance(args, list):
            return len(args) == 1 and not isinstance(args[0], (dict, list))
        return isinstance(args, dict) and bool(args) and set(args) <= ANSWER_KEYS
    return False
