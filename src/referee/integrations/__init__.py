"""Where referee plugs into other tools: an Inspect AI scorer (`referee.integrations.inspect_scorer`).

Nothing here is imported by the rest of the library; each module imports its tool when it is used.
"""
