"""The auditor's first stage: which files to read, how they are cut and streamed, and the readers of each format."""

from referee.core.lazy import lazy_exports

__all__ = ["read_traces", "trace_readers", "iter_inputs", "InputOptions", "expand_args"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "read_traces": "readers",
    "trace_readers": "readers",
    "iter_inputs": "inputs",
    "InputOptions": "inputs",
    "expand_args": "inputs",
})
