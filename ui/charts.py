"""Altair, imported through this one module only.

Altair imports narwhals, whose modules import each other in a cycle: two page scripts importing it at
the same moment (two visitors on a fresh server) made Python raise `_DeadlockError` in one of them
(seen once in a CI run). Through this module the second script waits on this module's import lock
until the first has finished, then finds altair whole.
"""

import altair as alt

__all__ = ["alt"]
