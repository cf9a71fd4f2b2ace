"""The live channel: a run's live events (trace items and deltas) outside workflow history (opt-in)."""
