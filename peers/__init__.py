"""Peers: independent reference implementations (tf-models-official's encoder and its pretraining
step, run the way Model Garden's own trainers run them) that tests and benchmarks compare ours
against. Never imported by the library, the CLI or the data path; may import anything installed."""
