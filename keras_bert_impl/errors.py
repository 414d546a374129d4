"""Errors with one-line messages that name the file at fault and the fix.

The command-line tools print these as one line and exit non-zero; anything else is a bug.
"""


class BertConfigError(ValueError):
    """A `bert_config.json` (or config dict) that cannot describe a BERT model."""


class CheckpointMismatchError(ValueError):
    """A checkpoint whose weights do not fit the model built from the config."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM: `signal_name` says which, the message what was kept and how to go on."""

    def __init__(self, signal_name="SIGINT", message="interrupted"):
        super().__init__(message)
        self.signal_name = signal_name
        self.message = message

    def __str__(self):
        return self.message
