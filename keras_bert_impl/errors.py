"""Errors with one-line messages that name the file at fault and the fix."""


class BertConfigError(ValueError):
    """A `bert_config.json` (or config dict) that cannot describe a BERT model."""


class CheckpointMismatchError(ValueError):
    """A checkpoint whose weights do not fit the model built from the config."""
