"""The claim channel: what the agent's final report claims, its cues and atoms, and which atoms the trace grounds."""

from referee.core.lazy import lazy_exports

__all__ = ["RulesClaimReader", "LLMClaimReader", "ground_in"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "RulesClaimReader": "reader",
    "LLMClaimReader": "reader",
    "ground_in": "grounding",
})
