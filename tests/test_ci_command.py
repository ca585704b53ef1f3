"""The README's test command is what `.ci/run` runs, and it runs in a CI whose Python is not a
virtual environment: the console scripts that pip installs there (ruff, pytest) are not on PATH, so
every tool after the install is started as `python -m TOOL` (CI once failed with "ruff: command not
found" after 18 s)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def ci_line():
    lines = [s for s in (ROOT / ".ci" / "run").read_text().splitlines() if s and not s.startswith(("#", "set ", "cd "))]
    assert len(lines) == 1, lines
    return lines[0]


def test_readme_states_the_command_ci_runs():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("this is what CI runs", 1)[1]
    command = re.search(r"```bash\n(.*?)\n```", block, re.S).group(1).strip()
    assert command == ci_line()


def test_every_tool_is_started_through_python():
    steps = [s.strip() for s in ci_line().split("&&")]
    assert steps[0].startswith("pip install torch==2.13.0")  # pip itself is on PATH (the Python's own)
    for step in steps[1:]:
        assert step.startswith("python -m "), f"{step!r}: a console script may not be on CI's PATH"
