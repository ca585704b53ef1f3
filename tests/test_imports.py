"""The package's import graph has no cycle, and every module imports on its own.

A cycle among our modules makes import order matter: a module imported first from one side
sees the other half-initialised. The graph is read from the source (ast), lazy imports
inside functions included, since they run sooner or later; importing a submodule is an
edge to that submodule, not to the package that holds it.
"""
import ast
import functools
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# source folder -> installed package name (pyproject.toml, [tool.setuptools] package-dir)
ROOTS = {"longsynth": "longsynth", "generators": "longsynth.generators", "cli": "longsynth.cli",
         "models_ref": "longsynth.models_ref"}


def modules():
    """{installed module name: source path} for every module of the package."""
    found = {}
    for folder, package in ROOTS.items():
        for dirpath, dirnames, filenames in os.walk(os.path.join(REPO, folder)):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            rel = os.path.relpath(dirpath, os.path.join(REPO, folder))
            prefix = package if rel == "." else package + "." + rel.replace(os.sep, ".")
            for f in filenames:
                if f.endswith(".py"):
                    found[prefix if f == "__init__.py" else f"{prefix}.{f[:-3]}"] = os.path.join(dirpath, f)
    return found


def imports(name, path, known):
    """Our modules that module ``name`` imports, anywhere in its source."""
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    out = set()

    def add(target):
        while target and target not in known:  # `import a.b.c` of a name inside a.b: the module a.b
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)

    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, ast.Import):
            for a in node.names:
                add(a.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                add(sub if sub in known else base)
    return out


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan), and self-loops."""
    index, low, stack, on, found = {}, {}, [], set(), []
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@functools.cache
def _parsed():
    known = modules()
    return {name: frozenset(imports(name, path, known)) for name, path in known.items()}


def graph():
    """{module: the modules it imports}: the source is parsed once a session (0.3 s); each call gets its own sets."""
    return {name: set(targets) for name, targets in _parsed().items()}


def test_the_graph_is_read():
    """The walk finds the modules and edges it must: a graph of nothing has no cycle either."""
    g = graph()
    assert {"longsynth", "longsynth.store", "longsynth.store.layout", "longsynth.generators.listops.tasks",
            "longsynth.cli.main", "longsynth.models_ref.layers.dlr", "longsynth.files", "longsynth._version"} <= set(g)
    assert "longsynth.files" in g["longsynth.store.manifest"]  # from longsynth.files import ...
    assert "longsynth.safe" in g["longsynth.files"]  # from longsynth import safe: the submodule
    assert "longsynth.store.read" in g["longsynth.store"]  # from longsynth.store.read import Dataset
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle():
    found = cycles(graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


# Each module is imported in a process of its own, forked from one that has imported only
# third-party libraries (none of ours) and the packages that hold the module: a fresh
# interpreter per module cost 1-2 s each, most of it importing torch again. Importing a.b.c in
# any process first imports a, whole, then a.b, so the fork that imports a goes on to fork one
# process per module inside it (the same state: a fork per module from one that had imported
# only third-party libraries cost 25 s, most of it importing longsynth's __init__ 188 times).
# A package that fails fails every module inside it, with its traceback. A name a module uses
# without importing it still fails there: a library in sys.modules binds no name in the module
# that forgot it.
_ALONE = r"""
import importlib, json, os, sys, traceback
for lib in ("numpy", "numba", "scipy", "h5py", "click", "PIL", "torch", "matplotlib", "pydantic", "datasets",
            "huggingface_hub", "pyarrow", "dask", "distributed"):
    try:
        importlib.import_module(lib)
    except ImportError:
        pass
import numba
numba.njit(lambda: 0)  # numba loads its compiler on the first decorator: once here, not in each of the forks
assert not [m for m in sys.modules if m == "longsynth" or m.startswith("longsynth.")]


def inside(base, names):  # {module: [exit code, traceback]} of each of names (modules inside package base, which
    groups = {}              # this process has imported; "": top-level ones), each imported in a fork of this process
    for name in names:
        head = name[len(base) + 1 if base else 0:].split(".")[0]
        groups.setdefault(f"{base}.{head}" if base else head, []).append(name)
    results = {}
    for head, group in groups.items():
        results.update(forked(head, [name for name in group if name != head]))
    return results


def forked(name, below):  # module name imported in a fork of this process; there, once it imported, below (the
    r, w = os.pipe()         # modules inside it) each in a fork of that one
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            importlib.import_module(name)
        except BaseException:
            text = traceback.format_exc()[-4000:]
            out = {n: [1, text] for n in (name, *below)}
        else:
            out = {name: [0, ""], **inside(name, below)}
        with os.fdopen(w, "wb") as fh:
            fh.write(json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        data = fh.read()
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code or not data:  # the fork died on its way (a module that ends the process as it imports)
        return {n: [code or 1, f"the process importing {name} ended with exit code {code}"] for n in (name, *below)}
    return json.loads(data)


print(json.dumps(inside("", json.loads(sys.argv[1]))))
"""
ALONE = sorted(m for m in modules() if not m.endswith(".__main__"))


# test_a_module_that_fails_alone_is_caught's stand-ins ({folder or "": {module: source}}), imported in the same run as
# ours (a folder on PYTHONPATH): a run of their own imported the third-party libraries again, seconds
STAND_INS = {"": {"bad_alone": "x = torch.zeros(1)\n",  # torch is in sys.modules, not bound here
                  "good_alone": "import torch\nx = torch.zeros(1)\n"},
             # inside a package: a module imported before another in a sibling's fork leaves nothing behind for it,
             # and a package that fails to import fails each module inside it
             "pkg_alone": {"__init__": "", "helper": "VALUE = 1\n", "a_uses": "import pkg_alone.helper\n",
                           "b_forgets": "import pkg_alone\nx = pkg_alone.helper.VALUE\n"},
             "broken_alone": {"__init__": "raise RuntimeError('broken package')\n", "child": ""}}
STAND_IN_NAMES = ["bad_alone", "broken_alone", "broken_alone.child", "good_alone", "pkg_alone", "pkg_alone.a_uses",
                  "pkg_alone.b_forgets", "pkg_alone.helper"]


@pytest.fixture(scope="module")
def imported_alone(tmp_path_factory):
    """{module: [exit code, traceback]}: each module imported in a fork of its own, ours and the stand-ins."""
    import json

    root = tmp_path_factory.mktemp("stand_ins")
    for folder, files in STAND_INS.items():
        (root / folder).mkdir(exist_ok=True)
        for name, text in files.items():
            (root / folder / f"{name}.py").write_text(text)
    path = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    r = subprocess.run([sys.executable, "-c", _ALONE, json.dumps(ALONE + STAND_IN_NAMES)], capture_output=True,
                       text=True, timeout=600,
                       env={**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1", "PYTHONPATH": path})
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ALONE)
def test_each_module_imports_alone(name, imported_alone):
    """With none of our modules imported before it (an optional library that is not installed
    is skipped; ``longsynth.__main__`` runs the command line, not tried)."""
    code, err = imported_alone[name]
    missing = "ModuleNotFoundError: No module named"
    if code and missing in err and "'longsynth" not in err.rsplit(missing, 1)[1]:
        pytest.skip(err.strip().splitlines()[-1])
    assert code == 0, err[-2000:]


def test_a_module_that_fails_alone_is_caught(imported_alone):
    """The forked import reports a module whose import raises, one that uses a library it never
    imported even though the parent imported that library, and one that uses a submodule that
    only a sibling imported (STAND_INS, in the run that imports ours)."""
    assert sorted(imported_alone) == sorted(ALONE + STAND_IN_NAMES)  # each name reported, none more
    res = {n: imported_alone[n] for n in STAND_IN_NAMES}
    assert [res[n][0] for n in ("good_alone", "pkg_alone", "pkg_alone.a_uses", "pkg_alone.helper")] == [0, 0, 0, 0]
    assert res["bad_alone"][0] == 1 and "NameError: name 'torch' is not defined" in res["bad_alone"][1]
    assert res["pkg_alone.b_forgets"][0] == 1 and "has no attribute 'helper'" in res["pkg_alone.b_forgets"][1]
    for name in ("broken_alone", "broken_alone.child"):
        assert res[name][0] == 1 and "RuntimeError: broken package" in res[name][1]


def test_layers_stand_apart_from_the_harness():
    """longsynth.models_ref.layers imports only its own modules (and torch): the harness, the
    trainer and the model stack build on the layers, never the other way round."""
    g = graph()
    layers = {name for name in g if name.startswith("longsynth.models_ref.layers")}
    assert {"longsynth.models_ref.layers.s4", "longsynth.models_ref.layers.attention"} <= layers
    for name in layers:
        assert g[name] <= layers, (name, g[name] - layers)


# The harness's rooms (docs/models.md), each importing only the rooms before it: the layers, the
# protocols' tables and the models built from them, training one model, the reports read from
# runs, and evaluation (planning and running sweeps), which uses them all.
ROOMS = ("layers", "protocols", "models", "training", "reports", "evaluation")


def room(name):
    """The room of a module of longsynth.models_ref (None for the package itself)."""
    parts = name.split(".")
    return parts[2] if len(parts) > 2 else None


def test_the_harness_is_grouped_by_concern():
    """models_ref's top holds its rooms and few modules; a module imports only from its own room
    and the rooms before it, so a newcomer knows where a change goes and no room depends on a
    later one."""
    top = os.listdir(os.path.join(REPO, "models_ref"))
    assert len([f for f in top if f.endswith(".py") or f in ROOMS]) <= 12, sorted(top)
    assert set(ROOMS) <= set(top)
    g = graph()
    late = []
    for name, targets in g.items():
        if not name.startswith("longsynth.models_ref.") or room(name) not in ROOMS:
            continue
        for target in targets:
            if target.startswith("longsynth.models_ref.") and room(target) in ROOMS \
                    and ROOMS.index(room(target)) > ROOMS.index(room(name)):
                late.append(f"{name} -> {target}")
    assert not late, "a room imports a later one: " + "; ".join(sorted(late))
    assert "longsynth.models_ref.training.trainer" in g["longsynth.models_ref.evaluation.harness"]  # the walk sees them


def test_the_rooms_check_catches_a_late_import(monkeypatch):
    """The check above fails on a room that reaches forward (a report importing the sweep)."""
    g = graph()
    g["longsynth.models_ref.reports.records"].add("longsynth.models_ref.evaluation.protocol")
    monkeypatch.setattr(sys.modules[__name__], "graph", lambda: g)
    with pytest.raises(AssertionError, match="reports.records -> longsynth.models_ref.evaluation.protocol"):
        test_the_harness_is_grouped_by_concern()
