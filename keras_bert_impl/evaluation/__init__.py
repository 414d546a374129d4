"""Evaluation: the official metrics (GLUE's, SQuAD v1.1/v2.0's evaluate scripts, conlleval's
entity F1) and SQuAD's logits-to-answer post-processing, in numpy and plain Python.

May import `tfrecord_tools` (atomic output); nothing else of the project, no TensorFlow.
"""
