"""Evaluations: pydantic-evals datasets read and checked, and each case scored (`score_eval_case`)."""
