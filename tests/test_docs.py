"""The docs site (docs/, mkdocs.yml) and the README: the site builds with warnings as errors,
every code block runs (or says why not), every command-line option is in the reference, the
README stays short and its links resolve."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
BLOCK = re.compile(r"(<!-- not run:([^>]*)-->\n)?```(\w*)\n(.*?)```", re.S)
RUNNER = r'''
import json, subprocess, sys
blocks = json.load(open(sys.argv[1]))
env = {}
for lang, code in blocks:
    if lang == "python":
        exec(compile(code, "<docs block>", "exec"), env)
    else:
        subprocess.run(["bash", "-euo", "pipefail", "-c", code], check=True)
'''


def _blocks(page):
    return [(m.group(3), m.group(4), m.group(2)) for m in BLOCK.finditer(page.read_text())]


def test_the_site_builds_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                          "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                         capture_output=True, text=True, timeout=600, cwd=ROOT,
                         env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert res.returncode == 0, res.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()


def test_every_block_says_what_it_is():
    """Each fenced block is python, bash or text; a block that does not run gives a reason."""
    for page in PAGES:
        for lang, code, reason in _blocks(page):
            assert lang in ("python", "bash", "text", ""), (page, lang)
            assert reason is None or reason.strip(), (page, code[:60])


RUNNABLE = [p for p in PAGES if any(lang in ("python", "bash") and reason is None
                                    for lang, _, reason in _blocks(p))]


@pytest.mark.parametrize("page", RUNNABLE, ids=[str(p.relative_to(ROOT)) for p in RUNNABLE])
def test_code_blocks_run(page, tmp_path):
    """The page's python and bash blocks, in order, in one interpreter (a page's blocks build
    on each other), in a fresh folder that sees the project's models/ and examples/."""
    import json
    blocks = [(lang, code) for lang, code, reason in _blocks(page)
              if lang in ("python", "bash") and reason is None]
    for folder in ("models", "examples"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    (tmp_path / "blocks.json").write_text(json.dumps(blocks))
    (tmp_path / "run.py").write_text(RUNNER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")]), MPLBACKEND="Agg")
    res = subprocess.run([sys.executable, "run.py", "blocks.json"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stderr[-4000:]


def test_every_cli_option_is_in_the_reference():
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        from hooks import cli_reference
    finally:
        sys.path.pop(0)
    import argparse

    from fmu_mb.tools.cli import _parser
    text = cli_reference()
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        assert f"## fmu-mb {name}" in text
        for a in p._actions:
            if isinstance(a, argparse._HelpAction):
                continue
            for opt in a.option_strings:
                assert f"`{opt}`" in text, (name, opt)


def test_readme_is_short_and_its_links_resolve():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        if "://" not in target:
            assert (ROOT / target).exists(), target
    # the README states how long the suite takes and how to run a quick part
    assert "python -m pytest" in text and "-m \"not slow" in text and "minutes" in text


def test_docs_links_to_repository_files_resolve():
    """Links from a docs page to a file outside docs/ (mkdocs does not check those)."""
    for page in (ROOT / "docs").rglob("*.md"):
        for target in re.findall(r"\]\(([^)#]+)\)", page.read_text()):
            if "://" not in target:
                assert (page.parent / target).resolve().exists(), (page, target)
