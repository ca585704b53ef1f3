"""A Chomsky-hierarchy model trained by the authors' own loop beside ours, read at every length.

    python bench/chomsky_training_reference.py CHECKOUT --ours RUN/checkpoints/last.pt \
        [--task duplicate_string --arch tape_rnn --steps 5000 --seed 0] [--jax-python /tmp/jaxenv/bin/python] \
        [--json bench/results/chomsky_training_reference.json]

CHECKOUT is google-deepmind/neural_networks_chomsky_hierarchy @ 2b8eb4be in a folder named
``neural_networks_chomsky_hierarchy`` (its modules import themselves by that name). Their side runs in
``--jax-python`` (jax, dm-haiku, optax, chex, dm-tree, einshape, tqdm), one thread: their
``training.TrainingWorker`` as ``experiments/example.py`` 87-128 sets it up (batch 128, lengths uniform in 1-40, Adam
at lr 1e-3 with the global norm clipped to 1, their loss ``mean(sum(pointwise loss, -1))``, ``seed`` and
``model_init_seed`` = --seed), the model at the paper's sizes (hidden 256, cells of 8; the Tape-RNN's tape of 256,
the Stack-RNN's stack of 128: appendix A.2), then their ``range_evaluation`` over lengths 1-100 (128 rows each).
Their code is run from the checkout, never copied.

Ours: the checkpoint of a ``longsynth evaluate ARCH --suite chomsky-TASK`` run with the same steps (``--ours``),
read at the same lengths, 128 rows each of the task's test split. The JSON holds both sides' accuracy at every
length, their training log (loss and batch accuracy every 100 steps), and the means over 1-40 (the training lengths)
and 41-100. One seed a side: a reading of two runs, not of the two codes' laws.
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from _common import finish, machine, write_json  # noqa: E402

THEIRS = r'''
import json, sys, time
sys.path.insert(0, sys.argv[1])
import haiku as hk, jax.numpy as jnp
from neural_networks_chomsky_hierarchy.experiments import constants, curriculum, training, utils
task_name, arch, steps, seed = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
task = constants.TASK_BUILDERS[task_name]()
sizes = {"tape_rnn": {"memory_size": 256, "memory_cell_size": 8},
         "stack_rnn": {"stack_size": 128, "stack_cell_size": 8}}.get(arch, {})  # rnn, lstm: the core's size alone
model = constants.MODEL_BUILDERS[arch](output_size=task.output_size, return_all_outputs=True, hidden_size=256,
                                       **sizes)
model = hk.transform(utils.make_model_with_empty_targets(model, task, 0, task.output_length(10) == 1))
def loss_fn(output, target):
    return jnp.mean(jnp.sum(task.pointwise_loss_fn(output, target), axis=-1)), {}
def accuracy_fn(output, target):
    mask = task.accuracy_mask(target)
    return jnp.sum(mask * task.accuracy_fn(output, target)) / jnp.sum(mask)
params = training.ClassicTrainingParams(
    seed=seed, model_init_seed=seed, training_steps=steps, log_frequency=100,
    length_curriculum=curriculum.UniformCurriculum(values=list(range(1, 41))), batch_size=128, task=task,
    model=model, loss_fn=loss_fn, learning_rate=1e-3, accuracy_fn=accuracy_fn, compute_full_range_test=True,
    max_range_test_length=100, range_test_total_batch_size=128, range_test_sub_batch_size=64)
t0 = time.time()
log, ranges, _ = training.TrainingWorker(params, use_tqdm=False).run()
print(json.dumps({"seconds": time.time() - t0, "train": [{k: float(v) for k, v in r.items()} for r in log],
                  "by_length": {int(r["length"]): float(r["accuracy"]) for r in ranges}}))
'''
TASKS = {"duplicate_string": "chomsky-duplicate-string", "reverse_string": "chomsky-reverse-string",
         "odds_first": "chomsky-odds-first", "stack_manipulation": "chomsky-stack-manipulation"}


def theirs(checkout, jax_python, task, arch, steps, seed):
    env = dict(os.environ, XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
               OMP_NUM_THREADS="1")
    r = subprocess.run([jax_python, "-c", THEIRS, os.path.dirname(os.path.abspath(checkout)), task, arch, str(steps),
                        str(seed)], env=env, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"their run failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def ours(checkpoint, task, lengths):
    import torch

    import longsynth
    from longsynth.models_ref.training.checkpoints import load_model

    torch.set_num_threads(1)
    model, _ = load_model(checkpoint)
    model.eval()
    acc = {}
    with torch.no_grad():
        for n in lengths:
            b = longsynth.batch(task, 0, 128, split="test", length=n, seed=7)
            x, y = (torch.from_numpy(b[k].astype("int64")) for k in ("inputs", "targets"))
            scored = y != -100
            acc[n] = float((model(x).argmax(-1)[scored] == y[scored]).float().mean())
    return acc


def means(by_length):
    inside = [v for n, v in by_length.items() if int(n) <= 40]
    beyond = [v for n, v in by_length.items() if int(n) > 40]
    return {"1-40": sum(inside) / len(inside), "41-100": sum(beyond) / len(beyond)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkout", help="neural_networks_chomsky_hierarchy @ 2b8eb4be (the folder of that name)")
    ap.add_argument("--ours", required=True, help="a checkpoint of our run (RUN/checkpoints/last.pt)")
    ap.add_argument("--task", default="duplicate_string", choices=sorted(TASKS))
    ap.add_argument("--arch", default="tape_rnn", choices=["tape_rnn", "stack_rnn", "rnn", "lstm"])
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jax-python", default="/tmp/jaxenv/bin/python")
    ap.add_argument("--theirs-json", default=None,
                    help="their side from an earlier run of this script (its JSON): their run takes over an hour")
    ap.add_argument("--json", default="bench/results/chomsky_training_reference.json")
    a = ap.parse_args()
    results = {"machine": machine(), "task": a.task, "arch": a.arch, "steps": a.steps, "seed": a.seed}
    t0 = time.time()
    if a.theirs_json:
        with open(a.theirs_json) as f:
            earlier = json.load(f)
        if (earlier["task"], earlier["arch"], earlier["steps"], earlier["seed"]) != (a.task, a.arch, a.steps, a.seed):
            sys.exit(f"{a.theirs_json}: another run's (task, arch, steps, seed)")
        results["theirs"] = earlier["theirs"]
    else:
        results["theirs"] = theirs(a.checkout, a.jax_python, a.task, a.arch, a.steps, a.seed)
    results["ours"] = {"checkpoint": os.path.abspath(a.ours), "by_length": ours(a.ours, TASKS[a.task], range(1, 101))}
    for side in ("theirs", "ours"):
        results[side]["means"] = means(results[side]["by_length"])
        print(f"{side}: " + ", ".join(f"{k} {v:.3f}" for k, v in results[side]["means"].items()))
    results["seconds"] = time.time() - t0
    finish(results["machine"])
    write_json(a.json, results)


if __name__ == "__main__":
    main()
