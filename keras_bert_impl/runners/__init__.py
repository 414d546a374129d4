"""Runners: one library function per command-line tool, named after it (`run_pretraining`,
`run_classifier`, `run_squad`, `run_ner`, `run_swag`, `extract_features`), plus `finetuning`,
what the fine-tuning runners share.

The absl shells in `keras_bert_cli` only turn flags into options and call these. May import every
other package; nothing imports it.
"""
