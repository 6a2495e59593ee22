"""Helpers every part of referee shares: files, folder trees, JSON, registries, locks, signals, the LLM client."""
