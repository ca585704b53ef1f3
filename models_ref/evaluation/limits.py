"""The bounds of evaluate's and validate's options (docs/evaluate.md, "Bounds"), checked
before anything is planned: a count far beyond any sweep would otherwise build a plan of
millions of runs (gigabytes) before it failed. Plain numbers, so the command line reads
them without importing torch.
"""

MAX_STEPS = 5_000_000  # ten times the longest protocol (Path-X at the paper scale: 500K)
MAX_SEEDS = 1_000
MAX_LRS = 64  # learning rates in one --lr list
MAX_JOBS = 256
MAX_THREADS = 256
MAX_BATCH = 1 << 20  # validate's --batch-size (the largest preset batch is 512)
MAX_RUNS = 10_000  # (tasks x learning rates x grid points x seeds) of one sweep: its report stays readable
