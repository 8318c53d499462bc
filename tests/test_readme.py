"""The README's examples, run as they stand on a fresh deploy, so that a newcomer who follows
the README verbatim meets no wall. The blocks are read from README.md itself, as a
CommonMark parser (markdown-it-py) sees them, so an edited or added example is tested as written:

- "Two commands": `make psql` where `make test` has deployed (a fresh copy of the deployed plan),
  with the SQL its comment says to type; that it deploys where nothing is deployed yet is
  tests/test_make_psql.py's (a full Sqitch deploy: once in the suite is enough); the other
  `make` lines are checked against MAKE_TARGETS, which says where each target runs;
- every ```sql block, in README order, through psql with ON_ERROR_STOP, in one freshly deployed
  database, and every shell block (indented, or a ```sh fence) in its place among them, with
  bash -e on the same database, from the checkout's root; its `make` lines are checked against
  MAKE_TARGETS instead of recursing into make;
- every ```python block compiles.

A block that cannot run as it stands carries a visible mark, an HTML comment on the line just
before it, `<!-- not run by tests/test_readme.py: why -->`, used sparingly (in docs/, the same
mark names tests/test_docs.py).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from core_fixtures import REPO_ROOT
from markdown_it import MarkdownIt

from pyworker.environment import RENAMED

README = REPO_ROOT / "README.md"
# docs/ pages (tests/test_docs.py) carry the same mark, naming their own test.
NOT_RUN = re.compile(r"<!-- not run by tests/test_(?:readme|docs)\.py: (?P<why>\S[^\n]*?) -->\n?")
MARKED = re.compile(r"tests/test_(?:readme|docs)\.py")
FENCE_KINDS = {"sql": "sql", "sh": "shell", "bash": "shell", "shell": "shell", "python": "python"}
TWO_COMMANDS = "Two commands"
MAKE_LINE = re.compile(r"\s*(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*make(?:\s|$)")

# The make targets the README's shell examples name, and where each runs instead of here.
MAKE_TARGETS = {
    "psql": "here: test_the_two_commands_claim_in_make_psql_after_make_test, and tests/test_make_psql.py",
    "demo": "tests/test_crawler_demo.py, on a small simulated platform",
    "test": "CI (.ci/run), which runs this file",
    "deploy": "make test, and tests/core_fixtures.py for every test's database",
    "bench": "nowhere in the tests: it measures for minutes (tests/test_bench.py checks its figures)",
    "faults": "nowhere in the tests: the full form takes most of an hour (faults-quick is run)",
    "faults-quick": "tests/test_faults.py, each scenario of the quick form",
}


@dataclass(frozen=True)
class Example:
    kind: str  # sql, shell or python
    line: int  # the README line of its first line
    text: str
    section: str  # the heading it is under
    not_run: str | None  # why, when it carries the mark
    source: str = "README.md"  # the file it is in

    def where(self) -> str:
        return f"{self.source} line {self.line} ({self.section})"


def examples_in(markdown: str, source: str = "README.md") -> list[Example]:
    """The example blocks of a Markdown file (`source`, for messages), in order."""
    tokens = MarkdownIt("commonmark").parse(markdown)
    examples = []
    section = ""
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            section = tokens[index + 1].content
        if token.type == "fence":
            kind = FENCE_KINDS.get(token.info.strip())
            first_line = token.map[0] + 2
        elif token.type == "code_block":
            kind, first_line = "shell", token.map[0] + 1
        else:
            continue
        if kind is None:  # a diagram, a layout: no language, nothing to run
            continue
        previous = tokens[index - 1]
        mark = None
        if previous.type == "html_block" and MARKED.search(previous.content):
            mark = NOT_RUN.fullmatch(previous.content)
            assert mark and previous.map[1] == token.map[0], (
                f"{source} line {previous.map[0] + 1}: write the mark as"
                " `<!-- not run by tests/test_readme.py: why -->`, on the line just before its block"
            )
        examples.append(Example(kind, first_line, token.content, section, mark and mark["why"], source))
    return examples


def runs_something(script: str) -> bool:
    """Whether a shell script has a line other than blanks and comments."""
    return any(line.strip() and not line.lstrip().startswith("#") for line in script.splitlines())


def make_targets(line: str) -> list[str] | None:
    """The targets of a `make` command line (after any VAR=value), or None for another command."""
    if not MAKE_LINE.match(line):
        return None
    words = shlex.split(line, comments=True)
    while words[0] != "make":
        words.pop(0)
    return [word for word in words[1:] if "=" not in word and not word.startswith("-")]


def without_make(example: Example) -> str:
    """The example's shell text with each `make` line checked and left out: each target must be
    one that MAKE_TARGETS says runs elsewhere."""
    kept = []
    for line in example.text.splitlines():
        targets = make_targets(line)
        if targets is None:
            kept.append(line)
            continue
        unknown = [target for target in targets if target not in MAKE_TARGETS]
        assert not unknown, (
            f"{example.where()}: `{line.strip()}` runs make {' '.join(unknown)}: say in"
            " MAKE_TARGETS where that runs, or mark the block"
        )
    return "\n".join(kept) + "\n"


def a_newcomers_environment(**settings: str) -> dict[str, str]:
    """This environment less worker settings and make's own variables (an outer `make test`
    must not hand its command line to the make run here), plus `settings`."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("WORKER_", "PYWORKER_", "TASKPOOL_", "MAKE"))
        and name not in ("MFLAGS", "SQITCH_TARGET", *RENAMED.values())
    }
    return {**env, **settings}


def run_example(example: Example, command: list[str], script: str, env: dict[str, str]) -> None:
    """`command` with `script` on its stdin, from the checkout's root, as the README's
    `.venv/bin/...` and `make` are written; a failure names the README line."""
    result = subprocess.run(
        command, input=script, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, (
        f"{example.where()}: the example fails, exit {result.returncode} (psql numbers the"
        f" block's lines from 1; bash shows each command it ran after a +):\n{script}\n"
        f"{result.stdout}{result.stderr}"
    )


def run_sql(example: Example, db_url: str) -> None:
    psql = shutil.which("psql") or "psql"
    command = [psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db_url, "-f", "-"]
    run_example(example, command, example.text, a_newcomers_environment())


def run_shell(example: Example, script: str, db_url: str) -> None:
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    env = a_newcomers_environment(DATABASE_URL=db_url, PATH=path)
    run_example(example, ["bash", "-x", "-e", "-u", "-o", "pipefail"], script, env)


def test_the_two_commands_claim_in_make_psql_after_make_test(db_url: str) -> None:
    block = next(e for e in examples_in(README.read_text()) if e.section == TWO_COMMANDS)
    without_make(block)
    lines = block.text.splitlines()
    (psql_at,) = [i for i, line in enumerate(lines) if make_targets(line) == ["psql"]]
    typed = []
    for line in lines[psql_at + 1 :]:
        if not line.lstrip().startswith("#"):
            break
        typed.append(line.lstrip().removeprefix("#").strip())
    assert typed, f"{block.where()}: no SQL to type in psql under `make psql`"

    result = subprocess.run(
        ["make", "psql"],
        cwd=REPO_ROOT,
        input="\\set ON_ERROR_STOP on\n" + "\n".join(typed) + "\n",
        env=a_newcomers_environment(DATABASE_URL=db_url),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"{block.where()}: make psql, then {typed}:\n{result.stdout}{result.stderr}"
    assert "Nothing to deploy (up-to-date)" in result.stdout, result.stdout


def test_the_examples_run_in_order_on_a_fresh_deploy(db_url: str) -> None:
    ran = {"sql": 0, "shell": 0, "python": 0}
    for example in examples_in(README.read_text()):
        if example.not_run:
            continue
        if example.kind == "sql":
            run_sql(example, db_url)
        elif example.kind == "python":
            compile(example.text, example.where(), "exec")
        else:
            script = without_make(example)
            if not runs_something(script):
                continue
            run_shell(example, script, db_url)
        ran[example.kind] += 1
    assert all(ran.values()), f"no example of some kind ran: {ran}"


def test_a_mark_says_why_its_block_is_not_run() -> None:
    (marked, run) = examples_in(
        "<!-- not run by tests/test_readme.py: it runs until stopped -->\n    pyworker --role r\n\n"
        "```sql\nSELECT 1;\n```\n"
    )
    assert (marked.not_run, marked.line, run.not_run, run.line) == ("it runs until stopped", 2, None, 5)


def test_a_mark_without_its_reason_is_refused() -> None:
    with pytest.raises(AssertionError, match="README.md line 1: write the mark as"):
        examples_in("<!-- not run by tests/test_readme.py -->\n    pyworker --role r\n")
