"""`exclude_if` tests for optional fields left out of the JSON while unset.

Only builtins, never a function of a product module: pydantic-core does not show the garbage
collector its reference to an `exclude_if` callable, so a lambda there (whose globals are its
module's) would keep the module, its classes and their schemas alive for good. Outside the sandbox
that is once per process; in Temporal's sandbox, which imports the product's modules afresh for
every workflow run, it kept each run's copy (about 10,000 objects) until the process ended
(`tests/replay/test_replay.py` checks that sandboxed runs' modules are freed).
"""

from __future__ import annotations

import operator
from functools import partial

IS_NONE = partial(operator.is_, None)
"""True for None: the field is left out of the JSON while unset."""

IS_EMPTY = operator.not_
"""True for `0`, `0.0`, `[]`, `""` and None: the field is left out while zero or empty."""
