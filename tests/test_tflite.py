"""TFLite: the `serve_ids` signature converted with tf.lite.TFLiteConverter gives the SavedModel's
outputs (float32 within 1e-4; dynamic-range int8 close and smaller), at any batch and length."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_common.errors import UsageError
from keras_bert_impl.serving.export import export_saved_model
from keras_bert_impl.serving.tflite import TFLiteModel, convert_to_tflite
from keras_bert_impl.tasks.registry import create_task
from tests.conftest import REPO_ROOT, randomize_weights, subprocess_env, tiny_bert_config
from tests.finetuning_fixtures import VOCAB, model_dir  # noqa: F401 -- model_dir: a fixture

LENGTH = 16


@pytest.fixture(scope="module")
def saved_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tflite")
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    config = tiny_bert_config(len(VOCAB))
    exported = {}
    for name, model_type, settings in (
        ("encoder", "encoder", {}),
        ("classifier", "classifier", {"label_names": ["a", "b", "c"]}),
        ("mean_embedding", "sentence_embedding", {"pooling": "mean"}),  # a mask broadcast over the hidden axis
        ("max_embedding", "sentence_embedding", {"pooling": "max", "normalize_embeddings": True}),
    ):
        task = create_task(model_type, config, LENGTH, **settings)
        model = randomize_weights(task.build_model(), seed=len(exported), scale=0.2)
        export_saved_model(model, task, str(root / "vocab.txt"), True, str(root / name))
        exported[name] = root / name
    return root, exported


def _ids(batch, length, seed):
    rng = np.random.default_rng(seed)
    input_ids = rng.integers(5, len(VOCAB), (batch, length)).astype(np.int32)
    lengths = rng.integers(2, length + 1, batch)
    lengths[0] = length
    input_mask = (np.arange(length)[None, :] < lengths[:, None]).astype(np.int32)
    segment_ids = ((np.arange(length)[None, :] >= lengths[:, None] // 2) & (input_mask > 0)).astype(np.int32)
    return {"input_ids": input_ids * input_mask, "input_mask": input_mask, "segment_ids": segment_ids}


@pytest.mark.parametrize("model_type", ["encoder", "classifier", "mean_embedding", "max_embedding"])
def test_float32_matches_the_saved_model(saved_models, tmp_path, model_type):
    _, exported = saved_models
    path = tmp_path / f"{model_type}.tflite"
    convert_to_tflite(exported[model_type], path)
    lite = TFLiteModel(path)
    signature = tf.saved_model.load(str(exported[model_type])).signatures["serve_ids"]
    for batch, length, seed in ((3, 7, 0), (1, LENGTH, 1), (5, 11, 2)):  # the interpreter resizes per call
        inputs = _ids(batch, length, seed)
        expected = {name: value.numpy() for name, value in signature(**map_to_tensors(inputs)).items()}
        got = lite(**inputs)
        assert sorted(got) == sorted(expected)
        for name, value in expected.items():
            if value.dtype == object:
                np.testing.assert_array_equal(got[name], value)
            else:
                np.testing.assert_allclose(got[name], value, atol=1e-4, rtol=0, err_msg=name)


def map_to_tensors(inputs):
    return {name: tf.constant(value) for name, value in inputs.items()}


def test_dynamic_range_is_smaller_and_close(saved_models, tmp_path):
    _, exported = saved_models
    float_size = convert_to_tflite(exported["classifier"], tmp_path / "f.tflite")
    int8_size = convert_to_tflite(exported["classifier"], tmp_path / "q.tflite", "dynamic_range")
    # The converter stores weight matrices of 1024 values or more as int8, 3 of their 4 bytes gone
    # (at most; some stay float where their op has no int8-weight kernel, and scales are added).
    shapes = [shape for _, shape in tf.train.list_variables(str(exported["classifier"] / "variables" / "variables"))]
    saving = sum(3 * int(np.prod(shape)) for shape in shapes if np.prod(shape) >= 1024)
    assert 0.75 * saving < float_size - int8_size <= saving
    inputs = _ids(4, 9, 3)
    reference = TFLiteModel(tmp_path / "f.tflite")(**inputs)["probabilities"]
    quantized = TFLiteModel(tmp_path / "q.tflite")(**inputs)["probabilities"]
    assert not np.array_equal(quantized, reference)  # the weights really changed ...
    np.testing.assert_allclose(quantized, reference, atol=0.02)  # ... by int8 rounding only


def test_litert_runs_the_models_where_installed_and_tf_lite_otherwise(saved_models, tmp_path, monkeypatch):
    """LiteRT's interpreter, when installed, serves the files as TensorFlow's own does: float32 to
    1e-5, int8 to 1e-3 (each quantizes the activations itself, at run time)."""
    pytest.importorskip("ai_edge_litert")
    _, exported = saved_models
    convert_to_tflite(exported["classifier"], tmp_path / "f.tflite")
    convert_to_tflite(exported["classifier"], tmp_path / "q.tflite", "dynamic_range")
    litert = {name: TFLiteModel(tmp_path / f"{name}.tflite") for name in "fq"}
    for module in ("ai_edge_litert", "ai_edge_litert.interpreter"):  # as where it is not installed
        monkeypatch.setitem(sys.modules, module, None)
    plain = {name: TFLiteModel(tmp_path / f"{name}.tflite") for name in "fq"}
    assert {model.runtime for model in litert.values()} == {"ai_edge_litert"}
    assert {model.runtime for model in plain.values()} == {"tf.lite"}
    for batch, length, seed in ((1, 5, 5), (4, 9, 6)):
        inputs = _ids(batch, length, seed)
        for name, tolerance in (("f", 1e-5), ("q", 1e-3)):
            np.testing.assert_allclose(
                litert[name](**inputs)["logits"], plain[name](**inputs)["logits"], atol=tolerance, rtol=0
            )


def test_export_command_writes_the_tflite_file_and_checks_it_first(model_dir, tmp_path):  # noqa: F811
    command = [
        sys.executable,
        os.path.join(REPO_ROOT, "export_saved_model.py"),
        f"--vocab_file={model_dir}/vocab.txt",
        f"--bert_config_file={model_dir}/bert_config.json",
        f"--init_checkpoint={model_dir}/bert_model.ckpt",
        "--max_seq_length=16",
    ]

    def export(*flags):
        run = subprocess.run([*command, *flags], capture_output=True, text=True, env=subprocess_env(), timeout=300)
        return run.returncode, run.stderr.strip().splitlines()[-1], run.stderr

    (tmp_path / "taken").mkdir()
    code, last, stderr = export(f"--export_dir={tmp_path}/a", f"--tflite_file={tmp_path}/taken")
    assert code == 1 and "Traceback" not in stderr
    assert f"{tmp_path}/taken: is a directory; --tflite_file names a file" in last
    assert not (tmp_path / "a").exists()  # checked before the export
    code, last, stderr = export(
        f"--export_dir={tmp_path}/b", f"--tflite_file={tmp_path}/b.tflite", "--tflite_quantization=dynamic_range"
    )
    assert code == 0, stderr[-3000:]
    assert "dynamic_range" in last
    outputs = TFLiteModel(tmp_path / "b.tflite")(**_ids(2, 5, 4))
    assert outputs["pooled_output"].shape == (2, 32)
    # Another export may not overwrite that file without --force (checked before the export).
    code, last, stderr = export(f"--export_dir={tmp_path}/c", f"--tflite_file={tmp_path}/b.tflite")
    assert code == 1 and "Traceback" not in stderr
    assert last.endswith(
        f"{tmp_path}/b.tflite: already exists and was not converted from {tmp_path}/c; pass --force to replace it "
        "(or choose another --tflite_file)"
    ), last
    assert not (tmp_path / "c").exists()
    # The same command run again replaces its own file: the export's record names it.
    code, last, stderr = export(
        f"--export_dir={tmp_path}/b", f"--tflite_file={tmp_path}/b.tflite", "--tflite_quantization=dynamic_range"
    )
    assert code == 0 and "dynamic_range" in last, stderr[-3000:]


def test_an_existing_tflite_file_is_replaced_by_its_own_export_or_with_force(tmp_path, monkeypatch):
    """The rule of `check_tflite_file`, on export records: only the export that recorded converting
    the file (the same command run again) or --force replaces it, and never an input."""
    from keras_bert_impl.serving.export import EXPORT_RECORD, check_tflite_file, record_tflite_file

    export_dir, tflite = tmp_path / "export", tmp_path / "model.tflite"
    export_dir.mkdir()
    (export_dir / EXPORT_RECORD).write_text('{"source": "init_checkpoint:/runs/a", "fingerprint": "f"}')
    check_tflite_file(str(tflite), str(export_dir), False, "init_checkpoint:/runs/a", {})  # no file yet
    tflite.write_bytes(b"someone else's")
    with pytest.raises(FileExistsError, match="already exists and was not converted from"):
        check_tflite_file(str(tflite), str(export_dir), False, "init_checkpoint:/runs/a", {})
    check_tflite_file(str(tflite), str(export_dir), True, "init_checkpoint:/runs/a", {})  # --force
    monkeypatch.chdir(tmp_path)
    record_tflite_file(str(export_dir), "model.tflite")  # a relative name, recorded absolute
    assert '"fingerprint": "f"' in (export_dir / EXPORT_RECORD).read_text()
    check_tflite_file(str(tflite), str(export_dir), False, "output_dir:/runs/a", {})  # the same source
    with pytest.raises(FileExistsError):
        check_tflite_file(str(tflite), str(export_dir), False, "init_checkpoint:/runs/b", {})
    with pytest.raises(UsageError, match="replacing it would delete that"):
        check_tflite_file(str(tflite), str(export_dir), True, "init_checkpoint:/runs/a", {"--vocab_file": str(tflite)})
    # A second file from the same export (float32 and int8 beside each other): both stay its own.
    (tmp_path / "int8.tflite").write_bytes(b"converted")
    record_tflite_file(str(export_dir), str(tmp_path / "int8.tflite"))
    for name in ("model.tflite", "int8.tflite"):
        check_tflite_file(str(tmp_path / name), str(export_dir), False, "init_checkpoint:/runs/a", {})


def test_an_export_replacing_its_own_keeps_the_tflite_files_it_converted(tmp_path):
    """New weights from the same source replace the export and keep its record of converted files,
    so the command that converts them again may replace them; another source's export does not."""
    from keras_bert_impl.serving.export import check_tflite_file, record_tflite_file

    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    task = create_task("encoder", tiny_bert_config(len(VOCAB)), LENGTH)
    export_dir, tflite = str(tmp_path / "export"), str(tmp_path / "model.tflite")
    for seed in (1, 2):  # the run trained on: other weights
        model = randomize_weights(task.build_model(), seed=seed, scale=0.2)
        export_saved_model(model, task, str(tmp_path / "vocab.txt"), True, export_dir, source="output_dir:/runs/a")
        if seed == 1:
            record_tflite_file(export_dir, tflite)
            (tmp_path / "model.tflite").write_bytes(b"converted")
    check_tflite_file(tflite, export_dir, False, "output_dir:/runs/a", {})
    export_saved_model(model, task, str(tmp_path / "vocab.txt"), True, export_dir, force=True, source="output_dir:/b")
    with pytest.raises(FileExistsError):
        check_tflite_file(tflite, export_dir, False, "output_dir:/b", {})
