"""The room of `ScheduledAsk`: one schedule's firing."""
