"""Models for the shape-assumption tests of test/Conversion/import, written
to the directory given as argv[1] at test time (scripting needs this file's
source, so they cannot be built from `python -c`)."""
import pathlib
import sys
from typing import List

import torch
from torch import nn


class SizedBranch(nn.Module):
    """Control flow on a batch size: the import is valid for that size only."""

    def forward(self, x):
        if x.size(0) > 4:
            return x * 2.0
        return x + 1.0


class SizedLoop(nn.Module):
    """A loop over the rows of the input: unrolled per batch size."""

    def forward(self, x):
        y = x[0]
        for i in range(x.size(0) - 1):
            y = y + x[i + 1]
        return y


def check_batch(size: List[int]):
    prod = size[0]
    for i in range(len(size) - 2):
        prod *= size[i + 2]
    if prod == 1:
        raise ValueError("expected more than one value")


class Checked(nn.Module):
    """Only input checks and rank-dependent loops (like batch norm's): the
    computation does not depend on the sizes."""

    def forward(self, x):
        if x.dim() != 4:
            raise ValueError("expected a 4-D input")
        check_batch(x.size())
        return x.flatten(1) * 2.0


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    torch.jit.script(SizedBranch()).save(str(out / "sized_branch.pt"))
    torch.jit.script(SizedLoop()).save(str(out / "sized_loop.pt"))
    torch.jit.script(Checked()).save(str(out / "checked.pt"))


if __name__ == "__main__":
    main()
