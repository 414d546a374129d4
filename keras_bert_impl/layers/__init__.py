"""Building blocks of BERT: embeddings, attention, transformer block, pooler, heads."""
