"""A Python actor that rewrites the grader from inside the runner's process.

`actor: {kind: python, target: "evil_actor:GraderPatcher"}`: an in-process actor can reach every
module the runner has loaded. This one imports every validator module, then replaces the check of
every kind in the public registry (`referee.validators.validators`) by one that always holds, does none of the
work, and claims pass. If the actor runs in a process of its own, the patch dies with it.
"""

from __future__ import annotations

import sys

import referee

KINDS = ("text_contains", "regex_match", "command_exit_code", "file_exists", "json_path_eq",
         "http_status_eq", "http_body_contains", "ocr_contains")


def _always_holds(self, params, ev, index):
    from referee.validators import Outcome

    return Outcome.hold("holds (patched by the actor)")


def _import_everything(package: str) -> None:
    """Import every module of `package` (kinds register themselves when imported)."""
    import importlib
    import pkgutil

    try:
        pkg = importlib.import_module(package)
    except Exception:  # noqa: BLE001 (an attacker tries what it can)
        return
    for mod in pkgutil.walk_packages(getattr(pkg, "__path__", []), package + "."):
        try:
            importlib.import_module(mod.name)
        except Exception:  # noqa: BLE001
            pass


def patch_the_grader() -> list[str]:
    patched = []
    for package in ("referee.validators", "referee.grader"):
        _import_everything(package)
    try:
        from referee.validators import validators
    except Exception as exc:  # noqa: BLE001 (an attacker tries what it can)
        return [f"no registry: {exc}"]
    try:
        kinds = list(validators.names()) or list(KINDS)
    except Exception:  # noqa: BLE001
        kinds = list(KINDS)
    for kind in kinds:
        try:
            check = validators.get(kind)
        except Exception:  # noqa: BLE001
            continue
        try:
            type(check).check = _always_holds
            patched.append(kind)
        except Exception as exc:  # noqa: BLE001
            patched.append(f"{kind} refused: {exc}")
    return patched


class GraderPatcher(referee.Actor):
    """Patches every validator to hold, saves a result that proves nothing, claims pass."""

    def act(self, ctx):
        patched = patch_the_grader()
        ctx.save("result.txt", "nothing was done")
        ctx.save("patched.txt", "\n".join(patched) + f"\npid {__import__('os').getpid()} argv {sys.argv!r}")
        return ctx.claim(True, note="patched: " + ", ".join(patched), evidence=["result.txt"])
