"""Layers: the building blocks of BERT (embeddings, self-attention, transformer block, pooler,
masked-LM head, activations, dropout with 16-bit draws, layer normalization, sentence pooling,
the feature-based approach's layer mix) and the XLA-fused elementwise kernels they use (`fused`:
GELU, LayerNorm, and the softmax cross-entropy of tasks; with the dtype rule for an XLA pass on a CPU).

Each layer stores its `__init__` arguments and returns them from `get_config()`. Imports only
Keras and TensorFlow: never the encoder, the models or anything above them.
"""
