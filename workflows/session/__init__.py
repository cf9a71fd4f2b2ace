"""The `AgentSession` workflow's room: the session and the components it owns (`agent_session.AgentSession`).

Nothing here imports `workflows.run`: a session and its runs talk through Temporal only.
"""
