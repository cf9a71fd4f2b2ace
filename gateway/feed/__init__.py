"""The runs' feed: one Workflow Stream subscription per active run, fanned out to every viewer.

`hub` (`RunHub`), `hub_reads` (the thread messages and state its trace events bring).
"""
