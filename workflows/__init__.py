"""Temporal workflows. Deterministic code only: I/O happens in `activities/`.

`workflows.run.react_run.ReActRun` and `workflows.session.agent_session.AgentSession`. This package
module imports neither: the workflow sandbox re-imports a workflow's module for every
run, and a run should not pay for importing the other workflow too.
"""
