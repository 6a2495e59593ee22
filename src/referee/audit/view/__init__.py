"""The claim-blind view: what extractors may see of a trace, its hash, and the facts deciding needs of it."""
