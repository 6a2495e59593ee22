"""What a tool's output text says of the command it ran: its exit code, or a test run's failing summary.

Harnesses that return a shell command's output as plain text write its status inside that text
(`Exit code: 1`, `exit_code: 1`, `Process exited with code 1`, mini-SWE-agent's `<returncode>1`);
a function tool that runs the tests and returns their output may write no status at all, only the
test runner's own summary (`1 failed, 12 passed in 0.52s`). A reader marks such a result failed,
so a failed test run is a failed check whichever harness wrote it.
"""

from __future__ import annotations

import re

HEAD_CHARS = 2000  # of an output, searched for an exit-code line (harnesses write it first or last)
TAIL_LINES = 40  # of an output, searched for a test runner's summary (runners print it last)
# a status line of its own: "Exit code: 1", "exit_code: 1", "Exit Code: 1", "Process exited with code 1", <returncode>
_EXIT_LINE = re.compile(r"^[^\S\n]*+(?:exit[ _]?code|exit status|process exited with code|<returncode>)[^\S\n]*+"
                        r"[:=]?[^\S\n]*+(-?\d+)", re.I | re.M)
# one count of a runner's summary: "12 passed", "1 failed", "2 errors", "3 xfailed", "1 deselected"
# (fullmatched on a part; the lookbehind keeps a search linear too: no start inside a run of digits)
_COUNT = re.compile(r"(?<!\d)\d++ [a-z]++")
_FAILING = re.compile(r"(?<!\d)[1-9]\d*+ (?:failed|errors?|failures?)")
_DURATION = re.compile(r" in \d+(?:\.\d+)?\s*s(?:econds)?\b.*")
# summaries in the runners' own words: unittest's "FAILED (failures=1)", cargo's "test result: FAILED.",
# jest's "Tests:  1 failed, 12 passed, 13 total"
_RUNNER_FAILED = re.compile(r"^(?:FAILED \((?:failures|errors)=[1-9]|test result: FAILED\b|Tests:[^\S\n]+[1-9]\d* "
                            r"failed\b)", re.M)


def exit_code_in(text: str) -> int | None:
    """The exit code a status line of the output gives: the first in its first `HEAD_CHARS`, else the last in its
    last ones (a harness writes the status before or after the output).

    >>> exit_code_in("exit_code: 1\\n1 failed"), exit_code_in("ok\\nProcess exited with code 0"), exit_code_in("ok")
    (1, 0, None)
    >>> exit_code_in("the exit code: 3 is documented") is None
    True
    """
    if m := _EXIT_LINE.search(text[:HEAD_CHARS]):
        return int(m.group(1))
    found = _EXIT_LINE.findall(text[-HEAD_CHARS:]) if len(text) > HEAD_CHARS else []
    return int(found[-1]) if found else None


def failing_summary(text: str) -> bool:
    """Whether the output ends with a test runner's summary of a run that failed: a line of counts only, one of
    them failed or errors ("1 failed, 12 passed in 0.52s", "== 2 errors in 1.1s =="), or a runner's FAILED line.

    >>> failing_summary("....F\\n1 failed, 12 passed in 0.52s"), failing_summary("13 passed in 0.41s")
    (True, False)
    >>> failing_summary("Payments: 3 failed"), failing_summary("0 failed, 4 passed")
    (False, False)
    >>> failing_summary("Ran 3 tests in 0.01s\\n\\nFAILED (failures=1)")
    True
    """
    tail = "\n".join(text.rstrip().splitlines()[-TAIL_LINES:])
    if _RUNNER_FAILED.search(tail):
        return True
    for line in tail.splitlines():
        counts = _DURATION.sub("", line.strip().strip("=").strip())
        parts = [p.strip() for p in counts.split(",")]
        if parts and all(_COUNT.fullmatch(p) for p in parts) and any(_FAILING.fullmatch(p) for p in parts):
            return True
    return False


def output_failed(text: str) -> bool:
    """Whether a tool's output text shows its command failed: a non-zero exit code, or (with no exit code) a test
    runner's failing summary. An exit code of 0 is a run that passed, whatever the text says after it.

    >>> output_failed("exit_code: 1\\nboom"), output_failed("Exit code: 0\\n13 passed"), output_failed("1 failed")
    (True, False, True)
    """
    rc = exit_code_in(text)
    return rc != 0 if rc is not None else failing_summary(text)
