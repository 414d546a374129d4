"""The official metrics of the fine-tuning tasks, in numpy: accuracy, F1 (MRPC, QQP), Matthews
correlation (CoLA), Pearson and Spearman correlation (STS-B)."""

import numpy as np


def accuracy(labels, predictions):
    return float(np.mean(np.asarray(labels) == np.asarray(predictions)))


def f1(labels, predictions, positive=1):
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    true_positive = np.sum((predictions == positive) & (labels == positive))
    predicted, actual = np.sum(predictions == positive), np.sum(labels == positive)
    if not predicted or not actual or not true_positive:
        return 0.0
    precision, recall = true_positive / predicted, true_positive / actual
    return float(2 * precision * recall / (precision + recall))


def matthews_corrcoef(labels, predictions):
    labels, predictions = np.asarray(labels) == 1, np.asarray(predictions) == 1
    tp = float(np.sum(labels & predictions))
    tn = float(np.sum(~labels & ~predictions))
    fp = float(np.sum(~labels & predictions))
    fn = float(np.sum(labels & ~predictions))
    denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return float((tp * tn - fp * fn) / denominator) if denominator else 0.0


def pearson(x, y):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt(np.sum(x * x) * np.sum(y * y))
    return float(np.sum(x * y) / denominator) if denominator else 0.0


def _ranks(values):
    """Ranks from 1, ties sharing their average rank."""
    values = np.asarray(values)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), np.float64)
    sorted_values = values[order]
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranks[order[start : end + 1]] = (start + end) / 2.0 + 1.0
        start = end + 1
    return ranks


def spearman(x, y):
    return pearson(_ranks(x), _ranks(y))


REGRESSION_METRIC_NAMES = ("eval_pearson", "eval_spearman", "eval_corr")


def regression_metrics(labels, predictions):
    """STS-B's metrics, with run_classifier's `eval_` prefix."""
    r, rho = pearson(labels, predictions), spearman(labels, predictions)
    return dict(zip(REGRESSION_METRIC_NAMES, (r, rho, (r + rho) / 2.0)))


def classification_metric_names(task_name):
    """The names `classification_metrics` returns for `task_name` (checked before training)."""
    task = (task_name or "").lower()
    if task == "sts-b":
        return REGRESSION_METRIC_NAMES
    return ("eval_accuracy", *{"mrpc": ("eval_f1",), "qqp": ("eval_f1",), "cola": ("eval_mcc",)}.get(task, ()))


def classification_metrics(task_name, labels, predictions):
    """The metrics GLUE reports for `task_name` (accuracy for any other task), with
    run_classifier's `eval_` prefix."""
    names = classification_metric_names(task_name)
    if names == REGRESSION_METRIC_NAMES:
        return regression_metrics(labels, predictions)
    compute = {"eval_accuracy": accuracy, "eval_f1": f1, "eval_mcc": matthews_corrcoef}
    return {name: compute[name](labels, predictions) for name in names}
