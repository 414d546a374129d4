"""Errors with one-line messages that name the file at fault and the fix.

All are `UsageError`s (`keras_bert_common.errors`, the data path's): the command-line tools print them
as one line and exit 1; anything else is a bug. `Interrupted` (Ctrl-C, SIGTERM) is the data path's.
"""

from keras_bert_common.errors import Interrupted, UsageError

__all__ = ["BertConfigError", "CheckpointMismatchError", "Interrupted", "UsageError"]


class BertConfigError(UsageError):
    """A `bert_config.json` (or config dict) that cannot describe a BERT model."""


class CheckpointMismatchError(UsageError):
    """A checkpoint whose weights do not fit the model built from the config."""
