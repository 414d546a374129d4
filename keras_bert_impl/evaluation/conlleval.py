"""Entity-level precision, recall and F1 as the CoNLL shared task's conlleval script counts them.

A chunk begins at B-X, at I-X after O or after another type (so IOB1 and IOB2 both work), and
ends where the next begins or at O; a predicted chunk is correct when its start, end and type all
equal a gold chunk's.
"""


def _split(tag):
    if tag in ("O", ""):
        return "O", ""
    prefix, _, kind = tag.partition("-")
    return (prefix, kind) if kind else ("I", prefix)


def chunks(tags):
    """[(type, first index, last index)] of a tag sequence."""
    found = []
    start, current = None, None
    previous_prefix, previous_type = "O", ""
    for index, tag in enumerate(list(tags) + ["O"]):
        prefix, kind = _split(tag)
        ends = start is not None and (
            prefix in ("B", "S", "O") or previous_prefix in ("E", "S") or kind != previous_type
        )
        if ends:
            found.append((current, start, index - 1))
            start = None
        begins = prefix in ("B", "S") or (prefix in ("I", "E") and (start is None or kind != previous_type))
        if begins and prefix != "O":
            start, current = index, kind
        previous_prefix, previous_type = prefix, kind
    return found


def evaluate(gold_sentences, predicted_sentences):
    """{precision, recall, f1} (fractions) over lists of tag sequences, sentence by sentence."""
    correct = predicted = gold = 0
    for gold_tags, predicted_tags in zip(gold_sentences, predicted_sentences):
        gold_chunks, predicted_chunks = set(chunks(gold_tags)), set(chunks(predicted_tags))
        correct += len(gold_chunks & predicted_chunks)
        predicted += len(predicted_chunks)
        gold += len(gold_chunks)
    precision = correct / predicted if predicted else 0.0
    recall = correct / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}
