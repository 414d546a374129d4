"""The README, docs/ and bench/README.md link to files (and headings) that exist, and the README
stays a front page."""

import glob
import os
import re

from tests.conftest import REPO_ROOT

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _pages():
    pages = [os.path.join(REPO_ROOT, "README.md"), os.path.join(REPO_ROOT, "bench", "README.md")]
    return pages + sorted(glob.glob(os.path.join(REPO_ROOT, "docs", "**", "*.md"), recursive=True))


def _slugs(path):
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # a shell comment in a code block is no heading
    headings = re.findall(r"^#{1,6} (.+)$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_every_relative_link_resolves():
    broken = []
    for page in _pages():
        text = re.sub(r"```.*?```", "", open(page, encoding="utf-8").read(), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            where = f"{os.path.relpath(page, REPO_ROOT)}: {target}"
            if not os.path.exists(resolved):
                broken.append(f"{where} (no such file)")
            elif anchor and resolved.endswith(".md") and anchor not in _slugs(resolved):
                broken.append(f"{where} (no such heading)")
    assert not broken, "\n".join(broken)
    assert len(_pages()) >= 10


def test_readme_is_a_front_page():
    lines = open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8").read().splitlines()
    assert len(lines) <= 150, len(lines)
    commands = [line.strip() for line in lines[:3] if line.strip()]
    assert commands[0].startswith("make demo") and commands[1].startswith("make test"), commands
