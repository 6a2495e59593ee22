"""JSON read from a user's file in bounded memory and depth: JSONL, concatenated or pretty JSON, one big array."""
