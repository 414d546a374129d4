#!/usr/bin/env bash
# The main job end to end on the data bundled in demo/data; everything lands in demo_output/.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
OUT=demo_output
rm -rf "$OUT"
mkdir -p "$OUT"
export TF_CPP_MIN_LOG_LEVEL=3  # hides the "no CUDA device" noise of CPU-only machines

echo "== 1. A WordPiece vocabulary learned from the bundled corpus (tensorflow-text)"
$PY tfrecord_tools/build_vocab.py --input_file=demo/data/corpus.txt,demo/data/topics/train.tsv --output_file="$OUT/vocab.txt" \
    --vocab_size=400 --min_count=1 --alsologtostderr 2>&1 | grep -E "wrote|error"

echo "== 2. Pretraining TFRecords (masked LM + next sentence), Google's flags and schema"
$PY tfrecord_tools/create_pretraining_data.py --input_file=demo/data/corpus.txt \
    --output_file="$OUT/pretrain-0.tfrecord,$OUT/pretrain-1.tfrecord" --vocab_file="$OUT/vocab.txt" \
    --max_seq_length=64 --max_predictions_per_seq=10 --dupe_factor=5 2>&1 | grep -E "instances|tokens|fraction|share|wrote|error"

echo "== 3. A tiny BERT from a config, saved as a Google-format checkpoint, loaded back, encoding two sentences"
$PY demo/encode_sentences.py --vocab_file="$OUT/vocab.txt" --output_dir="$OUT/tiny_bert"

echo "== 4. Pretraining the tiny BERT for a short while (masked LM + next sentence, checkpoints, TensorBoard)"
$PY run_pretraining.py --bert_config_file="$OUT/tiny_bert/bert_config.json" \
    --input_file="$OUT/pretrain-*.tfrecord" --output_dir="$OUT/pretraining" --do_train --do_eval \
    --max_seq_length=64 --max_predictions_per_seq=10 --train_batch_size=16 --eval_batch_size=16 \
    --learning_rate=5e-3 --num_train_steps=150 --num_warmup_steps=15 --save_checkpoints_steps=50 \
    --iterations_per_loop=50 --max_eval_steps=5 2>&1 | grep -E "step [0-9]+/|wrote|error|Error" | sed 's/^.*\] //'
echo "eval_results.txt:"
sed 's/^/  /' "$OUT/pretraining/eval_results.txt"

echo "== 5. Fine-tuning the pretrained tiny BERT on the bundled topic set (run_classifier), exporting a SavedModel"
$PY run_classifier.py --task_name=tsv --label_names=0,1 --data_dir=demo/data/topics --vocab_file="$OUT/vocab.txt" \
    --bert_config_file="$OUT/tiny_bert/bert_config.json" --init_checkpoint="$OUT/pretraining" \
    --output_dir="$OUT/topics" --do_train --do_eval --max_seq_length=32 --train_batch_size=6 --eval_batch_size=6 \
    --learning_rate=5e-3 --num_train_epochs=30 --iterations_per_loop=30 --export_dir="$OUT/topics_saved_model" 2>&1 \
    | grep -E "eval on|exported|error|Error" | sed 's/^.*\] //'

echo "== 6. Serving raw text from the SavedModel (a client importing only tensorflow + tensorflow_text)"
$PY demo/classify_with_saved_model.py "$OUT/topics_saved_model" \
    "The fishing boats come back at noon." "The baker puts the bread in the oven." 2>&1 | grep -v -E "^WARNING|^I0000|cuInit"

echo "== 7. Fine-tuning on the bundled SQuAD 2.0-style set (run_squad), official evaluation"
$PY run_squad.py --vocab_file="$OUT/vocab.txt" --bert_config_file="$OUT/tiny_bert/bert_config.json" \
    --init_checkpoint="$OUT/pretraining" --do_train --train_file=demo/data/squad/train-v2.0.json --do_predict \
    --predict_file=demo/data/squad/dev-v2.0.json --version_2_with_negative --max_seq_length=64 --doc_stride=32 \
    --max_query_length=16 --train_batch_size=8 --predict_batch_size=8 --learning_rate=5e-3 --num_train_epochs=40 \
    --iterations_per_loop=40 --output_dir="$OUT/squad" 2>&1 | grep -E "eval:|error|Error" | sed 's/^.*\] //'
echo "predictions.json:"
sed 's/^/  /' "$OUT/squad/predictions.json"
echo "demo finished: everything is in $OUT/"
