"""The PyTorch side of tests/test_interop.py, run by `.venv-interop`'s python (torch + transformers,
no TensorFlow and none of our code): loads each exported directory with transformers' Auto class,
runs the inputs it is given and writes the logits back.

    python tests/interop_worker.py JOB.json

JOB.json: {"models": [{"name", "directory", "auto_class", "inputs" (an .npz of input_ids,
attention_mask, token_type_ids), "outputs" (attributes of the model output to keep)}],
"tokenizer": {"directory", "texts": [[text_a, text_b or null], ...]}, "arrays", "report"}.
Writes `arrays` (.npz, "<name>/<output>") and `report` (JSON: classes, load reports, configs,
token ids, versions). Everything is read from local directories: the hub is never asked.
"""

import json
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402


def _loading_info(info):
    """transformers' load report as JSON: every list of missing/unexpected/mismatched names."""
    return {key: sorted(str(item) for item in value) for key, value in info.items()}


def run_model(entry, arrays):
    auto_class = getattr(transformers, entry["auto_class"])
    model, info = auto_class.from_pretrained(entry["directory"], output_loading_info=True, local_files_only=True)
    model.eval()
    inputs = np.load(entry["inputs"])
    with torch.no_grad():
        output = model(
            input_ids=torch.from_numpy(inputs["input_ids"].astype(np.int64)),
            attention_mask=torch.from_numpy(inputs["attention_mask"].astype(np.int64)),
            token_type_ids=torch.from_numpy(inputs["token_type_ids"].astype(np.int64)),
        )
    for name in entry["outputs"]:
        arrays[f"{entry['name']}/{name}"] = getattr(output, name).float().numpy()
    return {
        "class": type(model).__name__,
        "loading_info": _loading_info(info),
        "hidden_act": model.config.hidden_act,
        "id2label": {str(key): value for key, value in model.config.id2label.items()},
        "num_labels": model.config.num_labels,
        "dtype": str(next(model.parameters()).dtype),
        # The MLM decoder is tied to the word embeddings (the export stores it once).
        "decoder_tied": (
            model.cls.predictions.decoder.weight.data_ptr() == model.bert.embeddings.word_embeddings.weight.data_ptr()
            if hasattr(model, "cls")
            else None
        ),
    }


def run_tokenizer(job):
    directory = job["directory"]
    tokenizer = transformers.BertTokenizer.from_pretrained(directory, local_files_only=True)
    auto = transformers.AutoTokenizer.from_pretrained(directory, local_files_only=True)
    rows = []
    for text_a, text_b in job["texts"]:
        encoded = tokenizer(text_a, text_b) if text_b is not None else tokenizer(text_a)
        auto_encoded = auto(text_a, text_b) if text_b is not None else auto(text_a)
        rows.append(
            {
                "input_ids": list(encoded["input_ids"]),
                "token_type_ids": list(encoded["token_type_ids"]),
                "auto_input_ids": list(auto_encoded["input_ids"]),
            }
        )
    return {"class": type(tokenizer).__name__, "auto_class": type(auto).__name__, "rows": rows}


def main(job_path):
    with open(job_path, encoding="utf-8") as reader:
        job = json.load(reader)
    torch.set_num_threads(int(job.get("threads", 1)))
    arrays, report = {}, {"torch": torch.__version__, "transformers": transformers.__version__, "models": {}}
    for entry in job["models"]:
        report["models"][entry["name"]] = run_model(entry, arrays)
    report["tokenizer"] = run_tokenizer(job["tokenizer"])
    np.savez(job["arrays"], **arrays)
    with open(job["report"], "w", encoding="utf-8") as writer:
        json.dump(report, writer, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
