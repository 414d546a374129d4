"""The command-line tools: thin absl shells that turn flags into options and call one library
function each (`keras_bert_impl.runners`, `tfrecord_tools`).

`app.run` gives every tool the same behaviour (quiet logs, one-line errors, clean stops on
Ctrl-C and SIGTERM); `flags` holds the flags they share. The repository's `run_*.py` and
`tfrecord_tools/*.py` scripts, and the installed console scripts, all start these. May import
everything; nothing imports it.
"""
