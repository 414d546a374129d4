"""The ONNX Runtime side of bench/onnx_serving_bench.py, run by `.venv-interop`'s python (torch,
transformers, onnxruntime; none of our code, no TensorFlow).

    python bench/onnx_runtime_worker.py HF_DIR WORK_DIR INPUTS.npz THREADS

As a user would: transformers loads HF_DIR (our convert_checkpoint.py output), `torch.onnx.export`
writes it with dynamic batch and length, `onnxruntime.transformers.optimizer` fuses it (attention,
LayerNorm, GELU: model_type "bert"), and `quantize_dynamic` makes the int8 model from the fused
one. Then it answers timing requests, one JSON line each on stdin -> one JSON line on stdout:
{"workload": NAME, "repeats": N} -> {"variant": median seconds per call}, NAME one of the
workloads in INPUTS.npz (its calls' arrays as "NAME/CALL/input_ids", [B, T] each). {"logits": true}
instead returns every variant's logits of the first call of each workload (for the agreement check).
"""

import json
import os
import statistics
import sys
import time

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from onnxruntime.quantization import QuantType, quantize_dynamic  # noqa: E402
from onnxruntime.transformers import optimizer  # noqa: E402

NAMES = ("input_ids", "attention_mask", "token_type_ids")


def export(hf_dir, work_dir):
    """ONNX files: fused float32 and dynamic int8; returns {variant: path} and the export seconds."""
    # Eager attention: the graph pattern onnxruntime's BERT fusion recognises (exported from
    # transformers' default SDPA attention, no Attention node is fused).
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        hf_dir, local_files_only=True, attn_implementation="eager"
    )
    model.eval()
    config = model.config
    raw = os.path.join(work_dir, "model.onnx")
    example = tuple(torch.ones((2, 16), dtype=torch.int64) for _ in NAMES)
    batch, length = "batch", "sequence"
    torch.onnx.export(
        model,
        example,
        raw,
        input_names=list(NAMES),
        output_names=["logits"],
        dynamic_axes={**{name: {0: batch, 1: length} for name in NAMES}, "logits": {0: batch}},
        opset_version=17,
        dynamo=False,
    )
    fused = os.path.join(work_dir, "model_fused.onnx")
    optimized = optimizer.optimize_model(
        raw, model_type="bert", num_heads=config.num_attention_heads, hidden_size=config.hidden_size
    )
    optimized.save_model_to_file(fused)
    int8 = os.path.join(work_dir, "model_fused_int8.onnx")
    # The fused ops (com.microsoft domain) defeat shape inference; onnxruntime's error names this option.
    quantize_dynamic(
        fused, int8, weight_type=QuantType.QInt8, extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT}
    )
    return {"ort float32 (fused)": fused, "ort int8 (dynamic, fused)": int8}, optimized.get_fused_operator_statistics()


def session(path, threads):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def main(hf_dir, work_dir, inputs_path, threads):
    paths, fused_ops = export(hf_dir, work_dir)
    sessions = {name: session(path, int(threads)) for name, path in paths.items()}
    arrays = np.load(inputs_path)
    workloads = sorted({key.split("/")[0] for key in arrays.files})
    counts = {w: sum(key.startswith(f"{w}/") for key in arrays.files) // len(NAMES) for w in workloads}
    calls = {
        workload: [
            {name: arrays[f"{workload}/{index}/{name}"].astype(np.int64) for name in NAMES}
            for index in range(counts[workload])
        ]
        for workload in workloads
    }
    print(json.dumps({"ready": True, "fused": fused_ops, "onnxruntime": onnxruntime.__version__}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("logits"):
            reply = {
                workload: {name: s.run(["logits"], calls[workload][0])[0].tolist() for name, s in sessions.items()}
                for workload in workloads
            }
        else:
            reply = {}
            for name, s in sessions.items():
                times = []
                for _ in range(request["repeats"]):
                    for feed in calls[request["workload"]]:
                        start = time.perf_counter()
                        s.run(["logits"], feed)
                        times.append(time.perf_counter() - start)
                reply[name] = statistics.median(times)
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
