"""`UsageError`: a problem with the input, the flags or the environment that the user can fix.

Its message is one line naming the file or flag at fault and the fix; the command-line tools print
it as `TOOL: error: ...` and exit 1. Any other exception is a bug, reported as an internal error.
"""


class UsageError(ValueError):
    """Bad input, flags or environment; the message says which and what to do."""
