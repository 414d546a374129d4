"""Serving: SavedModels that take raw text (tokenization and packing in the graph), token ids or
tf.train.Examples, with heads and signatures defined by the task.

May import `layers` (for `fused`), `models`, `checkpoints`, `tasks` and `tfrecord_tools`; never
`training` or `runners`.
"""
