"""Layers: the building blocks of BERT (embeddings, self-attention, transformer block, pooler,
masked-LM head, activations, dropout with 16-bit draws).

Each layer stores its `__init__` arguments and returns them from `get_config()`. Imports only
Keras and TensorFlow: never the encoder, the models or anything above them.
"""
