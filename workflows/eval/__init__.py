"""The `EvalRun` workflow: an evaluation's cases as child runs, scored (`workflows.eval.eval_run`)."""
