"""The claim channel: what the agent's final report claims, its cues and atoms, and which atoms the trace grounds."""
