"""Name -> Task for every generator module. Add a module here to publish its tasks."""
import importlib

from longsynth.errors import LongsynthError

# Each module defines TASK (one task) or TASKS (a family): listed in `longsynth list` order.
MODULES = [
    "longsynth.generators.atomic.noise",
    "longsynth.generators.atomic.select",
    "longsynth.generators.atomic.mips",
    "longsynth.generators.atomic.solve",
    "longsynth.generators.listops.tasks",
    "longsynth.generators.pathfinder.seg",
    "longsynth.generators.pathfinder.lra",
    "longsynth.generators.recall.mqar",
    "longsynth.generators.recall.safari",
    "longsynth.generators.recall.copying",
    "longsynth.generators.repeat.tasks",
    "longsynth.generators.flipflop.flipflop",
    "longsynth.generators.regbench.regbench",
    "longsynth.generators.mad",
    "longsynth.generators.state.word_problem",
    "longsynth.generators.state.formal_language",
    "longsynth.generators.chomsky",
]

_TASKS = None


def all_tasks():
    global _TASKS
    if _TASKS is None:
        found = {}
        for name in MODULES:
            mod = importlib.import_module(name)
            for task in getattr(mod, "TASKS", None) or [mod.TASK]:
                found[task.name] = task
        _TASKS = found
    return _TASKS


def get(name):
    """The Task called ``name``; ValueError listing the known tasks otherwise."""
    tasks = all_tasks()
    if name not in tasks:
        import difflib

        near = difflib.get_close_matches(str(name), tasks, n=1)
        hint = f"did you mean {near[0]}? " if near else ""
        raise LongsynthError(f"task: unknown task {name!r}; {hint}choose from {', '.join(tasks)}")
    return tasks[name]
