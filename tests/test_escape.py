"""Names and strings from a user or a stranger's folder, escaped where they are shown (docs/format.md,
"Trust"): a model file's name in report.md and on the terminal, a manifest's command and versions in an
exported dataset card."""
import io
import json
import os
import re
import warnings

import pytest

from longsynth.escape import markdown, visible

HOSTILE = "<img src=x onerror=alert(1)>[click](https://x.example)|col`code`\n# Heading\x1b[2J\x9b31m"


def test_visible_is_one_line_without_control_characters():
    text = visible(HOSTILE)
    assert "\n" not in text and "\x1b" not in text and "\x9b" not in text
    assert "\\n# Heading\\x1b[2J\\x9b31m" in text
    assert visible("plain name.py:build") == "plain name.py:build"


def test_markdown_renders_as_the_text_itself():
    text = markdown(HOSTILE)
    assert "<" not in text and ">" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
    assert "\\[click\\](https\\://x.example)" in text  # no link: its brackets escaped, no autolink
    assert "\\|col\\`code\\`" in text  # no extra table column, no code span
    assert "\n" not in text and "\x1b" not in text
    assert markdown("tinytf.py:build (sha256 1a2b3c4d)") == "tinytf.py:build (sha256 1a2b3c4d)"
    assert markdown("my_model.py:build") == "my\\_model.py:build"


def test_a_hostile_model_file_name_writes_nothing_into_report_md_or_the_terminal():
    pytest.importorskip("torch")
    from test_report_honesty import _cert, _report

    report = _report([_cert("parity", 0.9)], model=f"/tmp/{HOSTILE}.py:build", sha="ab" * 32)
    md = report.to_markdown()
    assert "<img" not in md and "](https://" not in md and "\x1b" not in md
    assert not any(line.startswith("# Heading") for line in md.splitlines())
    header = next(line for line in md.splitlines() if line.startswith("| task |"))
    rule = next(line for line in md.splitlines() if line.startswith("|---"))
    assert header.replace("\\|", "").count("|") == rule.count("|")  # the name is one cell
    table = report.table()
    assert "\x1b" not in table and "\x9b" not in table
    assert len(table.splitlines()[0].split("  ")) > 3  # the header is one line


def test_a_strangers_manifest_writes_nothing_into_the_dataset_card(tmp_path):
    pytest.importorskip("datasets")
    from click.testing import CliRunner

    from longsynth import store
    from longsynth.cli.main import cli

    root = tmp_path / "d"
    store.generate(str(root), "cumsum", {"L": 8}, seed=0, splits={"train": 4, "val": 2, "test": 2}, workers=1)
    path = os.path.join(root, "manifest.json")
    m = json.load(open(path, encoding="utf-8"))
    m["command"] = "longsynth gen cumsum\n\n# Owned\n<img src=x onerror=alert(1)>\x1b[31m"
    m["versions"]["longsynth"] = "0.1 <script>alert(1)</script> [x](https://x.example)"
    json.dump(m, open(path, "w", encoding="utf-8"))
    r = CliRunner().invoke(cli, ["export", str(root), "--format", "hf", "--out", str(tmp_path / "hf")])
    if r.exit_code != 0:  # a manifest check that refuses the edit is a fine answer too: one line
        assert r.output.startswith("Error:") and len(r.output.strip().splitlines()) == 1, r.output
        return
    card = open(tmp_path / "hf" / "README.md", encoding="utf-8").read()
    # the command stays one line of its indented code block, where markdown renders it as written
    (command,) = [line for line in card.splitlines() if "Owned" in line]
    assert command.startswith("    longsynth gen cumsum\\n\\n# Owned\\n<img")
    assert [line for line in card.splitlines() if "<img" in line] == [command]
    assert "<script>" not in card and "\x1b" not in card
    assert "[x](" not in card and "\\[x\\](https\\://x.example)" in card  # the link's brackets escaped


RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # a control character a terminal acts on


def test_a_progress_bar_spells_out_a_hostile_description():
    """evaluate's bar is named after the model file: its escapes reach the terminal spelled out."""
    from longsynth.progress import Bar

    for tty in (False, True):
        f = io.StringIO()
        f.isatty = lambda tty=tty: tty
        with Bar(total=2, desc="train \x1b[2J\x1b]0;title\x07.py on cumsum", unit="steps", file=f) as bar:
            bar.update(2)
        assert not RAW.search(f.getvalue().replace("\r", "").replace("\x1b[A", "")), repr(f.getvalue())
        assert "train \\x1b[2J\\x1b]0;title\\x07.py on cumsum" in f.getvalue()


def test_a_hostile_model_name_draws_in_every_figure_with_no_control_character_in_a_warning():
    """report.png and curves.png hold the model file's name: a missing glyph's warning would print its control
    characters to the terminal, and two $ would start mathtext (``$x^$`` cannot be drawn: report.png failed)."""
    pytest.importorskip("torch")
    import matplotlib.pyplot as plt
    from test_report_honesty import _cert, _report

    from longsynth.models_ref.reports.curves import curves

    name = "\x1b[2J\x1b]0;title\x07 $x^$.py:build"
    report = _report([_cert("parity", 0.9)], model=f"/tmp/{name}", sha="ab" * 32)
    history = {"train": [{"loss": 1.0}, {"loss": 0.5}], "val": [{"step": 2, "loss": 0.5, "accuracy": 0.9}]}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for fig in (report.figure(), curves(history, "accuracy", None, f"parity / {name} / tiny")):
            try:
                fig.savefig(io.BytesIO(), format="png")
                texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
            finally:
                plt.close(fig)
            assert any("\\x1b[2J" in t for t in texts) and not any(RAW.search(t) for t in texts)
    assert not [w for w in caught if RAW.search(str(w.message))]


def test_a_hostile_out_path_is_printed_spelled_out_by_every_command(tmp_path):
    """gen's summary and --dry-run plan, export's and show's 'wrote PATH' and evaluate's 'report: PATH' print a
    user's --out with its escapes and line breaks spelled out: one line that moves no cursor."""
    from click.testing import CliRunner

    from longsynth.cli.main import cli

    def run(*args):
        r = CliRunner().invoke(cli, [str(a) for a in args], color=True)  # color: escapes kept, as a terminal gets them
        assert r.exit_code == 0, r.output
        assert not RAW.search(r.output) and "\nX" not in r.output, r.output
        return r.output

    bad = "d\x1b[31m\nX"
    out = tmp_path / bad
    gen = ["gen", "cumsum", "--L", "8", "--splits", "train=4,val=2,test=2"]
    assert "\\x1b[31m\\nX" in run(*gen, "--out", out, "--dry-run")
    assert run(*gen, "--out", out).rstrip().endswith(f"-> {tmp_path}{os.sep}d\\x1b[31m\\nX")
    assert f"wrote hf to {tmp_path}/d\\x1b[31m\\nX.hf" in run("export", out, "--format", "hf", "--out",
                                                              tmp_path / f"{bad}.hf").replace(os.sep, "/")
    assert "wrote " in run("show", "cumsum", "--out", tmp_path / f"{bad}.png")
    pytest.importorskip("torch")
    (tmp_path / "lin.py").write_text("from torch import nn\n\n\ndef build(spec):\n"
                                     "    return nn.Linear(spec.d_input, spec.d_output)\n")
    shown = run("evaluate", f"{tmp_path / 'lin.py'}:build", "--suite", "cumsum", "--steps", "2", "--lr", "1e-3",
                "--data", tmp_path / "data", "--out", tmp_path / f"{bad}.eval")
    assert "report: " in shown and "\\x1b[31m\\nX.eval" in shown


def test_a_strangers_certificate_writes_nothing_into_report_md_or_the_terminal():
    """Every string report.md and the printed table read from a run folder's metrics.json (its protocol, source,
    metric, a paper column's name, a test set's label, an option, where it diverged) is escaped for where it
    goes: markdown that renders as the text itself, terminal text that moves no cursor."""
    pytest.importorskip("torch")
    from test_report_honesty import _cert, _report

    from longsynth.models_ref.reports.report import summary

    def hostile(what):
        return f"{what}{HOSTILE}"

    runs = []
    for lr, acc in ((1e-3, 0.9), (3e-3, 0.8)):
        run = _cert("parity", acc)
        run.update(protocol=hostile("protocol"), protocol_source=hostile("source"), lr=lr, causal=False,
                   paper_columns={hostile("column"): {"accuracy": 0.5}}, options={hostile("key"): hostile("value")},
                   scored_on="test",
                   test_sets={hostile("set"): {"accuracy": acc, "exact": {"correct": 9, "count": 10}}})
        runs.append(run)
    runs[1]["options"] = {hostile("key"): "other"}
    runs.append({**runs[0], "lr": 1e-2, "test": None, "diverged": {"step": 3, "where": hostile("where")}})
    report = _report(runs, suite=hostile("suite"))
    md = report.to_markdown()
    assert "<img" not in md and not re.search(r"(?<!\\)\]\(", md) and not RAW.search(md)  # no tag, no link
    assert [line for line in md.splitlines() if line.startswith("#")] == [md.splitlines()[0]] + [
        line for line in md.splitlines() if line.startswith("## ")]  # the title and the report's own sections
    for name in ("protocol", "source", "column", "key", "value", "set", "where"):
        assert f"{name}&lt;img src=x onerror=alert(1)&gt;\\[click\\]" in md, name
    for table in re.findall(r"(?:^\|.*\n)+", md, re.M):  # each row has the rule's cells: no cell starts inside
        counts = {line.replace("\\|", "").count("|") for line in table.splitlines()}
        assert len(counts) == 1, table
    printed = report.table() + "\n" + summary({**runs[0], "target": "parity", "report_dir": f"/tmp/{HOSTILE}"})
    assert not RAW.search(printed) and "protocol<img" in printed
    assert not any(line.startswith("# Heading") for line in printed.splitlines())


def test_the_notes_on_stderr_are_one_line_with_their_escapes_spelled_out(capsys):
    """The Python API's notes and evaluate's workers' lines (which name a run folder or a model file) reach the
    terminal as the CLI's do."""
    from longsynth.progress import to_stderr

    to_stderr("redone in d\x1b[31m\nX")
    notes = [capsys.readouterr().err]
    pytest.importorskip("torch")
    from longsynth.models_ref.evaluation.sweep import _say

    _say("train \x1b[2J.py: resumed")
    notes.append(capsys.readouterr().err)
    assert notes == ["longsynth: redone in d\\x1b[31m\\nX\n", "train \\x1b[2J.py: resumed\n"]


def test_a_model_file_named_with_a_byte_that_is_not_utf8_loads(tmp_path):
    """Linux allows any byte in a name; Python hands an undecodable one over as a lone surrogate (\\udcff),
    which the model's module name is hashed from as the OS's bytes, not as UTF-8 (which has no surrogates)."""
    pytest.importorskip("torch")
    from longsynth.models_ref.models.factories import load

    path = os.fsdecode(os.path.join(os.fsencode(str(tmp_path)), b"m\xff.py"))
    with open(path, "w") as f:
        f.write("def build(spec):\n    return None\n")
    factory, identity = load(f"{path}:build")
    assert callable(factory) and identity["model"] == "m\udcff.py:build" and len(identity["sha256"]) == 64


@pytest.mark.parametrize("char, spelled", [("\udcff", "\\udcff"), ("\u202e", "\\u202e"), ("\u2067", "\\u2067"),
                                           ("\u200b", "\\u200b"), ("\u200f", "\\u200f"), ("\ufeff", "\\ufeff"),
                                           ("\u2028", "\\u2028"), ("\u2029", "\\u2029")])
def test_a_surrogate_and_reordering_or_invisible_characters_are_spelled_out(char, spelled):
    """A lone surrogate (a file name's undecodable byte) cannot be written as UTF-8 (report.md) nor drawn; a bidi
    override shows a name reordered (run\\u202etxt.py as runyp.txt), a zero-width character hides; U+2028 breaks
    a line: each is written out, by the rule the CLI's ``shown`` applies."""
    from longsynth.cli.common import shown
    from longsynth.escape import drawn

    text = f"run{char}txt.py"
    for how in (visible, markdown, drawn, shown):
        out = how(text)
        out.encode("utf-8")
        assert char not in out and spelled in out, (how.__name__, out)
    assert visible(text) == shown(text) == f"run{spelled}txt.py"
    assert visible("naïve 名前.py") == "naïve 名前.py"  # printable text beyond ASCII stays as it is


def test_markdown_escapes_dollar_signs_so_no_math_starts():
    """GitHub renders $x^2$ as math: a model file named a$x^2$.py is in report.md as its name."""
    assert markdown("a$x^2$.py") == "a\\$x^2\\$.py"


def test_a_record_error_naming_a_strangers_key_or_value_is_one_line():
    """fields.parse's error (and a relation's, fields.Bad) quotes a key or value a stranger chose: newlines and
    escapes in it are spelled out, the line otherwise as before."""
    from longsynth import fields
    from longsynth.errors import LongsynthError

    class Rec(fields.Record):
        sha256: dict[str, fields.Hex64]

    class Related(fields.Record):
        name: fields.Text()

        def model_post_init(self, _):
            raise fields.Bad(f"keys.{self.name}", f"{self.name} is not stored")

    hostile = "x\x1b]0;t\x07\nINJECTED"
    with pytest.raises(LongsynthError) as e:
        fields.parse(Rec, {"sha256": {hostile: "z"}}, "files.json", "files.json")
    assert str(e.value) == "files.json: sha256.x\\x1b]0;t\\x07\\nINJECTED: 'z' is malformed"
    with pytest.raises(LongsynthError) as e:
        fields.parse(Related, {"name": hostile}, "m.json", "manifest")
    assert str(e.value) == "m.json: keys.x\\x1b]0;t\\x07\\nINJECTED: x\\x1b]0;t\\x07\\nINJECTED is not stored"
    assert fields.path(("sha256", hostile)) == "sha256.x\\x1b]0;t\\x07\\nINJECTED"


NAMES = [HOSTILE, "see https://x.example/a and HTTPS://y.example", "www.x.example (WWW.y.example)", "ftp://a.example",
         "**b** _i_ ~~s~~ $x$ <b>x</b> &amp; `c` a\\b", "# h", "> q", "1. x", "- x", "x\n===", "    code", "===",
         "[x]: https://x.example", "!x", "<https://x.example>"]


@pytest.mark.parametrize("name", NAMES)
def test_github_renders_an_escaped_name_as_the_name_itself(name):
    """Rendered by cmark-gfm (GitHub's markdown, autolinks and tables on), a name escaped by ``markdown`` is its
    ``visible`` text and nothing else: no link, autolink, image, heading, emphasis, HTML or extra table cell."""
    import html

    import cmarkgfm

    text = html.escape(visible(name), quote=False).replace('"', "&quot;")
    line = cmarkgfm.github_flavored_markdown_to_html(markdown(name))
    assert line == f"<p>{text}</p>\n"
    table = cmarkgfm.github_flavored_markdown_to_html(f"| model | score |\n|---|---|\n| {markdown(name)} | 0.5 |")
    assert f"<td>{text}</td>\n<td>0.5</td>" in table and table.count("<td>") == 2
