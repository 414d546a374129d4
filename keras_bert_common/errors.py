"""`UsageError`: a problem with the input, the flags or the environment that the user can fix.

Its message is one line naming the file or flag at fault and the fix; the command-line tools print
it as `TOOL: error: ...` and exit 1. Any other exception is a bug, reported as an internal error.
`Interrupted` is not an error: a Ctrl-C or SIGTERM, after which the tools exit 130 or 143.
"""


class UsageError(ValueError):
    """Bad input, flags or environment; the message says which and what to do."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM: `signal_name` says which, the message what was kept and how to go on."""

    def __init__(self, signal_name="SIGINT", message="interrupted"):
        super().__init__(message)
        self.signal_name = signal_name
        self.message = message

    def __str__(self):
        return self.message
