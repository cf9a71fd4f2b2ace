"""The `ReActRun` workflow's room: the run and the components it owns (`react_run.ReActRun`).

Nothing here imports `workflows.session`: a run and its session talk through Temporal only.
"""
