"""--precision=bfloat16 exports: the SavedModel computes in bfloat16 (float32 weights), loads, and
agrees with the float32 export within bfloat16's precision; on a CPU without bfloat16
instructions the export says so in a WARNING."""

import numpy as np
import pytest
import tensorflow as tf

from tests.finetuning_fixtures import model_dir  # noqa: F401 -- model_dir: a fixture

SENTENCES = ["the cat sat on the mat .", "peter ran far away from paris .", "a film"]


def _export(model_dir, tmp_path, precision, log):  # noqa: F811
    from keras_bert_impl.serving.export import ExportOptions, build_and_export

    return build_and_export(
        ExportOptions.for_model_dir(
            model_dir,
            tmp_path / precision,
            model_type="sentence_embedding",
            max_seq_length=16,
            precision=precision,
        ),
        log=log,
    )


def test_bfloat16_export_agrees_with_float32_and_warns_without_the_instructions(model_dir, tmp_path, monkeypatch):  # noqa: F811
    import tensorflow_text  # noqa: F401 -- the tokenizer ops the SavedModel uses

    from keras_bert_common import cpu

    (tmp_path / "cpuinfo").write_text("processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n")
    monkeypatch.setattr(cpu, "CPUINFO", str(tmp_path / "cpuinfo"))
    warnings, lines = [], []
    log = type(
        "Log", (), {"__call__": lambda self, m: lines.append(m), "warning": lambda self, m: warnings.append(m)}
    )()
    embeddings = {}
    for precision in ("float32", "bfloat16"):
        served = tf.saved_model.load(_export(model_dir, tmp_path, precision, log))
        embeddings[precision] = served.signatures["serving_default"](text_a=tf.constant(SENTENCES))["embedding"]
        assert embeddings[precision].dtype == tf.float32
    assert len(warnings) == 1 and "--precision=bfloat16" in warnings[0] and "AVX512_BF16" in warnings[0]
    float32, bfloat16 = embeddings["float32"].numpy(), embeddings["bfloat16"].numpy()
    # bfloat16 keeps 8 bits of mantissa (relative error 2**-9 per rounding), through 2 layers.
    np.testing.assert_allclose(bfloat16, float32, rtol=0, atol=0.05 * np.abs(float32).max())
    assert not np.array_equal(bfloat16, float32)  # it did compute in bfloat16
    import keras

    assert keras.mixed_precision.global_policy().name == "float32"  # the policy is put back


def test_an_unknown_precision_is_refused_before_any_work(model_dir, tmp_path):  # noqa: F811
    from keras_bert_common.errors import UsageError

    with pytest.raises(UsageError, match="--precision=float16: use one of float32, bfloat16"):
        _export(model_dir, tmp_path, "float16", print)
    assert not (tmp_path / "float16").exists()


SERVE = """
import json, sys
import numpy as np, tensorflow as tf, tensorflow_text
serve = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
texts = json.loads(sys.argv[2])
out = [serve(text_a=tf.constant(batch))["embedding"].numpy().tolist() for batch in texts]
print(json.dumps(out))
"""


def test_bfloat16_export_names_the_serving_setting_and_it_keeps_the_outputs(model_dir, tmp_path, monkeypatch):  # noqa: F811
    """On a CPU with bfloat16 instructions the export names TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1 for
    the serving process; served with it, the SavedModel gives what it gives without it (within
    bfloat16's precision), call after call at changing shapes."""
    import json
    import subprocess
    import sys

    from keras_bert_common import cpu
    from keras_bert_impl.serving.export import SERVE_BFLOAT16_VARIABLE
    from tests.conftest import subprocess_env

    (tmp_path / "cpuinfo").write_text("processor\t: 0\nflags\t\t: avx512f avx512_bf16 amx_bf16 amx_tile\n")
    monkeypatch.setattr(cpu, "CPUINFO", str(tmp_path / "cpuinfo"))
    lines = []
    exported = _export(model_dir, tmp_path, "bfloat16", lines.append)
    assert any(f"{SERVE_BFLOAT16_VARIABLE}=1" in line for line in lines)
    batches = json.dumps([SENTENCES, SENTENCES[:1], SENTENCES[::-1] * 3, SENTENCES[1:2]])
    outputs = []
    for env in (
        subprocess_env(TF_CPP_MIN_LOG_LEVEL="3"),
        subprocess_env(TF_CPP_MIN_LOG_LEVEL="3", **{SERVE_BFLOAT16_VARIABLE: "1"}),
    ):
        run = subprocess.run(
            [sys.executable, "-c", SERVE, str(exported), batches], env=env, capture_output=True, text=True, timeout=300
        )
        assert run.returncode == 0, run.stderr[-2000:]
        outputs.append(json.loads(run.stdout))
    # Within two bfloat16 roundings (oneDNN may pick another kernel for the cached layout: BERT-base's
    # logits moved by up to 0.0044 in bench/bfloat16_serving_env.py); stale weights would be far off.
    for plain, cached in zip(*outputs):
        plain, cached = np.array(plain), np.array(cached)
        np.testing.assert_allclose(cached, plain, rtol=0, atol=2**-7 * np.abs(plain).max())
