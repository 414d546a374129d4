"""Demo step: semantic search with the exported sentence-embedding SavedModel, as a serving client
would (only tensorflow and tensorflow_text are imported, none of this project's code): every
line of a text file is embedded once; each query returns the lines nearest in meaning.

    python demo/semantic_search.py SAVED_MODEL CORPUS.txt "query" ["query" ...]
"""

import sys

import tensorflow as tf
import tensorflow_text  # noqa: F401 -- registers the tokenizer ops inside the SavedModel

TOP_K = 2

embed = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
with open(sys.argv[2], encoding="utf-8") as reader:
    lines = [line.strip() for line in reader if line.strip()]
corpus = tf.math.l2_normalize(embed(text_a=tf.constant(lines))["embedding"], axis=-1)  # [N, H]
queries = sys.argv[3:]
found = tf.math.l2_normalize(embed(text_a=tf.constant(queries))["embedding"], axis=-1)  # [Q, H]
scores, indices = tf.math.top_k(tf.matmul(found, corpus, transpose_b=True), k=TOP_K)  # cosine similarity
for query, row_scores, row_indices in zip(queries, scores.numpy(), indices.numpy()):
    print(f"{query!r}")
    for score, index in zip(row_scores, row_indices):
        print(f"   {score:.3f}  {lines[index]}")
