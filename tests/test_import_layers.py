"""The import graph holds what the README's table and keras_bert_impl's docstring promise: no
import runs from a lower layer to a higher one, and no source file patches sys.path."""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OURS = ("keras_bert_common", "tfrecord_tools", "keras_bert_impl", "keras_bert_cli")
# keras_bert_impl's packages in data-flow order: each may import those before it (keras_bert_impl's docstring).
IMPL_ORDER = ("layers", "models", "checkpoints", "evaluation", "tasks", "training", "serving", "runners")
# Google's commands run from a checkout (`python tfrecord_tools/create_pretraining_data.py`): these
# three files are entry scripts of the keras_bert_cli shells, not modules of the data path.
SCRIPT_STARTERS = {
    "tfrecord_tools.build_vocab",
    "tfrecord_tools.create_finetuning_data",
    "tfrecord_tools.create_pretraining_data",
}


def layer_of(module):
    parts = module.split(".")
    if parts[0] == "keras_bert_impl" and len(parts) > 1:
        return "keras_bert_impl." + parts[1]
    return parts[0]


def allowed(layer):
    """The layers `layer` may import besides itself."""
    base = {"keras_bert_common"}
    if layer == "keras_bert_common":
        return set()
    if layer == "tfrecord_tools":
        return base
    if layer == "keras_bert_cli":
        return {"keras_bert_common", "tfrecord_tools", "keras_bert_impl.errors", "keras_bert_impl"} | {
            f"keras_bert_impl.{name}" for name in IMPL_ORDER
        }
    if layer == "keras_bert_impl.errors":
        return base
    name = layer.split(".")[1]
    earlier = IMPL_ORDER[: IMPL_ORDER.index(name)]
    return base | {"tfrecord_tools", "keras_bert_impl.errors"} | {f"keras_bert_impl.{n}" for n in earlier}


def our_modules():
    for package in OURS:
        for folder, _, names in os.walk(os.path.join(ROOT, package)):
            for name in sorted(names):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    yield os.path.relpath(path, ROOT)[: -len(".py")].replace(os.sep, "."), path


def imports_of(path):
    with open(path, encoding="utf-8") as reader:
        tree = ast.parse(reader.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def test_no_import_runs_upward():
    wrong = []
    modules = list(our_modules())
    for package in OURS:  # every source file is here (in Bazel too), so nothing passes vacuously
        assert sum(module.startswith(package + ".") for module, _ in modules) >= 5, package
    for module, path in modules:
        if module in SCRIPT_STARTERS:
            continue
        source = layer_of(module)
        for imported in imports_of(path):
            if imported.split(".")[0] not in OURS:
                continue
            target = layer_of(imported)
            if target != source and target not in allowed(source):
                wrong.append(f"{module} imports {imported}")
    assert not wrong, "\n".join(wrong)


def test_the_rule_catches_an_upward_import():
    assert "keras_bert_impl.tasks" not in allowed("keras_bert_impl.models")
    assert "keras_bert_impl" not in allowed("tfrecord_tools")
    assert "keras_bert_cli" not in allowed("keras_bert_impl.runners")
    assert "keras_bert_impl.layers" in allowed("keras_bert_impl.serving")


@pytest.mark.parametrize("package", [*OURS, "bench", "peers", "demo", "tools"])
def test_no_sys_path_patch(package):
    patched = []
    assert os.path.isfile(os.path.join(ROOT, package, "__init__.py")) or package in ("demo", "tools"), package
    assert os.path.isdir(os.path.join(ROOT, package)), package
    for folder, _, names in os.walk(os.path.join(ROOT, package)):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as reader:
                    tree = ast.parse(reader.read(), path)
                for node in ast.walk(tree):
                    if (
                        isinstance(node, ast.Attribute)
                        and node.attr == "path"
                        and isinstance(node.value, ast.Name)
                        and node.value.id == "sys"
                    ):
                        patched.append(os.path.relpath(path, ROOT))
                        break
    assert not patched, patched


@pytest.mark.parametrize("module", sorted(SCRIPT_STARTERS))
def test_starter_without_the_package_says_how_to_run_it(module, tmp_path):
    """A checkout's script run by a Python that cannot import the package: one line, exit 1."""
    import subprocess
    import sys

    script = os.path.join(ROOT, *module.split(".")) + ".py"
    # -S: no site-packages, so neither an installed package nor .venv's checkout .pth is seen;
    # -E: nor PYTHONPATH (Bazel's runfiles).
    result = subprocess.run(
        [sys.executable, "-S", "-E", script, "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot import keras_bert_cli" in lines[0], result.stderr
    assert f"python -m keras_bert_cli.{module.split('.')[-1]}" in lines[0]
