"""Resource limits on an agent's processes (plan: `actor.limits`): what the launcher sets, and what an exit means.

The launcher (`agentproc.LAUNCHER`) sets them with `setrlimit` before it drops to the agent's account
and execs, as soft and hard limits, so every process the agent starts inherits them and none can raise
them again. They are per process, not a budget for all the agent's processes together: that needs a
cgroup's controllers, which many hosts (and containers) do not delegate. `processes` counts the
processes of one account, so it means something only under `user` isolation, where that account is the
agent's alone; elsewhere it is left out, and the run's isolation record says so.
"""

from __future__ import annotations

import signal

from referee.plan.model import AgentLimits

MB = 1 << 20
CPU_GRACE_S = 1  # SIGXCPU at cpu_s; SIGKILL this much later if the agent ignores it

# plan field -> (the launcher's name for it, the unit it is given in)
_RESOURCES = {"memory_mb": ("DATA", MB), "cpu_s": ("CPU", 1), "file_mb": ("FSIZE", MB), "processes": ("NPROC", 1)}


def applied(limits: AgentLimits | None, mode: str) -> tuple[dict[str, int], list[str]]:
    """The limits that hold under isolation `mode`, and a note for each left out.

    >>> applied(AgentLimits(memory_mb=256, processes=64), "user")
    ({'memory_mb': 256, 'processes': 64}, [])
    >>> applied(AgentLimits(processes=64), "bwrap")
    ({}, ['actor.limits.processes left out: it holds only under user isolation (one account per agent)'])
    """
    chosen = {k: v for k, v in (limits.model_dump() if limits else {}).items() if v is not None}
    notes = []
    if "processes" in chosen and mode != "user":
        del chosen["processes"]
        notes.append("actor.limits.processes left out: it holds only under user isolation (one account per agent)")
    return chosen, notes


def launcher_arg(chosen: dict[str, int]) -> str:
    """The launcher's argument for `chosen` limits: `RESOURCE=soft:hard` items, comma-separated ("" for none).

    >>> launcher_arg({"memory_mb": 2, "cpu_s": 5})
    'DATA=2097152:2097152,CPU=5:6'
    """
    items = []
    for key, value in chosen.items():
        name, unit = _RESOURCES[key]
        soft = value * unit
        hard = soft + CPU_GRACE_S if name == "CPU" else soft
        items.append(f"{name}={soft}:{hard}")
    return ",".join(items)


def limit_reached(exit_code: int | None, chosen: dict[str, int]) -> str | None:
    """Why the agent's first process died, when a limit says so (the signal the kernel sends for it).

    >>> limit_reached(-signal.SIGXCPU, {"cpu_s": 5})
    'the agent reached its CPU limit (actor.limits.cpu_s: 5)'
    >>> limit_reached(128 + signal.SIGXFSZ, {"file_mb": 1})
    'the agent wrote past its file size limit (actor.limits.file_mb: 1)'
    >>> limit_reached(137, {"cpu_s": 5})[:48]
    'the agent reached its CPU limit, most likely (ki'
    >>> limit_reached(-signal.SIGXFSZ, {}) is None, limit_reached(0, {"cpu_s": 5}) is None
    (True, True)
    """
    def by(sig: int) -> bool:  # killed itself, or a shell or bwrap in front of it says 128 + the signal
        return exit_code in (-sig, 128 + sig)

    if by(signal.SIGXCPU) and "cpu_s" in chosen:
        return f"the agent reached its CPU limit (actor.limits.cpu_s: {chosen['cpu_s']})"
    if by(signal.SIGKILL) and "cpu_s" in chosen:  # it outlived SIGXCPU; the kernel does not say who killed it
        return (f"the agent reached its CPU limit, most likely (killed with SIGKILL, as the kernel does a second past "
                f"actor.limits.cpu_s: {chosen['cpu_s']})")
    if by(signal.SIGXFSZ) and "file_mb" in chosen:
        return f"the agent wrote past its file size limit (actor.limits.file_mb: {chosen['file_mb']})"
    return None
