"""Agents acting on their own: a schedule's firing asks its session, a webhook's signed POST."""
