#!/usr/bin/env bash
# The main job end to end on the data bundled in demo/data; everything lands in demo_output/.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
OUT=demo_output
rm -rf "$OUT"
mkdir -p "$OUT"
export TF_CPP_MIN_LOG_LEVEL=2

echo "== 1. A tiny BERT from a config, saved as a Google-format checkpoint, loaded back, encoding two sentences"
$PY demo/encode_sentences.py --corpus=demo/data/corpus.txt --output_dir="$OUT/tiny_bert"
