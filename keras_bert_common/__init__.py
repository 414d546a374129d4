"""The bottom package: what every other package shares, and nothing else.

`errors` (`UsageError`, `Interrupted`: what the tools print as one line), `files` (the one atomic
writer, input file patterns, the checks every tool runs before heavy work), `stop` (Ctrl-C and
SIGTERM requests and their safe points), `progress` (rate and ETA lines), `cpu` (whether
bfloat16 runs natively) and `lean_import` (TensorFlow without Keras, for data workers; Keras
without its optional extras, for the tools).
Imported by the data path (`tfrecord_tools`), the library (`keras_bert_impl`) and the tools
(`keras_bert_cli`); imports only the standard library (and TensorFlow, lazily: its file system for
remote paths, and `lean_import`).
"""
