"""`extend_vocabulary`: build_vocab.py --base_vocab. A released model's vocabulary with a
domain's words added (tfrecord_tools.vocab_extension) and, given the model, its word embeddings
and MLM output bias grown to it (checkpoints.vocab_resize), written as a Google model directory
that run_pretraining.py continues from."""

import dataclasses
import json
import os

from keras_bert_common.errors import UsageError
from keras_bert_common.files import (
    atomic_directory,
    check_not_holding_inputs,
    check_readable_file,
    check_text_files,
    check_writable,
)
from tfrecord_tools.vocab_builder import count_words, read_lines
from tfrecord_tools.vocab_extension import extend_vocab
from tfrecord_tools.vocab_file import load_vocab_list

REPORT = "vocab_extension.json"


def base_model(init_checkpoint, bert_config_file, base_vocab, base):
    """(BertConfig, Google-named weights) of `init_checkpoint`, checked against the base
    vocabulary `base` (the tokens of `base_vocab`) before anything heavy runs."""
    from keras_bert_impl.checkpoints.hf_weights import hf_config_to_bert_config
    from keras_bert_impl.checkpoints.init_checkpoint import check_init_checkpoint, checkpoint_weights, is_hf_directory
    from keras_bert_impl.checkpoints.vocab_resize import check_extends
    from keras_bert_impl.models.bert_config import BertConfig

    if bert_config_file:
        config_file = bert_config_file
        config = BertConfig.from_json_file(config_file)
    elif is_hf_directory(init_checkpoint):
        config_file = os.path.join(init_checkpoint, "config.json")
        with open(config_file, encoding="utf-8") as reader:
            config = hf_config_to_bert_config(json.load(reader), source=config_file)
    else:
        raise UsageError("--init_checkpoint needs --bert_config_file (the config it was trained with)")
    config.check_vocab_size(len(base), base_vocab, config_file)
    check_init_checkpoint(init_checkpoint, config, config_file)
    folder = init_checkpoint if os.path.isdir(init_checkpoint) else os.path.dirname(init_checkpoint)
    beside = os.path.join(folder, "vocab.txt")
    if os.path.isfile(beside) and os.path.abspath(beside) != os.path.abspath(base_vocab):
        check_extends(load_vocab_list(beside), base, beside, base_vocab)
    return config, checkpoint_weights(init_checkpoint, config)


def extend_vocabulary(
    input_paths,
    base_vocab,
    output_dir,
    num_new_tokens=1000,
    init_checkpoint=None,
    bert_config_file=None,
    do_lower_case=True,
    min_count=2,
    force=False,
    log=print,
):
    """Writes OUTPUT_DIR/{vocab.txt, vocab_extension.json} and, with `init_checkpoint`,
    {bert_config.json, bert_model.ckpt}; returns the `VocabExtension`. Every check comes first."""
    check_readable_file(base_vocab, "--base_vocab", "vocab.txt")
    base = load_vocab_list(base_vocab)
    check_text_files(input_paths, "--input_file")
    check_writable(output_dir, "--output_dir", kind="replaced")
    check_not_holding_inputs(
        output_dir,
        "--output_dir",
        {
            "--input_file": list(input_paths),
            "--base_vocab": base_vocab,
            "--init_checkpoint": init_checkpoint,
            "--bert_config_file": bert_config_file,
        },
    )
    if os.path.exists(output_dir) and not force:
        raise FileExistsError(f"{output_dir}: already exists; pass --force to replace it (or choose another)")
    if num_new_tokens < 1:
        raise UsageError(f"--num_new_tokens={num_new_tokens}: add at least one token")
    config = weights = None
    if init_checkpoint:
        config, weights = base_model(init_checkpoint, bert_config_file, base_vocab, base)
    counts = count_words(
        read_lines(input_paths, warn=getattr(log, "warning", log)),
        do_lower_case=do_lower_case,
        log=log,
        total_bytes=sum(os.path.getsize(path) for path in input_paths),
    )
    extension = extend_vocab(base, counts, num_new_tokens, do_lower_case, min_count, source=", ".join(input_paths))
    report = extension.report()
    shown = ", ".join(entry["token"] for entry in report["added"][:12])
    log(
        f"added {len(extension.added)} tokens ({report['in_unused_slots']} in [unused] slots, {report['appended']} "
        f"appended; vocab_size {report['vocab_size_before']} -> {report['vocab_size_after']}): {shown}"
        + (", ..." if len(extension.added) > 12 else "")
    )
    if len(extension.added) < num_new_tokens:
        getattr(log, "warning", log)(
            f"--num_new_tokens={num_new_tokens}: only {len(extension.added)} words qualify (seen at least "
            f"--min_count={min_count} times and more than one token in the base vocabulary); lower --min_count or "
            "give more text for more"
        )
    before, after = extension.tokens_per_word_before, extension.tokens_per_word_after
    log(
        f"the domain text: {before:.3f} tokens per word before, {after:.3f} after "
        f"({100 * (1 - after / before):.1f}% fewer tokens)"
    )
    with atomic_directory(output_dir, force=force) as temporary:
        with open(os.path.join(temporary, "vocab.txt"), "w", encoding="utf-8") as writer:
            writer.write("\n".join(extension.tokens) + "\n")
        with open(os.path.join(temporary, REPORT), "w", encoding="utf-8") as writer:
            json.dump(report, writer, indent=1, ensure_ascii=False)
        if weights is not None:
            from keras_bert_impl.checkpoints.google_checkpoint import write_google_checkpoint
            from keras_bert_impl.checkpoints.vocab_resize import extend_word_embeddings

            pieces = {word: ids for _, word, _, ids in extension.added}
            grown = extend_word_embeddings(weights, base, extension.tokens, pieces, source=init_checkpoint)
            dataclasses.replace(config, vocab_size=len(extension.tokens)).to_json_file(
                os.path.join(temporary, "bert_config.json")
            )
            write_google_checkpoint(grown, os.path.join(temporary, "bert_model.ckpt"))
    log(f"wrote {output_dir}" + (" (vocab.txt, bert_config.json, bert_model.ckpt)" if weights is not None else ""))
    return extension
