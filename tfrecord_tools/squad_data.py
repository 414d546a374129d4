"""`SquadExample` and Google's run_squad.py feature conversion, SQuAD v1.1 and v2.0.

Google's alignment: paragraphs split on white space into words (`doc_tokens`), each word
WordPiece-tokenized, answers mapped from characters to words to sub-tokens and tightened to the
tokenized answer text; sliding windows of `doc_stride`; a window without the answer (and every
window of an unanswerable question) points at [CLS] (position 0). Tokenization runs in batches.
"""

import dataclasses
import json

import numpy as np

from keras_bert_common.errors import UsageError
from keras_bert_common.files import atomic_output
from tfrecord_tools import example_wire, feature_specs, tfrecord_files

FIRST_UNIQUE_ID = 1000000000


@dataclasses.dataclass
class SquadExample:
    qas_id: str
    question_text: str
    doc_tokens: list
    orig_answer_text: str = None
    start_position: int = None  # word index in doc_tokens
    end_position: int = None
    is_impossible: bool = False
    answers: list = dataclasses.field(default_factory=list)  # all gold answer texts, for evaluation


@dataclasses.dataclass
class SquadFeature:
    unique_id: int
    example_index: int
    doc_span_index: int
    tokens: list
    token_to_orig_map: dict  # position in the window -> word index in doc_tokens
    token_is_max_context: dict
    input_ids: list
    input_mask: list
    segment_ids: list
    start_position: int = None
    end_position: int = None
    is_impossible: bool = False


def _is_whitespace(char):
    return char in " \t\r\n" or ord(char) == 0x202F


def split_paragraph(text):
    """Google's white-space split: (words, char_to_word_offset)."""
    doc_tokens, char_to_word_offset = [], []
    previous_is_whitespace = True
    for char in text:
        if _is_whitespace(char):
            previous_is_whitespace = True
        else:
            if previous_is_whitespace:
                doc_tokens.append(char)
            else:
                doc_tokens[-1] += char
            previous_is_whitespace = False
        char_to_word_offset.append(len(doc_tokens) - 1)
    return doc_tokens, char_to_word_offset


def read_squad_examples(input_file, is_training, version_2_with_negative, warn=print):
    """SQuAD JSON -> examples. For training, the first answer is used (dev files carry several);
    an answer whose text is not at its `answer_start` is skipped with a warning, as in Google's."""
    try:
        with open(input_file, encoding="utf-8") as reader:
            data = json.load(reader)["data"]
    except FileNotFoundError:
        raise FileNotFoundError(f"{input_file}: no such file; check --train_file / --predict_file") from None
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise UsageError(f'{input_file}: not a SQuAD JSON file ({error}); it needs {{"data": [...]}}') from None
    examples, skipped = [], 0
    for article in data:
        for paragraph in article["paragraphs"]:
            doc_tokens, char_to_word_offset = split_paragraph(paragraph["context"])
            for qa in paragraph["qas"]:
                is_impossible = bool(qa.get("is_impossible", False)) if version_2_with_negative else False
                answers = [answer["text"] for answer in qa.get("answers", [])]
                example = SquadExample(
                    qa["id"], qa["question"], doc_tokens, is_impossible=is_impossible, answers=answers
                )
                if is_training:
                    if is_impossible:
                        example.start_position = example.end_position = -1
                        example.orig_answer_text = ""
                    else:
                        if not qa.get("answers") and qa.get("is_impossible"):
                            raise UsageError(
                                f"{input_file}: a SQuAD 2.0 file (question {qa['id']} is marked "
                                '"is_impossible": true); pass --version_2_with_negative'
                            )
                        if not qa.get("answers"):
                            raise UsageError(
                                f"{input_file}: question {qa['id']} has no answer and is not marked "
                                "is_impossible; pass --version_2_with_negative for SQuAD 2.0 files"
                            )
                        answer = qa["answers"][0]
                        text, offset = answer["text"], answer["answer_start"]
                        if not text or offset < 0 or offset + len(text) > len(char_to_word_offset):
                            skipped += 1
                            warn(
                                f"{input_file}: question {qa['id']}: answer_start {offset} is outside the context; "
                                "skipped"
                            )
                            continue
                        start = char_to_word_offset[offset]
                        end = char_to_word_offset[offset + len(text) - 1]
                        actual = " ".join(doc_tokens[start : end + 1])
                        if actual.find(" ".join(text.strip().split())) == -1:
                            skipped += 1
                            warn(
                                f"{input_file}: question {qa['id']}: could not find answer {text!r} in {actual!r}; "
                                "skipped"
                            )
                            continue
                        example.orig_answer_text, example.start_position, example.end_position = text, start, end
                examples.append(example)
    return examples, skipped


def _improve_answer_span(doc_tokens, start, end, answer_tokens):
    """The smallest sub-token span whose text equals the tokenized answer (Google's)."""
    wanted = " ".join(answer_tokens)
    for new_start in range(start, end + 1):
        for new_end in range(end, new_start - 1, -1):
            if " ".join(doc_tokens[new_start : new_end + 1]) == wanted:
                return new_start, new_end
    return start, end


def _doc_spans(num_tokens, max_tokens_for_doc, doc_stride):
    spans, start = [], 0
    while start < num_tokens:
        length = min(num_tokens - start, max_tokens_for_doc)
        spans.append((start, length))
        if start + length == num_tokens:
            break
        start += min(length, doc_stride)
    return spans


def _is_max_context(spans, span_index, position):
    """Whether window `span_index` gives `position` its most context (Google's score)."""
    best_score, best_index = None, None
    for index, (start, length) in enumerate(spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_index = score, index
    return span_index == best_index


def convert_examples_to_features(
    examples, tokenizer, max_seq_length=384, doc_stride=128, max_query_length=64, is_training=False
):
    """Google's run_squad.py windows; returns a list of `SquadFeature`."""
    # Tokenize every distinct word, question and answer once, in batches.
    words = sorted({word for example in examples for word in example.doc_tokens})
    word_pieces = dict(zip(words, tokenizer.tokenize_batch(words)))
    questions = tokenizer.tokenize_batch([example.question_text for example in examples])
    answers = (
        tokenizer.tokenize_batch([example.orig_answer_text or "" for example in examples]) if is_training else None
    )
    vocab = tokenizer.vocab
    features, unique_id = [], FIRST_UNIQUE_ID
    paragraph_cache = {}
    for example_index, example in enumerate(examples):
        query_tokens = questions[example_index][:max_query_length]
        key = id(example.doc_tokens)
        if key not in paragraph_cache:
            tok_to_orig, orig_to_tok, all_doc_tokens = [], [], []
            for index, word in enumerate(example.doc_tokens):
                orig_to_tok.append(len(all_doc_tokens))
                for piece in word_pieces[word]:
                    tok_to_orig.append(index)
                    all_doc_tokens.append(piece)
            paragraph_cache = {key: (tok_to_orig, orig_to_tok, all_doc_tokens)}  # one paragraph at a time
        tok_to_orig, orig_to_tok, all_doc_tokens = paragraph_cache[key]

        tok_start = tok_end = None
        if is_training and example.is_impossible:
            tok_start = tok_end = -1
        if is_training and not example.is_impossible:
            tok_start = orig_to_tok[example.start_position]
            if example.end_position < len(example.doc_tokens) - 1:
                tok_end = orig_to_tok[example.end_position + 1] - 1
            else:
                tok_end = len(all_doc_tokens) - 1
            tok_start, tok_end = _improve_answer_span(all_doc_tokens, tok_start, tok_end, answers[example_index])

        max_tokens_for_doc = max_seq_length - len(query_tokens) - 3
        spans = _doc_spans(len(all_doc_tokens), max_tokens_for_doc, doc_stride)
        for span_index, (span_start, span_length) in enumerate(spans):
            tokens = ["[CLS]", *query_tokens, "[SEP]"]
            segment_ids = [0] * len(tokens)
            token_to_orig_map, token_is_max_context = {}, {}
            for i in range(span_length):
                position = span_start + i
                token_to_orig_map[len(tokens)] = tok_to_orig[position]
                token_is_max_context[len(tokens)] = _is_max_context(spans, span_index, position)
                tokens.append(all_doc_tokens[position])
            tokens.append("[SEP]")
            segment_ids += [1] * (span_length + 1)
            input_ids = [vocab[token] for token in tokens]
            padding = max_seq_length - len(input_ids)
            start_position = end_position = None
            if is_training:
                start_position = end_position = 0  # [CLS]: no answer in this window
                if not example.is_impossible and span_start <= tok_start and tok_end <= span_start + span_length - 1:
                    offset = len(query_tokens) + 2
                    start_position = tok_start - span_start + offset
                    end_position = tok_end - span_start + offset
            features.append(
                SquadFeature(
                    unique_id=unique_id,
                    example_index=example_index,
                    doc_span_index=span_index,
                    tokens=tokens,
                    token_to_orig_map=token_to_orig_map,
                    token_is_max_context=token_is_max_context,
                    input_ids=input_ids + [0] * padding,
                    input_mask=[1] * len(input_ids) + [0] * padding,
                    segment_ids=segment_ids + [0] * padding,
                    start_position=start_position,
                    end_position=end_position,
                    is_impossible=example.is_impossible,
                )
            )
            unique_id += 1
    return features


def features_to_arrays(features, is_training):
    arrays = {
        "unique_ids": np.array([[f.unique_id] for f in features], np.int64).reshape(-1, 1),
        "input_ids": np.array([f.input_ids for f in features], np.int64),
        "input_mask": np.array([f.input_mask for f in features], np.int64),
        "segment_ids": np.array([f.segment_ids for f in features], np.int64),
    }
    if is_training:
        arrays["start_positions"] = np.array([[f.start_position] for f in features], np.int64).reshape(-1, 1)
        arrays["end_positions"] = np.array([[f.end_position] for f in features], np.int64).reshape(-1, 1)
        arrays["is_impossible"] = np.array([[int(f.is_impossible)] for f in features], np.int64).reshape(-1, 1)
    return arrays


FEATURES_SUFFIX = ".features.jsonl"


def read_features_sidecar(path):
    """The prediction windows of a `.features.jsonl` sidecar, as `SquadFeature`s (no ids)."""
    features = []
    with open(path, encoding="utf-8") as reader:
        for line in reader:
            if not line.strip():
                continue
            row = json.loads(line)
            features.append(
                SquadFeature(
                    unique_id=row["unique_id"],
                    example_index=row["example_index"],
                    doc_span_index=row["doc_span_index"],
                    tokens=row["tokens"],
                    token_to_orig_map={int(k): v for k, v in row["token_to_orig_map"].items()},
                    token_is_max_context={int(k): v for k, v in row["token_is_max_context"].items()},
                    input_ids=None,
                    input_mask=None,
                    segment_ids=None,
                )
            )
    return features


def write_squad_tfrecord(features, max_seq_length, is_training, output_file):
    """Writes run_squad.py's TFRecord; for prediction also `OUTPUT.features.jsonl`, the windows'
    tokens and maps that turn logits back into answer text. Returns the record count."""
    spec = feature_specs.squad_spec(max_seq_length, is_training)
    records = example_wire.examples_to_bytes(features_to_arrays(features, is_training), spec) if features else []
    if not is_training:
        sidecar = output_file + FEATURES_SUFFIX
        with atomic_output(sidecar) as writer:
            for f in features:
                writer.write(
                    json.dumps(
                        {
                            "unique_id": f.unique_id,
                            "example_index": f.example_index,
                            "doc_span_index": f.doc_span_index,
                            "tokens": f.tokens,
                            "token_to_orig_map": f.token_to_orig_map,
                            "token_is_max_context": f.token_is_max_context,
                        }
                    )
                    + "\n"
                )
    return tfrecord_files.write_tfrecord(records, output_file)
