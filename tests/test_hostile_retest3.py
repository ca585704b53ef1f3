"""A third hostile retest: escaping (visible, markdown, drawn), the pydantic records read from a stranger's folder,
verify --authors' child and import-hf's parquet reading, attacked once more. Each test is a break it found, fixed
since."""
import json
import os
import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import longsynth
from longsynth import escape
from longsynth.cli.common import shown
from test_hostile_retest import invoke, one_error_line
from untrusted_fixtures import *  # noqa: F403 (its __all__: the fixtures clean, ds and listops_subtrees)
from untrusted_fixtures import edit_manifest


# ---------------------------------------------------------------- escaping


@pytest.mark.parametrize("char", ["\u3164", "\u115f", "\u034f", "\ufe0f", "\U000e0100"])
def test_printable_characters_that_draw_nothing_are_spelled_out(char):
    # Python counts these printable, and a name holding one reads as another (m\u3164.py looks like "m .py")
    assert char not in escape.visible(f"m{char}.py") and char not in shown(f"m{char}.py")
    assert char not in escape.markdown(f"m{char}.py") and char not in escape.drawn(f"m{char}.py")


def test_no_figure_hands_its_text_to_latex_whatever_the_current_folder_s_matplotlibrc_asks(monkeypatch):
    # matplotlib reads ./matplotlibrc first: `text.usetex: True` in a stranger's dataset folder, where show or evaluate
    # runs, set here as it would have set it, had every label (and its preamble's code) typeset by LaTeX
    pytest.importorskip("torch")
    import matplotlib
    import matplotlib.pyplot as plt
    from test_report_honesty import _cert, _report

    from longsynth.models_ref.reports.curves import curves

    history = {"train": [{"loss": 1.0}, {"loss": 0.5}], "val": [{"step": 2, "loss": 0.5, "accuracy": 0.9}]}
    report = _report([_cert("parity", 0.9)], model="/tmp/m.py:build", sha="ab" * 32)
    for make in (report.figure, lambda: curves(history, "accuracy", None, r"parity / \input{/etc/passwd} / tiny")):
        monkeypatch.setitem(matplotlib.rcParams, "text.usetex", True)
        fig = make()
        try:
            texts = fig.findobj(matplotlib.text.Text)
        finally:
            plt.close(fig)
        assert texts and not [t.get_text() for t in texts if t.get_usetex()]


# ---------------------------------------------------------------- the current folder: a stranger's


def test_numba_takes_no_settings_from_a_numba_config_yaml_in_the_current_folder(tmp_path):
    # run inside a stranger's dataset folder, its .numba_config.yaml's cache_dir had Numba write its cache there and
    # unpickle (run) the index files found there: verify --deep ran a planted .nbi's code
    (tmp_path / ".numba_config.yaml").write_text("cache_dir: nbc\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    code = "import longsynth; longsynth.sample('cumsum', 0, seed=0, L=8); from numba.core import config; " \
           "print(repr(config.CACHE_DIR))"
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "''" and not (tmp_path / "nbc").exists(), r.stdout


# ---------------------------------------------------------------- the records: JSON itself


def test_a_manifest_giving_a_key_twice_is_one_line(ds):
    # JSON leaves a repeated key open: Python keeps the last "seed" (the shards' own), other readers the first
    path = os.path.join(ds, "manifest.json")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    seed = json.loads(text)["seed"]
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(f'"seed": {seed}', f'"seed": {seed + 1}, "seed": {seed}', 1))
    assert "given twice" in one_error_line(invoke("info", ds))


def test_a_manifest_of_a_million_empty_objects_is_refused_before_parsing(ds):
    # 3 bytes of "{}," parse into a dict of 64: 64 MB, the size bound, would take 1.5 GB; this one 3.3 MB
    edit_manifest(ds, lambda m: m.__setitem__("audit", [{}] * 1_100_000))
    assert "objects and lists" in one_error_line(invoke("info", ds))


# ---------------------------------------------------------------- verify --authors: their code's memory

RECORDS = textwrap.dedent('''
    def multiquery_ar(vocab_size, num_examples, input_seq_len, seed, power_a, num_kv_pairs, num_passes,
                      random_non_queries):
        open({marker!r}, "w").write("ran")  # their real code tiles num_examples x vocab_size int64 here
        raise ValueError("not run further")
''')


def test_verify_authors_refuses_an_mqar_vocabulary_their_code_cannot_tile_before_running_it(tmp_path, monkeypatch):
    from longsynth import api

    data = tmp_path / "d"
    r = invoke("gen", "mqar", "--input-seq-len", "32", "--num-kv-pairs", "2", "--vocab-size", "4096", "--seed", "3",
               "--splits", "train=4,test=2", "--authors-stream", "--out", data)
    assert r.exit_code == 0, r.output
    marker = tmp_path / "ran"
    pkg = tmp_path / "co" / "zoology" / "data"
    pkg.mkdir(parents=True)
    (tmp_path / "co" / "zoology" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "multiquery_ar.py").write_text(RECORDS.format(marker=str(marker)))
    # zoology's multiquery_ar holds 4 x 4096 int64 (128 kB) for train's keys and values; the rows alone, 4 kB, fit
    monkeypatch.setattr(api, "memory_available", lambda read=None: 100_000)
    line = one_error_line(invoke("verify", data, "--authors", tmp_path / "co"))
    assert "vocab_size" in line and "available" in line, line
    assert not marker.exists()  # refused before their code ran


FUZZY = textwrap.dedent('''
    def generate_fuzzy_in_context_recall_instance(*args, **kwargs):
        open({marker!r}, "w").write("ran")  # theirs lists itertools.permutations of the vocabulary here
        raise ValueError("not run further")
''')


@pytest.fixture(scope="module")
def fuzzy(tmp_path_factory):
    """A mad-fuzzy-recall authors' stream of vocabulary 256: each row lists (theirs) or indexes (ours) the 2 million
    motifs of up to 3 of 127 key tokens."""
    data = tmp_path_factory.mktemp("fuzzy") / "d"
    r = invoke("gen", "mad-fuzzy-recall", "--vocab-size", "256", "--seq-len", "32", "--seed", "1",
               "--splits", "train=2,test=1", "--authors-stream", "--out", data)
    assert r.exit_code == 0, r.output
    return data


def test_verify_authors_refuses_the_motif_lists_of_mad_s_fuzzy_recall_before_running_it(fuzzy, tmp_path,
                                                                                         monkeypatch):
    from longsynth import api

    marker = tmp_path / "ran"
    pkg = tmp_path / "co" / "mad" / "data"
    pkg.mkdir(parents=True)
    (pkg / "instances.py").write_text(FUZZY.format(marker=str(marker)))
    monkeypatch.setattr(api, "memory_available", lambda read=None: 50_000_000)  # their lists: some 150 MB
    line = one_error_line(invoke("verify", fuzzy, "--authors", tmp_path / "co"))
    assert "motif" in line and "available" in line, line
    assert not marker.exists()


def test_verify_deep_estimates_the_motif_index_of_our_fuzzy_recall_stream(fuzzy, monkeypatch):
    from longsynth import api

    monkeypatch.setattr(api, "memory_available", lambda read=None: 10_000_000)  # our index of them: 16 MB a row
    line = one_error_line(invoke("verify", fuzzy, "--deep", "--samples", "1"))
    assert "motif" in line and "vocab_size and the motif sizes set its size, whatever the count" in line, line


# ---------------------------------------------------------------- import-hf: text a small file inflates to


def _flipflop_file(root, texts):
    path = os.path.join(root, "data", "train-00000-of-00001-aa.parquet")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.table({"text": pa.array(texts, pa.string())}), path, compression="zstd")
    return root


def test_import_hf_converts_a_bounded_amount_of_text_at_a_time(tmp_path, monkeypatch):
    from longsynth import hubimport
    from longsynth.generators.flipflop import hub

    rows = longsynth.batch("flipflop", 0, 8, seed=0, split="train", T=1 << 18, p_ignore=0.8)
    tok = np.concatenate([rows["inputs"], rows["targets"][:, -1:]], axis=1)
    chars = np.frombuffer(hub.CHARS.encode(), dtype=np.uint8)
    src = _flipflop_file(str(tmp_path), [chars[r].tobytes().decode() for r in tok])  # 8 strings of 512 kB: 4 MB
    monkeypatch.setattr(hubimport, "READ_BYTES", 1 << 19, raising=False)
    tracemalloc.start()
    try:
        targets, _ = hubimport.check(hub, src)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sum(p.rows for t in targets for ps in t.splits.values() for p in ps) == 8
    assert peak < 30e6, f"{peak:,} bytes at once for 4 MB of text"  # all 8 strings converted at once: 80 MB


def test_import_hf_refuses_a_string_longer_than_the_task_s_longest_before_reading_it(tmp_path):
    from longsynth.generators.flipflop.flipflop import MAX_T

    src = _flipflop_file(str(tmp_path), ["w0" + "i0" * MAX_T + "r0"])  # T = MAX_T + 2 in some kB of zstd
    tracemalloc.start()
    try:
        line = one_error_line(invoke("import-hf", "synthseq/flipflop", src, "--out", tmp_path / "out"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "row 0" in line and not (tmp_path / "out").exists(), line
    assert peak < 8e6, f"{peak:,} bytes at once for one string of {2 * MAX_T + 4:,} characters"


def test_import_hf_follows_no_snapshot_link_out_of_the_cache(tmp_path):
    from longsynth.generators.flipflop import hub

    rows = longsynth.batch("flipflop", 0, 50, seed=0, split="train", T=16, p_ignore=0.8)
    tok = np.concatenate([rows["inputs"], rows["targets"][:, -1:]], axis=1)
    chars = np.frombuffer(hub.CHARS.encode(), dtype=np.uint8)
    elsewhere = _flipflop_file(str(tmp_path / "elsewhere"), [chars[r].tobytes().decode() for r in tok])
    cache = tmp_path / "datasets--synthseq--flipflop"
    (cache / "snapshots").mkdir(parents=True)
    (cache / "snapshots" / ("1" * 40)).symlink_to(elsewhere)  # the Hub's snapshots are folders, only files link
    line = one_error_line(invoke("import-hf", "synthseq/flipflop", cache, "--out", tmp_path / "out"))
    assert "a link" in line and not (tmp_path / "out").exists(), line


def test_import_hf_reads_no_download_record_through_a_link_out_of_the_folder(tmp_path):
    from longsynth.generators.flipflop import hub

    rows = longsynth.batch("flipflop", 0, 50, seed=0, split="train", T=16, p_ignore=0.8)
    tok = np.concatenate([rows["inputs"], rows["targets"][:, -1:]], axis=1)
    chars = np.frombuffer(hub.CHARS.encode(), dtype=np.uint8)
    src = _flipflop_file(str(tmp_path / "local"), [chars[r].tobytes().decode() for r in tok])
    record = tmp_path / "elsewhere" / "huggingface" / "download" / "data" / "train-00000-of-00001-aa.parquet.metadata"
    record.parent.mkdir(parents=True)
    record.write_text("1" * 40 + "\n" + "0" * 64 + "\n")  # a file outside the folder: read, it refuses the data
    os.symlink(tmp_path / "elsewhere", os.path.join(src, ".cache"))
    r = invoke("import-hf", "synthseq/flipflop", src, "--out", tmp_path / "out")
    assert r.exit_code == 0 and "checked against nothing" in r.output, r.output
