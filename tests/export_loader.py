"""Runs in a fresh process that imports only tensorflow and tensorflow_text: loads each exported
SavedModel, calls its signatures on the inputs in INPUTS.npz and saves every output."""

import json
import sys

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401 -- registers the tokenizer ops the graph uses

request = json.loads(sys.argv[1])
results = {}
for name, job in request.items():
    model = tf.saved_model.load(job["dir"])
    for signature, inputs in job["calls"].items():
        function = model.signatures[signature]
        tensors = {}
        for key, value in inputs.items():
            if key == "examples":  # serialized protos travel as hex
                tensors[key] = tf.constant([bytes.fromhex(item) for item in value])
            else:
                array = np.array(value)
                tensors[key] = tf.constant(array.astype(np.int32) if array.dtype.kind in "iu" else value)
        for key, value in function(**tensors).items():
            results[f"{name}/{signature}/{key}"] = value.numpy()
np.savez(sys.argv[2], **results)
print(
    "loaded",
    sorted(request),
    "modules:",
    sorted(m for m in sys.modules if m.startswith(("keras_bert_impl", "tfrecord_tools"))),
)
