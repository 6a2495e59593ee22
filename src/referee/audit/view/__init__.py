"""The claim-blind view: what extractors may see of a trace, its hash, and the facts deciding needs of it."""

from referee.core.lazy import lazy_exports

__all__ = ["ClaimBlindView", "ViewStep", "ViewObservation", "build_view", "canonical_json", "VIEW_VERSION", "ViewFacts",
           "is_terminal", "typed_atoms"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "ClaimBlindView": "blind",
    "ViewStep": "blind",
    "ViewObservation": "blind",
    "build_view": "blind",
    "canonical_json": "blind",
    "VIEW_VERSION": "blind",
    "ViewFacts": "facts",
    "is_terminal": "terminal",
    "typed_atoms": "atoms",
})
