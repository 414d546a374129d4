"""Checkpoints: reading and writing weights in other layouts.

`google_checkpoint` holds the one name table between Google's TF1 names and our weights (every
other format converts through Google's names), `name_table` the lookup the other formats' tables
share, `hf_weights` Hugging Face directories, `keras_hub_weights` keras-hub presets, and
`init_checkpoint` initialises any task model from Google's checkpoints or ours, with the checks
that run before training. May import `models` and `errors`.
"""
