"""Training: the `Trainer` (one strategy-aware loop for every runner) and its collaborators
(`run_checkpoints`, `summaries`, `loop_progress`, `best_checkpoint`), optimizers and BERT's
schedule, tf.distribute strategies, tf.data input pipelines and their length buckets
(`bucketing`), the best checkpoint and early stopping (`best_checkpoint`), and `run_setup`, the one
set-up and option base shared by pretraining and fine-tuning.

The Trainer consumes only the `tasks.base.Task` contract. May import `layers` (for `fused`), `models`, `checkpoints`,
`tasks` and `tfrecord_tools`; never `serving` or `runners`.
"""
