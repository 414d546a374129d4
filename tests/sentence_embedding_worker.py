"""The reference side of tests/test_sentence_embedding_interop.py, run by `.venv-interop`'s python
(torch + transformers, none of our code): sentence-transformers' embeddings of a model directory
computed as that library defines them, with transformers' AutoTokenizer and AutoModel and the
pooling in numpy (mean over the attention mask, count clamped at 1e-9; then, when modules.json
lists a Normalize module, x / max(||x||, 1e-12)).

    python tests/sentence_embedding_worker.py MODEL_DIR SENTENCES.json OUTPUT.npz

Everything is read from MODEL_DIR: the hub is never asked.
"""

import json
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402


def main(model_dir, sentences_path, output_path):
    with open(sentences_path, encoding="utf-8") as reader:
        sentences = json.load(reader)
    with open(os.path.join(model_dir, "modules.json"), encoding="utf-8") as reader:
        modules = [module["type"] for module in json.load(reader)]
    with open(os.path.join(model_dir, "1_Pooling", "config.json"), encoding="utf-8") as reader:
        pooling = json.load(reader)
    assert pooling["pooling_mode_mean_tokens"], "this reference implements mean pooling"
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    model = transformers.AutoModel.from_pretrained(model_dir, local_files_only=True)
    model.eval()
    batch = tokenizer(sentences, padding=True, truncation=True, max_length=128, return_tensors="pt")
    with torch.no_grad():
        tokens = model(**batch).last_hidden_state.numpy().astype(np.float64)  # [B, T, H]
    mask = batch["attention_mask"].numpy().astype(np.float64)[:, :, None]
    embeddings = (tokens * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
    normalized = any(kind.endswith("Normalize") for kind in modules)
    if normalized:
        embeddings = embeddings / np.maximum(np.linalg.norm(embeddings, axis=-1, keepdims=True), 1e-12)
    np.savez(output_path, embeddings=embeddings, input_ids=batch["input_ids"].numpy(), normalized=normalized)


if __name__ == "__main__":
    main(*sys.argv[1:4])
