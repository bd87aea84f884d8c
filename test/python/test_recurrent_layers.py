"""Recurrent layer stacks (nn.LSTM, nn.GRU, nn.RNN: one `aten::lstm` /
`gru` / `rnn_tanh` / `rnn_relu` call for every layer and step).

What autograd keeps for such a call depends on the sequence length, the
layer count, the direction and the kernel PyTorch picks, so no saved-tensor
row describes it; memopt-compile's kernel probe runs each call once at its
static shapes and records what it keeps (`measured_saves`) and its kernels'
peaks (`high_water`).

  * every recurrent call of each model carries both marks; none is left to
    the unknown-op bound;
  * the predicted training peak is within 10 % of the measured one, for
    time-major and batch-first, one and several layers, one and two
    directions, frozen weights, states passed in;
  * compiled with `--prefer memory`, each trains with gradients bitwise
    equal to eager, and its predicted peak is within 10 % of its measured
    one (an Elman stack's is not yet: strict xfail);
  * `--kernel-workspaces=model` (no probe) reports the calls as unknown;
    a CUDA plan keeps a stack whole (cuDNN's dropout generator).
"""
import json
import os
import subprocess
import sys

import pytest
import torch
import torch.nn as nn

from conftest import REPO, tool_path

sys.path.insert(0, str(REPO / "python"))
from memopt import measure  # noqa: E402

torch._C._set_graph_executor_optimize(False)

TOLERANCE = 0.10
VOCAB = 300


class LanguageModel(nn.Module):
    """Embedding, a batch-first stack with dropout between layers, head."""

    def __init__(self, cell: str, layers: int = 2, vocab: int = VOCAB,
                 dim: int = 64, hidden: int = 96):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        rnn = {"lstm": nn.LSTM, "gru": nn.GRU}[cell]
        self.rnn = rnn(dim, hidden, num_layers=layers, dropout=0.25,
                       batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        y, _ = self.rnn(self.embed(idx))
        return self.head(y)


class BidirectionalEncoder(nn.Module):
    """Time-major, two directions, features in and a pooled output."""

    def __init__(self, cell: str = "gru"):
        super().__init__()
        rnn = {"gru": nn.GRU, "lstm": nn.LSTM}[cell]
        self.proj = nn.Linear(12, 32)
        self.rnn = rnn(32, 40, num_layers=2, bidirectional=True)
        self.out = nn.Linear(80, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.rnn(torch.tanh(self.proj(x)))
        return self.out(y.mean(0))


class ElmanStack(nn.Module):
    """nn.RNN with ReLU and tanh layers after a convolutional front end."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(6, 24, 3, padding=1)
        self.relu_rnn = nn.RNN(24, 48, nonlinearity="relu", batch_first=True)
        self.tanh_rnn = nn.RNN(48, 48, num_layers=2, batch_first=True)
        self.out = nn.Linear(48, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.conv(x)).transpose(1, 2)
        y, _ = self.relu_rnn(h)
        y, _ = self.tanh_rnn(y)
        return self.out(y[:, -1])


class FrozenEncoder(nn.Module):
    """A pretrained (frozen) LSTM under a trained head: only its input
    needs a gradient, and what it keeps differs."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(10, 32)
        self.rnn = nn.LSTM(32, 64, batch_first=True)
        for p in self.rnn.parameters():
            p.requires_grad_(False)
        self.out = nn.Linear(64, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.rnn(self.inp(x))
        return self.out(y)


class StatefulLSTM(nn.Module):
    """Initial states passed in (truncated backpropagation through time)."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(16, 32, num_layers=2)
        self.out = nn.Linear(32, 16)

    def forward(self, x: torch.Tensor, h0: torch.Tensor,
                c0: torch.Tensor) -> torch.Tensor:
        y, (h, c) = self.rnn(x, (h0, c0))
        return self.out(y) + h.sum() + c.sum()


MODELS = {
    "lstm_lm": (lambda: LanguageModel("lstm"), ["idx:4x48:i64"]),
    "gru_lm_3_layers": (lambda: LanguageModel("gru", layers=3),
                        ["idx:4x40:i64"]),
    "bidirectional_gru": (BidirectionalEncoder, ["x:30x4x12"]),
    "bidirectional_lstm": (lambda: BidirectionalEncoder("lstm"),
                           ["x:30x4x12"]),
    "elman": (ElmanStack, ["x:4x6x50"]),
    "frozen_lstm": (FrozenEncoder, ["x:4x50x10"]),
    "stateful_lstm": (StatefulLSTM, ["x:25x3x16", "h0:2x3x32", "c0:2x3x32"]),
}


def make_inputs(specs):
    torch.manual_seed(1)
    inputs = []
    for spec in specs:
        parts = spec.split(":")
        shape = [int(d) for d in parts[1].split("x")]
        if parts[-1] == "i64":  # token ids of the language models
            inputs.append(torch.randint(0, VOCAB, shape))
        else:
            inputs.append(torch.randn(*shape))
    return inputs


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("recurrent")
    paths = {}
    for name, (make, _) in MODELS.items():
        torch.manual_seed(0)
        paths[name] = folder / f"{name}.pt"
        torch.jit.script(make().train()).save(str(paths[name]))
    return paths


def compile_(pt, specs, *extra, output=None):
    """(report, emitted IR) of memopt-compile (analysis only without
    `output`)."""
    report = pt.with_suffix(f".{abs(hash((extra, output)))}.json")
    # Measured on one intra-op thread (below).
    command = [str(tool_path("memopt-compile")), str(pt), "--report",
               str(report), "--emit-mlir", "-", "--intra-op-threads", "1",
               *extra]
    for spec in specs:
        command += ["--input-shape", spec]
    command += ["-o", str(output)] if output else ["--analyze-only"]
    env = dict(os.environ, MEMOPT_KERNEL_PROBE_CACHE="off")
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(report.read_text()), result.stdout


def recurrent_lines(ir):
    return [line for line in ir.splitlines()
            if any(f'memopt.op "aten::{name}"' in line
                   for name in ("lstm", "gru", "rnn_tanh", "rnn_relu"))]


def signature(report):
    return report["signatures"][0]


@pytest.mark.parametrize("name", MODELS)
def test_every_recurrent_call_is_measured(saved, name):
    report, ir = compile_(saved[name], MODELS[name][1])
    calls = recurrent_lines(ir)
    assert calls, ir
    for call in calls:
        assert "high_water = #memopt.high_water<" in call, call
        assert "measured_saves = #memopt.saves<" in call, call
    assert report["kernel_probe"]["skipped"] == 0
    assert not any(op in json.dumps(signature(report).get("unknown_ops", []))
                   for op in ("lstm", "gru", "rnn_"))


@pytest.mark.parametrize("name", MODELS)
def test_prediction_matches_measured(saved, runtime, name):
    report, _ = compile_(saved[name], MODELS[name][1])
    predicted = signature(report)["baseline"]["predicted_peak_bytes"]
    torch.set_num_threads(1)
    module = torch.jit.load(str(saved[name]))
    measured = measure.measure_training_step(
        module, make_inputs(MODELS[name][1]), stats=runtime).peak_bytes
    error = (predicted - measured) / measured
    print(f"{name}: predicted {predicted} B, measured {measured} B "
          f"({error:+.2%})")
    assert abs(error) <= TOLERANCE, (name, predicted, measured)


PLANNED = ["lstm_lm", "bidirectional_gru", "elman", "stateful_lstm"]
# On PyTorch 1.13 the recompute of a checkpointed Elman (rnn_tanh) layer
# on a transposed input is predicted 19 % above what it measures (not yet
# explained; 2.6 is within 4 %); strict: this fails once it is right.
KNOWN_PLAN_ERRORS = {"elman"} if torch.__version__.startswith("1.13") else set()


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.xfail(
        strict=True, reason="checkpointed rnn_tanh recompute over-predicted"))
    if name in KNOWN_PLAN_ERRORS else name for name in PLANNED])
def test_memory_plan_prediction(saved, runtime, tmp_path, name):
    compiled_path = tmp_path / f"{name}.memopt.pt"
    report, _ = compile_(saved[name], MODELS[name][1], "--prefer", "memory",
                         output=compiled_path)
    torch.set_num_threads(1)
    measured = measure.measure_training_step(
        torch.jit.load(str(compiled_path)), make_inputs(MODELS[name][1]),
        stats=runtime).peak_bytes
    predicted = signature(report)["planned"]["predicted_peak_bytes"]
    error = (predicted - measured) / measured
    print(f"{name}: plan predicted {predicted} B, measured {measured} B "
          f"({error:+.2%})")
    assert abs(error) <= TOLERANCE, (name, predicted, measured)


@pytest.mark.parametrize("name", PLANNED)
def test_memory_plan_trains_bitwise(saved, runtime, tmp_path, name):
    compiled_path = tmp_path / f"{name}.memopt.pt"
    report, _ = compile_(saved[name], MODELS[name][1], "--prefer", "memory",
                         output=compiled_path)
    torch.set_num_threads(1)
    eager = torch.jit.load(str(saved[name]))
    compiled = torch.jit.load(str(compiled_path))
    inputs = make_inputs(MODELS[name][1])
    result = measure.compare_with_eager(eager, compiled, inputs, steps=2)
    assert result["bitwise"], result
    # The plan did something: the layers were split and some recomputed.
    assert signature(report)["regions"], report


def test_without_the_probe_the_calls_are_unknown(saved):
    report, ir = compile_(saved["lstm_lm"], MODELS["lstm_lm"][1],
                          "--kernel-workspaces=model")
    assert "measured_saves" not in ir
    assert "aten::lstm" in json.dumps(signature(report)["unknown_ops"])


def test_cuda_plans_keep_the_stack_whole(saved):
    """cuDNN runs a whole stack and draws its dropout from its own
    generator: one-layer calls would not give the same bits, so a CUDA plan
    keeps the call (and, without a probe for CUDA, reports it unknown)."""
    report, ir = compile_(saved["lstm_lm"], MODELS["lstm_lm"][1],
                          "--device", "cuda")
    calls = recurrent_lines(ir)
    assert len(calls) == 1 and "true, 2, 2.500000e-01" in calls[0], calls
    assert "aten::lstm" in json.dumps(signature(report)["unknown_ops"])
