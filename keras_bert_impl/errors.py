"""Errors with one-line messages that name the file at fault and the fix.

All are `UsageError`s (`tfrecord_tools.errors`, the data path's): the command-line tools print them
as one line and exit 1; anything else is a bug.
"""

from tfrecord_tools.errors import UsageError


class BertConfigError(UsageError):
    """A `bert_config.json` (or config dict) that cannot describe a BERT model."""


class CheckpointMismatchError(UsageError):
    """A checkpoint whose weights do not fit the model built from the config."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM: `signal_name` says which, the message what was kept and how to go on."""

    def __init__(self, signal_name="SIGINT", message="interrupted"):
        super().__init__(message)
        self.signal_name = signal_name
        self.message = message

    def __str__(self):
        return self.message
