"""The served graph is one that TensorFlow's graph optimizer fuses on a CPU: every Dense map of the
encoder runs as one oneDNN `_FusedMatMul` (MatMul, BiasAdd and GELU in one kernel), with no
tensordot reshapes between them, in float32 and bfloat16 exports alike."""

import collections
import dataclasses
import os
import platform

import numpy as np
import pytest
import tensorflow as tf

from tests.finetuning_fixtures import model_dir  # noqa: F401 -- model_dir: a fixture

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64")
    or os.environ.get("TF_ENABLE_ONEDNN_OPTS") == "0"
    or bool(tf.config.list_physical_devices("GPU")),
    reason="grappler's oneDNN fusions run on x86 CPUs with oneDNN on (TensorFlow's default there)",
)


def _executed_ops(saved_model_dir, length):
    """{op type: count} of the ops one `serve_ids` call runs, after grappler (TF1 session trace)."""
    import tensorflow_text  # noqa: F401 -- the tokenizer ops the SavedModel holds

    with tf.Graph().as_default() as graph, tf.compat.v1.Session(graph=graph) as session:
        meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], str(saved_model_dir))
        signature = meta.signature_def["serve_ids"]
        ids = np.arange(5, 5 + length)[None, :] % 20 + 5
        feed = {
            signature.inputs["input_ids"].name: ids,
            signature.inputs["input_mask"].name: np.ones_like(ids),
            signature.inputs["segment_ids"].name: np.zeros_like(ids),
        }
        options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
        metadata = tf.compat.v1.RunMetadata()
        session.run(signature.outputs["logits"].name, feed, options=options, run_metadata=metadata)
    ops = collections.Counter()
    for device in metadata.step_stats.dev_stats:
        for node in device.node_stats:
            if " = " in node.timeline_label:
                ops[node.timeline_label.split(" = ")[1].split("(")[0]] += 1
    return ops


@pytest.mark.parametrize("hidden_act", ["gelu", "gelu_exact"])
@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_every_dense_map_runs_as_one_fused_onednn_matmul(model_dir, tmp_path, precision, hidden_act):  # noqa: F811
    import shutil

    from keras_bert_common import cpu
    from keras_bert_impl.models.bert_config import BertConfig
    from keras_bert_impl.serving.export import ExportOptions, build_and_export

    if precision == "bfloat16" and "avx512f" not in (cpu.cpu_flags() or set()):
        pytest.skip("grappler fuses bfloat16 matmuls only where oneDNN runs bfloat16 (AVX512F and up)")
    # The fixture's weights under either GELU: tanh (Google's "gelu") or erf (MiniLM's "gelu_exact").
    source = tmp_path / "model"
    shutil.copytree(model_dir, source)
    config = dataclasses.replace(BertConfig.from_json_file(str(source / "bert_config.json")), hidden_act=hidden_act)
    config.to_json_file(str(source / "bert_config.json"))
    exported = build_and_export(
        ExportOptions.for_model_dir(
            source,
            tmp_path / precision,
            model_type="classifier",
            label_names=["a", "b"],
            max_seq_length=16,
            precision=precision,
            allow_random_weights=True,  # the fixture's checkpoint is an encoder's; a head's values do not matter here
        ),
        log=type("Log", (), {"__call__": lambda self, m: None, "warning": lambda self, m: None})(),
    )
    ops = _executed_ops(exported, length=7)
    # Per layer: query, key, value, attention output, intermediate (with GELU), output; then the
    # pooler and the classifier.
    dense_maps = 6 * config.num_hidden_layers + 2
    fused = sum(count for op, count in ops.items() if "FusedMatMul" in op)
    assert fused == dense_maps, ops
    assert not [op for op in ops if op.endswith("MatMul") and "Fused" not in op and "Batch" not in op], ops
    # No separate bias or GELU kernels, and no tensordot shape arithmetic (Prod, GatherV2 per map).
    assert ops["BiasAdd"] == 0 and ops["Tanh"] == 0 and ops["Erf"] == 0, ops
    assert ops["Prod"] <= 1, ops
