"""The typed client: `Runs`, `Sessions`, their handles, input checks and the public API description."""
