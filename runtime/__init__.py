"""Process-level plumbing shared by the worker, the client and the tests (not workflow code)."""
