"""Writes the top-level BUILD from the Python imports, so every target lists its real deps.

    .venv/bin/python tools/gen_build.py     (make bazel-test and make lint check it is current)

One py_library per library module (plus one per package __init__), named by its path
(`keras_bert_impl/tasks/base`); one py_binary per runner, script and benchmark, named by its file
(`run_classifier`); one py_test per test module (through tests/pytest_runner.py).
"""

import ast
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARY_DIRS = ("keras_bert_common", "keras_bert_impl", "tfrecord_tools", "keras_bert_cli", "peers", "bench")


def tool_scripts():
    """The script of each console script in pyproject.toml (the one tool list): `NAME.py` at the
    root or under tfrecord_tools/; a tool with neither runs as `python -m` only."""
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as reader:
        names = tomllib.load(reader)["project"]["scripts"]
    found = [f"{where}{name}.py" for name in names for where in ("", "tfrecord_tools/")]
    return [path for path in found if os.path.isfile(os.path.join(ROOT, path))]


def tool_modules():
    """The module of each console script in pyproject.toml (`python -m` runs a tool that has no script)."""
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as reader:
        targets = tomllib.load(reader)["project"]["scripts"].values()
    return [module_path(target.split(":")[0]) for target in targets]


TOOLS = tool_scripts()
BINARIES = (
    TOOLS
    + sorted(f"demo/{f}" for f in os.listdir(os.path.join(ROOT, "demo")) if f.endswith(".py"))
    + sorted(f"bench/{f}" for f in os.listdir(os.path.join(ROOT, "bench")) if f.endswith(".py") and f != "__init__.py")
)
# Tests that read whole folders of the repository (not named one by one in their source).
IMPORT_CHECKED_PACKAGES = (
    "keras_bert_common",
    "tfrecord_tools",
    "keras_bert_impl",
    "keras_bert_cli",
    "bench",
    "peers",
    "demo",
    "tools",
)
TEST_DATA_GLOBS = {
    "test_docs_links": ["README.md", "bench/README.md", "docs/**"],
    # It reads every source file's imports.
    "test_import_layers": [f"{package}/**/*.py" for package in IMPORT_CHECKED_PACKAGES],
}
# Test modules that take longer than a minute on 2 cores, and those needing real data only.
LARGE_TESTS = {
    "test_run_pretraining",
    "test_export",
    "test_finetuning_runners",
    "test_pretraining_data",
    "test_bad_inputs",
    "test_signals",
    "test_cli_logs",
    "test_task_contract",
    "test_dynamic_masking",
    "test_pretraining_beam",
}
# The interop tests: make test-interop (they need .venv-interop).
MANUAL_TESTS = {"test_acceptance", "test_interop", "test_sentence_embedding_interop"}


def target_name(path):
    """A library's target: its path without `.py` (Bazel names may hold slashes)."""
    return path[:-3]


def module_path(module):
    """Dotted module -> file in the repository, or None for third-party modules."""
    base = os.path.join(ROOT, *module.split("."))
    if os.path.isfile(base + ".py"):
        return os.path.relpath(base + ".py", ROOT)
    if os.path.isfile(os.path.join(base, "__init__.py")):
        return os.path.relpath(os.path.join(base, "__init__.py"), ROOT)
    return None


def local_imports(path):
    tree = ast.parse(open(os.path.join(ROOT, path), encoding="utf-8").read())
    found = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            parts = name.split(".")
            for i in range(1, len(parts) + 1):  # a.b.c imports a/__init__, a/b/__init__, a/b/c
                target = module_path(".".join(parts[:i]))
                if target and target != path:
                    found.add(target)
    # A module's own packages are imported before it.
    directory = os.path.dirname(path)
    while directory:
        init = os.path.join(directory, "__init__.py")
        if os.path.isfile(os.path.join(ROOT, init)) and init != path:
            found.add(init)
        directory = os.path.dirname(directory)
    return sorted(found)


def rule(kind, name, srcs, deps, extra=()):
    lines = [f"{kind}(", f'    name = "{name}",']
    lines += [f"    {line}," for line in extra if line.startswith(("main", "size", "testonly"))]
    lines.append("    srcs = [" + ", ".join(f'"{s}"' for s in srcs) + "],")
    lines += [f"    {line}," for line in extra if not line.startswith(("main", "size", "testonly"))]
    if deps:
        lines.append("    deps = [")
        lines += [f'        ":{d}",' for d in sorted(set(deps))]
        lines.append("    ],")
    lines.append(")")
    return "\n".join(lines)


BUILDIFIER = os.path.join(ROOT, "tools", "buildifier", "node_modules", ".bin", "buildifier")


def _buildifier(text):
    """Formats with buildifier (npm @bazel/buildifier, installed by `make lint`)."""
    import subprocess

    if not os.path.exists(BUILDIFIER):
        sys.exit(f"{BUILDIFIER} is missing: run make buildifier")
    return subprocess.run(
        [BUILDIFIER, "-type=build", "-lint=off"], input=text, capture_output=True, text=True, check=True
    ).stdout


def main():
    libraries = []
    for directory in LIBRARY_DIRS:
        for folder, _, files in sorted(os.walk(os.path.join(ROOT, directory))):
            libraries += sorted(os.path.relpath(os.path.join(folder, f), ROOT) for f in files if f.endswith(".py"))
    libraries = [p for p in libraries if p not in BINARIES]
    helpers = sorted(
        f"tests/{f}"
        for f in os.listdir(os.path.join(ROOT, "tests"))
        if f.endswith(".py") and not f.startswith("test_") and f != "pytest_runner.py"
    )
    tests = sorted(
        f"tests/{f}" for f in os.listdir(os.path.join(ROOT, "tests")) if f.startswith("test_") and f.endswith(".py")
    )
    blocks = [
        "# Generated by tools/gen_build.py from the imports: run it after adding a module or an import.\n"
        "# Third-party packages come from the .venv interpreter (tools/python).",
        'package(default_visibility = ["//visibility:public"])',
    ]
    for path in libraries:
        blocks.append(rule("py_library", target_name(path), [path], [target_name(d) for d in local_imports(path)]))
    for path in helpers:
        blocks.append(
            rule(
                "py_library",
                target_name(path),
                [path],
                [target_name(d) for d in local_imports(path)],
                ["testonly = True"],
            )
        )
    data = {"demo/encode_sentences.py": ["demo/data/corpus.txt"]}
    for path in BINARIES:
        extra = [f'main = "{path}"'] + ([f'data = ["{d}"]' for d in data.get(path, [])])
        # A script that imports another script (bench/ sharing helpers) takes its file as a source.
        srcs, pending, imports = [path], [path], set()
        while pending:
            for imported in local_imports(pending.pop()):
                if imported in BINARIES and imported not in srcs:
                    srcs.append(imported)
                    pending.append(imported)
                elif imported not in BINARIES:
                    imports.add(imported)
        if any(d.startswith("tests/") for d in imports):  # Bazel: only testonly targets may use test helpers
            extra.append("testonly = True")
        blocks.append(
            rule("py_binary", path.split("/")[-1][:-3], srcs, [target_name(d) for d in sorted(imports)], extra)
        )
    for path in tests:
        name = os.path.basename(path)[:-3]
        size = "large" if name in LARGE_TESTS else "medium"
        extra = ['main = "tests/pytest_runner.py"', f'size = "{size}"', f'args = ["{path}"]']
        if name in MANUAL_TESTS:
            extra.append('tags = ["manual"]')
        deps = [target_name(d) for d in local_imports(path)]
        # Runner scripts a test starts as subprocesses are data; their libraries are deps.
        # The test's own text and its test helpers' (a helper may build the command it runs).
        source = "".join(
            open(os.path.join(ROOT, p), encoding="utf-8").read()
            for p in [path, *(d for d in local_imports(path) if d.startswith("tests/"))]
        )
        # A test that runs every tool (conftest.tool_commands) has all their scripts.
        scripts = [
            b
            for b in BINARIES
            if (b in TOOLS and "tool_commands()" in open(os.path.join(ROOT, path), encoding="utf-8").read())
            or f'"{os.path.basename(b)}"' in source
            or f'"{b.split("/")[0]}", "{os.path.basename(b)}"' in source
            or f'"{b}"' in source
        ]
        deps += [target_name(h) for h in helpers if f'"{os.path.basename(h)}"' in source]
        # A test that runs every tool (conftest.tool_commands) may start any of them with -m.
        if "tool_commands()" in open(os.path.join(ROOT, path), encoding="utf-8").read():
            deps += [target_name(module) for module in tool_modules()]
        # Modules a test runs with `python -m`.
        deps += [target_name(module_path(m)) for m in re.findall(r'"-m",\s*"([\w.]+)"', source) if module_path(m)]
        deps += [target_name(d) for s in scripts for d in local_imports(s)]
        # Files of the repository a test reads (os.path.join(REPO_ROOT, "demo", "data", ...)) are data too.
        files = []
        for parts in re.findall(r"os\.path\.join\(REPO_ROOT, ((?:\"[^\"]+\",\s*)*\"[^\"]+\")\)", source):
            relative = "/".join(re.findall(r'"([^"]+)"', parts))
            # Not the environments (.venv-interop/bin/python): they are not in a checkout.
            if os.path.isfile(os.path.join(ROOT, relative)) and not relative.endswith(".py") and relative[0] != ".":
                files.append(relative)
        if name in TEST_DATA_GLOBS:  # its globs take its files (a label twice is an error)
            files = []
        data = (
            [f"[{', '.join(json.dumps(item) for item in sorted(set(scripts) | set(files)))}]"]
            if scripts or files
            else []
        )
        if name in TEST_DATA_GLOBS:
            data.append(f"glob({json.dumps(TEST_DATA_GLOBS[name])})")
        if data:
            extra.append("data = " + " + ".join(data))
        blocks.append(rule("py_test", name, ["tests/pytest_runner.py", path], deps, extra))
    text = _buildifier("\n\n".join(blocks) + "\n")
    output = os.path.join(ROOT, "BUILD")
    if "--check" in sys.argv:
        if open(output, encoding="utf-8").read() != text:
            sys.exit("BUILD is out of date: run .venv/bin/python tools/gen_build.py")
        return
    with open(output, "w", encoding="utf-8") as writer:
        writer.write(text)


if __name__ == "__main__":
    main()
