#!/usr/bin/python3
"""Predicted vs measured training peak of recurrent layer stacks.

Every combination of cell (nn.LSTM, nn.GRU, nn.RNN), one or two layers,
one or two directions, time-major or batch-first, between a linear input
projection and a linear head, at 30 steps x batch 4:

    /usr/bin/python3 bench/recurrent_prediction.py

prints one row per combination: the baseline peak memopt-compile predicts
(--analyze-only, kernel probe on) and the one measured for a training step
of the scripted eager model (counting allocator, one thread).
"""
import itertools
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import torch
import torch.nn as nn

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))
from memopt import measure  # noqa: E402

torch._C._set_graph_executor_optimize(False)


class Encoder(nn.Module):
    def __init__(self, cell: str, layers: int, bidirectional: bool,
                 batch_first: bool):
        super().__init__()
        self.proj = nn.Linear(12, 32)
        self.rnn = {"gru": nn.GRU, "lstm": nn.LSTM, "rnn": nn.RNN}[cell](
            32, 40, num_layers=layers, bidirectional=bidirectional,
            batch_first=batch_first)
        self.out = nn.Linear(80 if bidirectional else 40, 5)
        self.time_dim = 1 if batch_first else 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.rnn(torch.tanh(self.proj(x)))
        return self.out(y.mean(self.time_dim))


def main() -> int:
    stats = measure.load_runtime()
    torch.set_num_threads(1)
    tool = measure.tool_path("memopt-compile")
    env = dict(os.environ, MEMOPT_KERNEL_PROBE_CACHE="off")
    print("| cell | layers | directions | layout | predicted (B) | "
          "measured (B) | error |")
    print("|---|---:|---:|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        pt, report = (pathlib.Path(folder) / name
                      for name in ("model.pt", "report.json"))
        for cell, layers, bidirectional, batch_first in itertools.product(
                ["lstm", "gru", "rnn"], [1, 2], [False, True], [False, True]):
            torch.manual_seed(0)
            torch.jit.script(Encoder(cell, layers, bidirectional,
                                     batch_first).train()).save(str(pt))
            shape = (4, 30, 12) if batch_first else (30, 4, 12)
            subprocess.run(
                [str(tool), str(pt), "--input-shape",
                 "x:" + "x".join(map(str, shape)), "--analyze-only",
                 "--intra-op-threads", "1", "--report", str(report)], check=True, capture_output=True,
                env=env)
            predicted = json.loads(report.read_text())["signatures"][0][
                "baseline"]["predicted_peak_bytes"]
            torch.manual_seed(1)
            measured = measure.measure_training_step(
                torch.jit.load(str(pt)), [torch.randn(*shape)],
                stats=stats).peak_bytes
            print(f"| {cell} | {layers} | {2 if bidirectional else 1} | "
                  f"{'batch-first' if batch_first else 'time-major'} | "
                  f"{predicted} | {measured} | "
                  f"{(predicted - measured) / measured:+.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
