"""Loading the authors' generators from their checkouts, for the fixture scripts and
bench/field_recall.py. Their code is run from the checkout given, never copied here; each
loader registers stand-ins only for imports the generator itself never uses.

    zoology(path)  -> zoology.data.multiquery_ar.multiquery_ar   (HazyResearch/zoology @ d88d6f54)
    safari(path)   -> the module src.dataloaders.synthetics        (HazyResearch/safari @ 02220c69)
    s4_copying(path) -> the module of src/dataloaders/datasets/copying.py (state-spaces/s4 @ e757cef5)
"""
import importlib.util
import os
import sys
import types


def zoology(path):
    """zoology's package imports ``wandb`` (logging); an empty stand-in when it is not installed."""
    sys.path.insert(0, os.path.abspath(path))
    try:
        import wandb  # noqa: F401
    except ImportError:
        sys.modules["wandb"] = types.ModuleType("wandb")
    from zoology.data.multiquery_ar import multiquery_ar

    return multiquery_ar


def safari(path):
    """safari's ``src`` and ``src.dataloaders`` without their ``__init__`` (which imports every
    dataset: torchvision, einops, ...), and a stand-in ``src.dataloaders.base`` with an empty
    ``SequenceDataset``."""
    root = os.path.abspath(path)
    sys.path.insert(0, root)
    for name, sub in (("src", "src"), ("src.dataloaders", os.path.join("src", "dataloaders"))):
        pkg = types.ModuleType(name)
        pkg.__path__ = [os.path.join(root, sub)]
        sys.modules[name] = pkg
    base = types.ModuleType("src.dataloaders.base")
    base.SequenceDataset = type("SequenceDataset", (), {})
    sys.modules["src.dataloaders.base"] = base
    from src.dataloaders import synthetics

    return synthetics


def s4_copying(path):
    """S4's copying module, loaded by path; ``src.utils.distributed`` (unused by it) a stand-in."""
    for name in ("src", "src.utils"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["src.utils.distributed"] = sys.modules["src.utils"].distributed = types.ModuleType("distributed")
    file = os.path.join(os.path.abspath(path), "src", "dataloaders", "datasets", "copying.py")
    spec = importlib.util.spec_from_file_location("s4_copying", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
