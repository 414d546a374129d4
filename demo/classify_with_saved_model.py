"""Demo step: classify raw sentences with the exported SavedModel, as a serving client would:
only tensorflow and tensorflow_text are imported, none of this project's code."""

import sys

import tensorflow as tf
import tensorflow_text  # noqa: F401 -- registers the tokenizer ops inside the SavedModel

model = tf.saved_model.load(sys.argv[1])
sentences = sys.argv[2:]
outputs = model.signatures["serving_default"](text_a=tf.constant(sentences), text_b=tf.constant([""] * len(sentences)))
for sentence, label, probabilities in zip(sentences, outputs["labels"].numpy(), outputs["probabilities"].numpy()):
    print(f"{sentence!r}: label {label.decode()} (p = {probabilities.max():.3f})")
