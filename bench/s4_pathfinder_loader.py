"""A harness that reads a Pathfinder directory the way the PathFinder loaders of
state-spaces/s4 (``src/dataloaders/lra.py``) and ag1988/dlr (``src/dataloaders/datasets.py``)
do, without their framework (Hydra, Lightning, torchvision, einops):

* ``PathFinderDataset(data_dir)``: for each difficulty folder (theirs: only
  ``curv_contour_length_14``), every ``metadata/*.npy`` sorted by its number, read as text,
  one sample per line split on whitespace: image path ``<folder>/<field 0>/<field 1>``,
  label ``int(field 3)``; the one path on their blacklist (an empty image of the release,
  ``pathfinder32/curv_baseline/imgs/0/sample_172.png``, matched against ``<data_dir's
  name>/<image path>``) is skipped. ``ds[i]`` opens the PNG with PIL, ``.convert("L")``, and
  applies their default transform: ToTensor (x / 255 as float32 [1, H, W]), Normalize(0.5,
  0.5) when ``center``, then ``1 h w -> (h w) 1`` (sequential).
* ``splits(ds)``: their ``setup``: val and test = int(0.1 * len), train the rest, by
  ``torch.utils.data.random_split`` with ``torch.Generator().manual_seed(42)``.

    python bench/s4_pathfinder_loader.py OUT/pathfinder32      # prints counts and a sample
"""
import sys
from pathlib import Path

import numpy as np
import torch
from PIL import Image

BLACKLIST = {"pathfinder32/curv_baseline/imgs/0/sample_172.png"}


class PathFinderDataset(torch.utils.data.Dataset):
    def __init__(self, data_dir, diff_levels=("curv_contour_length_14",), center=True, sequential=True):
        self.data_dir = Path(data_dir).expanduser()
        assert self.data_dir.is_dir(), f"data_dir {self.data_dir} does not exist"
        self.center, self.sequential = center, sequential
        samples = []
        for level in diff_levels:
            metas = sorted((self.data_dir / level / "metadata").glob("*.npy"), key=lambda p: int(p.stem))
            assert metas, "No metadata found"
            for meta in metas:
                with open(meta, "r") as f:
                    for line in f.read().splitlines():
                        fields = line.split()
                        path = Path(level) / fields[0] / fields[1]
                        if str(Path(self.data_dir.stem) / path) not in BLACKLIST:
                            samples.append((path, int(fields[3])))
        self.samples = samples

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, idx):
        path, target = self.samples[idx]
        with open(self.data_dir / path, "rb") as f:
            img = Image.open(f).convert("L")
        x = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0)[None]  # ToTensor: [1, H, W]
        if self.center:
            x = (x - 0.5) / 0.5
        x = x.reshape(-1, 1) if self.sequential else x.permute(1, 2, 0)
        return x, target


def splits(ds, val_split=0.1, test_split=0.1, seed=42):
    n = len(ds)
    val, test = int(val_split * n), int(test_split * n)
    return torch.utils.data.random_split(ds, [n - val - test, val, test], generator=torch.Generator().manual_seed(seed))


if __name__ == "__main__":
    ds = PathFinderDataset(sys.argv[1])
    tr, va, te = splits(ds)
    x, y = ds[0]
    print(f"{len(ds)} samples: train {len(tr)}, val {len(va)}, test {len(te)}; sample 0: x {tuple(x.shape)} "
          f"in [{x.min():.2f}, {x.max():.2f}], label {y}")
