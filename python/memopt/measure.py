"""Measuring what memopt promises: peak training memory, step time, and
gradients equal to eager.

Peak training memory is what ARCHITECTURE.md defines: the high-water mark of
bytes allocated during one training step (forward + backward) *above the
bytes live just before the step*, in steady state (after a warm-up step, with
the `.grad` buffers allocated and zeroed, not freed). On CPU it is read from
the runtime's counting allocator (`torch.ops.memopt.memory_stats`).

    from memopt import measure
    stats = measure.load_runtime()                 # loads + enables counting
    m = measure.measure_training_step(model, inputs, steps=3)
    m.peak_bytes, m.resident_bytes, m.step_time_s

    report = measure.compile_model("m.pt", "m.memopt.pt", ["x:8x3x64x64"],
                                   ["--prefer", "memory"])
    report["planned"]["predicted_peak_bytes"]

    cmp = measure.compare_with_eager(eager_model, compiled_module, inputs)
    cmp["bitwise"], cmp["worst_relative"], cmp["problems"]

Comparisons of a compiled (TorchScript) module against eager must run in a
process that called `torch._C._set_graph_executor_optimize(False)` before its
first scripted call: the profiling executor redraws dropout masks from a
function's second call on. `run_worker` runs a whole measurement (eager,
`torch.utils.checkpoint` baseline, compiled modules) in such a fresh process:

    python3 -m memopt.measure worker '<json spec>'    # see `worker`
"""
import copy
import inspect
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import (Callable, Dict, Iterable, List, Optional, Sequence,
                    Tuple, Union)

import torch
import torch.nn as nn

__all__ = [
    "REPO", "build_dir", "tool_path", "runtime_library_path", "load_runtime",
    "StepMeasurement", "resident_bytes", "measure_training_step",
    "measure_interleaved", "step_time_ratios",
    "train_steps", "compare_with_eager", "zero_grad_sets_none",
    "CompileError", "compile_model",
    "checkpoint_blocks", "build_zoo_model", "make_inputs", "save_zoo_model",
    "compare_records", "worker", "run_worker",
    "format_bytes", "same_bits",
]

REPO = pathlib.Path(__file__).resolve().parents[2]

InputShapes = Union[Sequence[str], Sequence[Tuple[str, Sequence[int]]]]


# ---------------------------------------------------------------------------
# Where things are
# ---------------------------------------------------------------------------

def build_dir() -> pathlib.Path:
    """MEMOPT_BUILD_DIR, or build/ in the checkout."""
    return pathlib.Path(os.environ.get("MEMOPT_BUILD_DIR", REPO / "build"))


def tool_path(name: str) -> pathlib.Path:
    return build_dir() / "bin" / name


def runtime_library_path() -> pathlib.Path:
    """MEMOPT_RUNTIME_LIB, or lib/libmemopt_runtime.so in the build dir."""
    return pathlib.Path(os.environ.get(
        "MEMOPT_RUNTIME_LIB", build_dir() / "lib" / "libmemopt_runtime.so"))


def build_launch_stubs(source, library, device: str = "cpu") -> pathlib.Path:
    """Compiles the launch stubs `memopt-compile --emit-stubs` wrote into a
    shared library linking the runtime (runtime_library_path()): the host
    launchers with the C++ compiler (warnings are errors: generated code
    compiles clean), or with nvcc for `device="cuda"` the CUDA ones too,
    for $MEMOPT_CUDA_ARCHITECTURES' first architecture (default 90), with
    the host compiler and the shared CUDA runtime the runtime's build used.
    Raises RuntimeError with the compiler's last words on failure."""
    source, library = pathlib.Path(source), pathlib.Path(library)
    runtime = runtime_library_path()
    common = ["-std=c++17", "-O2", "-shared", f"-I{REPO / 'include'}",
              str(source), "-o", str(library), f"-L{runtime.parent}",
              "-lmemopt_runtime"]
    if device == "cuda":
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        arch = os.environ.get("MEMOPT_CUDA_ARCHITECTURES", "90").split(";")[0]
        cache = build_dir() / "CMakeCache.txt"
        host = re.search(r"^CMAKE_CUDA_HOST_COMPILER:\w+=(.+)$|"
                         r"^CMAKE_CXX_COMPILER:\w+=(.+)$",
                         cache.read_text(), re.M) if cache.exists() else None
        ccbin = ["-ccbin", host.group(1) or host.group(2)] \
            if host and (host.group(1) or host.group(2)) else []
        # -cudart shared: the one CUDA runtime PyTorch and libmemopt_runtime
        # use, not a second static copy in the stubs.
        cmd = [nvcc, *ccbin, "-cudart", "shared", "-x", "cu",
               "-Xcompiler", "-fPIC", f"-arch=sm_{arch}", *common,
               f"-Xlinker=-rpath,{runtime.parent}"]
    else:
        cxx = shutil.which("c++") or shutil.which("g++")
        if not cxx:
            raise RuntimeError("no C++ compiler (c++ or g++) on PATH")
        cmd = [cxx, "-fPIC", "-Wall", "-Werror", *common,
               f"-Wl,-rpath,{runtime.parent}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"building {source.name} failed: "
                           f"{(done.stderr or done.stdout).strip()[-2000:]}")
    return library


_RUNTIME_LOADED = False


def load_runtime(enable_stats: bool = True):
    """Loads libmemopt_runtime once, turns on its counting allocator and
    returns `torch.ops.memopt`."""
    global _RUNTIME_LOADED
    if not _RUNTIME_LOADED:
        path = runtime_library_path()
        if not path.exists():
            raise FileNotFoundError(f"memopt runtime library not built: {path}")
        torch.ops.load_library(str(path))
        _RUNTIME_LOADED = True
    if enable_stats:
        torch.ops.memopt.enable_memory_stats()
    return torch.ops.memopt


def format_bytes(n: Optional[float]) -> str:
    if n is None:
        return "-"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{int(n)} B"


# ---------------------------------------------------------------------------
# Peak training memory and step time
# ---------------------------------------------------------------------------

@dataclass
class StepMeasurement:
    """One model's steady-state training step.

    peak_bytes: max over the measured steps of (high-water mark - bytes live
      before the step); resident_bytes: parameters + buffers + .grad
      buffers (each storage once), live before every step; step_time_s:
      median wall time of forward + backward (step_time_min_s: the fastest
      step, the least disturbed by other processes); leaked_bytes: bytes still
      allocated after the last step beyond those live before it (0 in steady
      state).
    """
    peak_bytes: int
    resident_bytes: int
    step_time_s: float
    leaked_bytes: int
    live_before_bytes: int
    step_time_min_s: float = 0.0
    peaks: List[int] = field(default_factory=list)
    step_times_s: List[float] = field(default_factory=list)
    threads: int = 1

    def as_dict(self) -> dict:
        return asdict(self)


def _storage_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes of the tensors' storages, each storage once."""
    seen, total = set(), 0
    for t in tensors:
        storage = t.storage()
        key = storage.data_ptr()
        if key in seen or storage.size() == 0:
            continue
        seen.add(key)
        total += storage.size() * storage.element_size()
    return total


def resident_bytes(model: nn.Module) -> int:
    """Bytes of parameters, buffers and gradients (each storage once)."""
    tensors: List[torch.Tensor] = list(model.parameters()) + list(model.buffers())
    tensors += [p.grad for p in model.parameters() if p.grad is not None]
    return _storage_bytes(tensors)


def zero_grad_sets_none() -> bool:
    """What this PyTorch's `Optimizer.zero_grad()` does by default: set
    `.grad` to None (2.x) or zero it in place (1.x). memopt-compile's
    `--grad-buffers auto` follows the same default."""
    default = inspect.signature(torch.optim.Optimizer.zero_grad) \
        .parameters["set_to_none"].default
    return bool(default)


def _resolve_set_to_none(set_to_none: Optional[bool]) -> bool:
    return zero_grad_sets_none() if set_to_none is None else set_to_none


def differentiable_outputs(out) -> List[torch.Tensor]:
    """The tensors of a model's result that a loss would use: the result
    itself, or every tensor of a returned tuple or list (GoogLeNet's
    auxiliary logits, multi-head models) or every value of a returned dict
    in its order (segmentation models' "out" and "aux") that requires
    grad."""
    if isinstance(out, dict):
        out = list(out.values())
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [o for o in outs
            if isinstance(o, torch.Tensor) and o.requires_grad]


def _default_backward(out) -> None:
    outs = differentiable_outputs(out)
    torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])


class _StepRunner:
    """One model's training steps, measured one at a time (see
    measure_training_step)."""

    def __init__(self, model: nn.Module, inputs: Sequence[torch.Tensor],
                 stats, backward: Callable, set_to_none: bool):
        self.model, self.inputs, self.stats = model, inputs, stats
        self.backward, self.set_to_none = backward, set_to_none
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.peaks: List[int] = []
        self.times: List[float] = []
        self.live = self.leaked = 0

    def step(self, keep: bool) -> None:
        for p in self.params:
            if self.set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()
        stats = self.stats
        self.live = stats.memory_stats()[0]
        stats.reset_peak_memory_stats()
        t0 = time.perf_counter()
        out = self.model(*self.inputs)
        self.backward(out)
        elapsed = time.perf_counter() - t0
        del out
        current, high = stats.memory_stats()
        # The .grad buffers this step allocated stay with the model.
        grads = [p.grad for p in self.params if p.grad is not None]
        self.leaked = current - self.live - (
            _storage_bytes(grads) if self.set_to_none else 0)
        if keep:
            self.peaks.append(high - self.live)
            self.times.append(elapsed)

    def result(self) -> StepMeasurement:
        return StepMeasurement(
            peak_bytes=max(self.peaks),
            resident_bytes=resident_bytes(self.model),
            step_time_s=statistics.median(self.times),
            step_time_min_s=min(self.times), leaked_bytes=self.leaked,
            live_before_bytes=self.live, peaks=self.peaks,
            step_times_s=self.times, threads=torch.get_num_threads())


def measure_training_step(model: nn.Module, inputs: Sequence[torch.Tensor],
                          steps: int = 3, warmup: int = 1, stats=None,
                          backward: Callable = _default_backward,
                          set_to_none: Optional[bool] = None) -> StepMeasurement:
    """Measures `steps` training steps (forward, then `backward(out)`, by
    default backward from every differentiable output with ones as their
    gradients) after `warmup` steps.

    Before each step the existing `.grad` buffers are zeroed in place
    (`zero_grad(set_to_none=False)`), so in steady state they are live before
    the step and not part of its peak; with `set_to_none` they are dropped,
    so backward allocates them and they count in the peak (`--grad-buffers
    allocated`). `set_to_none=None` does what this PyTorch's
    `zero_grad()` does by default (zero_grad_sets_none()). No optimizer step
    runs: parameters do not change between the measured steps (what is
    measured is forward + backward, as ARCHITECTURE.md defines peak training
    memory).
    """
    return measure_interleaved({"model": model}, inputs, steps, warmup, stats,
                               backward, set_to_none)["model"]


def measure_interleaved(models: Dict[str, nn.Module],
                        inputs: Sequence[torch.Tensor], steps: int = 3,
                        warmup: int = 1, stats=None,
                        backward: Callable = _default_backward,
                        set_to_none: Optional[bool] = None
                        ) -> Dict[str, StepMeasurement]:
    """measure_training_step for several models, their steps taken in turn
    (one step of each, then the next round), so that a slow spell of the
    machine (another process, the page cache) falls on every model alike:
    step-time ratios between them, taken round by round
    (`step_time_ratios`), vary far less than ratios of models measured one
    after another."""
    if stats is None:
        stats = load_runtime()
    if not stats.memory_stats_enabled():
        stats.enable_memory_stats()
    set_to_none = _resolve_set_to_none(set_to_none)
    runners = {label: _StepRunner(model, inputs, stats, backward, set_to_none)
               for label, model in models.items()}
    for i in range(warmup + steps):
        for runner in runners.values():
            runner.step(keep=i >= warmup)
    return {label: runner.result() for label, runner in runners.items()}


def step_time_ratios(measured: Dict[str, StepMeasurement],
                     reference: str) -> Dict[str, float]:
    """Per model, the median over rounds of its step time over
    `reference`'s in the same round (measure_interleaved)."""
    base = measured[reference].step_times_s
    return {label: statistics.median(t / b for t, b in
                                      zip(m.step_times_s, base))
            for label, m in measured.items()}


# ---------------------------------------------------------------------------
# Comparing training against eager
# ---------------------------------------------------------------------------

def train_steps(model: nn.Module, inputs: Sequence[torch.Tensor],
                steps: int = 2, seed: int = 1234, lr: float = 0.01,
                momentum: float = 0.9, stats=None,
                set_to_none: Optional[bool] = None) -> List[dict]:
    """Runs `steps` SGD steps from `torch.manual_seed(seed)` (dropout draws
    the same masks in eager and in a correct compiled module); returns per
    step the differentiable outputs, the named parameter gradients and the
    named buffers.

    The loss is the sum of `(out * w).sum()` over the differentiable
    outputs, with fixed random weights `w`, so every output element gets a
    different gradient. With `stats`
    (torch.ops.memopt), each record also has "peak_bytes" (forward +
    backward, above the bytes live after zero_grad: from the second step on
    this is the steady-state training peak, the momentum buffers and, unless
    `set_to_none` (`zero_grad`'s own argument), the .grad buffers being
    live) and "step_time_s".
    """
    torch.manual_seed(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=lr, momentum=momentum)
    records = []
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=_resolve_set_to_none(set_to_none))
        if stats is not None:
            live = stats.memory_stats()[0]
            stats.reset_peak_memory_stats()
        t0 = time.perf_counter()
        outs = differentiable_outputs(model(*inputs))
        generator = torch.Generator().manual_seed(7)
        # Drawn on the CPU and moved: the same weights on every device.
        loss = sum((o * torch.randn(o.shape, generator=generator)
                    .to(o.device)).sum() for o in outs)
        loss.backward()
        elapsed = time.perf_counter() - t0
        record = {}
        if stats is not None:
            record["peak_bytes"] = stats.memory_stats()[1] - live
            record["step_time_s"] = elapsed
        record.update({
            "outs": [o.detach().clone() for o in outs],
            "grads": {n: p.grad.clone() for n, p in model.named_parameters()
                      if p.grad is not None},
            "buffers": {n: b.clone() for n, b in model.named_buffers()},
        })
        records.append(record)
        optimizer.step()
    return records


_SAME_WIDTH_INTEGER = {8: torch.int64, 4: torch.int32, 2: torch.int16,
                       1: torch.int8}


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when `a` and `b` hold the same bits: same shape, dtype and
    values, NaNs included (torch.equal counts NaN != NaN; a training that
    diverges to NaN in eager must give the same NaNs compiled)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not a.is_floating_point() or a.numel() == 0:
        return bool(torch.equal(a, b))
    as_int = _SAME_WIDTH_INTEGER[a.element_size()]
    return bool(torch.equal(a.contiguous().view(as_int),
                            b.contiguous().view(as_int)))


def _diff(a: torch.Tensor, b: torch.Tensor) -> Tuple[float, float]:
    """(max |a-b|, max |a|); inf when shapes or dtypes differ. Equal
    infinities and NaNs at the same places count as equal. Where every
    bit is the same, (0, 0): the scale only matters for a difference, and
    one comparison of the bits costs a tenth of the elementwise passes
    (most of a training comparison's time, most pairs being bitwise)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return float("inf"), 0.0
    if a.numel() == 0 or same_bits(a, b):
        return 0.0, 0.0
    if not a.is_floating_point():
        return (0.0 if torch.equal(a, b) else float("inf")), 1.0
    same = (a == b) | (a.isnan() & b.isnan())
    finite = a[a.isfinite()]
    scale = float(finite.abs().max()) if finite.numel() else 0.0
    if bool(same.all()):
        return 0.0, scale
    return float((a - b)[~same].abs().max().nan_to_num(float("inf"))), scale


def _state(module: nn.Module) -> Dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def initial_state_problems(state: Dict[str, torch.Tensor],
                           reference: Dict[str, torch.Tensor],
                           limit: int = 3) -> List[str]:
    """Why a candidate's initial state_dict (`_state`) is not the
    reference's: its keys differ, or up to `limit` entries differ."""
    if set(state) != set(reference):
        return ["state_dict keys differ: " + str(
            sorted(set(state) ^ set(reference))[:5])]
    return [f"initial state differs: {k}" for k in state
            if _diff(state[k], reference[k])[0] != 0.0][:limit]


def compare_records(ref: List[dict], cand: List[dict]) -> dict:
    """Compares two `train_steps` results. See compare_with_eager."""
    problems, worst, worst_what, bitwise = [], 0.0, "", True
    mismatched: List[str] = []
    for step, (r, c) in enumerate(zip(ref, cand)):
        for kind in ("grads", "buffers"):
            if set(r[kind]) != set(c[kind]):
                problems.append(f"step {step}: {kind} keys differ: "
                                f"{sorted(set(r[kind]) ^ set(c[kind]))[:5]}")
        if len(r["outs"]) != len(c["outs"]):
            problems.append(f"step {step}: {len(r['outs'])} outputs vs "
                            f"{len(c['outs'])}")
        pairs = [(f"out[{i}]", a, b)
                 for i, (a, b) in enumerate(zip(r["outs"], c["outs"]))]
        for kind in ("grads", "buffers"):
            pairs += [(f"{kind}[{k}]", r[kind][k], c[kind][k])
                      for k in r[kind] if k in c[kind]]
        for what, a, b in pairs:
            delta, scale = _diff(a, b)
            if delta != 0.0:
                bitwise = False
                if len(mismatched) < 8:
                    mismatched.append(f"step {step} {what}")
            rel = delta / scale if scale else (0.0 if delta == 0 else float("inf"))
            if rel > worst:
                worst, worst_what = rel, f"step {step} {what}"
            if rel == float("inf"):
                problems.append(f"step {step}: {what} mismatch")
    if len(ref) != len(cand):
        problems.append(f"{len(ref)} reference steps vs {len(cand)}")
    return {"bitwise": bitwise and not problems, "worst_relative": worst,
            "worst_what": worst_what, "first_mismatches": mismatched,
            "problems": problems}


def compare_with_eager(reference: Optional[nn.Module], candidate: nn.Module,
                       inputs: Sequence[torch.Tensor], steps: int = 2,
                       seed: int = 1234,
                       reference_records: Optional[List[dict]] = None,
                       stats=None, set_to_none: Optional[bool] = None) -> dict:
    """Trains `reference` (eager) and `candidate` (e.g. a compiled module)
    for `steps` SGD steps from the same seed and compares outputs, parameter
    gradients and buffers (batch-norm statistics) of every step.

    Both must start from the same state: differing initial state_dicts are
    reported as a problem. `reference_records` (a `train_steps` result)
    skips training the reference again. Returns {"bitwise": bool,
    "worst_relative": max |Δ| / max |reference| over everything,
    "worst_what", "first_mismatches", "problems": [...]}, and with
    `stats` "candidate_peak_bytes": the candidate's steady-state peak
    measured during its last compared step (see train_steps).
    """
    problems = []
    if reference_records is None:
        problems = initial_state_problems(_state(candidate),
                                          _state(reference), limit=1)
        reference_records = train_steps(reference, inputs, steps, seed,
                                        set_to_none=set_to_none)
    cand = train_steps(candidate, inputs, steps, seed, stats=stats,
                       set_to_none=set_to_none)
    result = compare_records(reference_records, cand)
    if stats is not None and steps >= 2:
        result["candidate_peak_bytes"] = cand[-1]["peak_bytes"]
        result["candidate_step_time_s"] = cand[-1]["step_time_s"]
    result["problems"] = problems + result["problems"]
    result["bitwise"] = result["bitwise"] and not problems
    return result


# ---------------------------------------------------------------------------
# memopt-compile
# ---------------------------------------------------------------------------

class CompileError(RuntimeError):
    """memopt-compile exited non-zero; `.stderr` holds its diagnostics."""

    def __init__(self, cmd: List[str], returncode: int, stderr: str,
                 wall_s: float):
        self.cmd, self.returncode, self.stderr = cmd, returncode, stderr
        self.wall_s = wall_s
        super().__init__(f"memopt-compile failed ({returncode}): "
                         f"{' '.join(cmd)}\n{stderr.strip()}")

    @property
    def infeasible(self) -> bool:
        """Whether the compiler said the budget cannot be met."""
        text = self.stderr.lower()
        return "infeasible" in text or "cannot meet" in text or \
            "cannot be met" in text


def _shape_specs(input_shapes: InputShapes) -> List[str]:
    from memopt import zoo
    return [s if isinstance(s, str) else zoo.input_specs([s])[0]
            for s in input_shapes]


def compile_model(pt_path, out_path, input_shapes: InputShapes,
                  extra_args: Iterable[str] = (), report_path=None,
                  timeout: float = 600, threads: Optional[int] = 1) -> dict:
    """Runs `memopt-compile pt_path -o out_path --input-shape ... --report R
    --intra-op-threads T extra_args...` (the binary from
    MEMOPT_BUILD_DIR/bin or build/bin) and returns the parsed JSON report,
    plus the key "_compile" =
    {"wall_s": seconds measured from outside, "cmd": [...], "stderr": ...}.

    `threads` is the intra-op thread count the compiled module will be
    measured with: run_worker's default of one; None leaves memopt-compile's
    own default (this environment's).

    Raises CompileError (with `.infeasible`) when it exits non-zero.
    """
    tool = tool_path("memopt-compile")
    if not tool.exists():
        raise FileNotFoundError(f"memopt-compile not built: {tool}")
    out_path = pathlib.Path(out_path)
    if report_path is None:
        report_path = out_path.with_suffix(".report.json")
    cmd = [str(tool), str(pt_path), "-o", str(out_path)]
    for spec in _shape_specs(input_shapes):
        cmd += ["--input-shape", spec]
    cmd += ["--report", str(report_path)]
    if threads is not None:
        cmd += ["--intra-op-threads", str(threads)]
    cmd += [str(a) for a in extra_args]
    t0 = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True,
                            timeout=timeout)
    wall = time.perf_counter() - t0
    if result.returncode != 0:
        raise CompileError(cmd, result.returncode, result.stderr, wall)
    report = json.loads(pathlib.Path(report_path).read_text())
    report["_compile"] = {"wall_s": wall, "cmd": cmd,
                          "stdout": result.stdout, "stderr": result.stderr}
    return report


# ---------------------------------------------------------------------------
# Models: zoo entries, inputs, the torch.utils.checkpoint baseline
# ---------------------------------------------------------------------------

def build_zoo_model(name: str, kwargs: Optional[dict] = None,
                    seed: int = 0) -> Tuple[nn.Module, list]:
    """`memopt.zoo.entry(name)(**kwargs)` after `torch.manual_seed(seed)`
    (`torchvision.<model>` names any torchvision classifier)."""
    from memopt import zoo
    torch.manual_seed(seed)
    model, inputs = zoo.entry(name)(**(kwargs or {}))
    return model.train(), inputs


def make_inputs(inputs, seed: int = 1) -> List[torch.Tensor]:
    """Deterministic inputs for a zoo entry: token ids below the vocabulary
    ("tokens:<vocab>"), event frames (0/1, 20 % ones; "events"), standard
    normal otherwise."""
    from memopt import zoo
    gen = torch.Generator().manual_seed(seed)
    tensors = []
    for spec in inputs:
        shape, kind = spec[1], zoo.input_kind(spec)
        if kind.startswith("tokens:"):
            tensors.append(torch.randint(int(kind.split(":")[1]), shape,
                                         generator=gen))
        elif kind == "events":
            tensors.append((torch.rand(*shape, generator=gen) < 0.2).float())
        else:
            tensors.append(torch.randn(*shape, generator=gen))
    return tensors


def save_zoo_model(name: str, kwargs: Optional[dict], path,
                   seed: int = 0) -> List[str]:
    """Scripts the seeded zoo model and saves it; returns its input specs."""
    model, inputs = build_zoo_model(name, kwargs, seed)
    torch.jit.script(model).save(str(path))
    return _shape_specs(inputs)


class _Checkpointed(nn.Module):
    """Runs `inner` under torch.utils.checkpoint (non-reentrant, so that
    parameters get gradients even when the input does not require grad)."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, *args, **kwargs):
        from torch.utils.checkpoint import checkpoint
        return checkpoint(self.inner, *args, use_reentrant=False, **kwargs)

    def __getattr__(self, name):
        # The container may read the wrapped layer's attributes
        # (nn.TransformerEncoder on 2.x checks `layers[0].self_attn`).
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(super().__getattr__("inner"), name)


class _CheckpointedSpikingVGG(nn.Module):
    """zoo.SpikingVGG with each conv-BN-(pool)-LIF block checkpointed."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        from torch.utils.checkpoint import checkpoint
        m = self.model
        steps, batch = x.shape[0], x.shape[1]
        for i, (conv, bn, lif) in enumerate(zip(m.convs, m.bns, m.lifs)):
            def block(x, conv=conv, bn=bn, lif=lif, pool=m.pool[i]):
                y = bn(conv(x.flatten(0, 1)))
                if pool:
                    y = torch.max_pool2d(y, 2)
                return lif(y.reshape([steps, batch] + list(y.shape[1:])))
            x = checkpoint(block, x, use_reentrant=False)
        return m.fc(x.mean(dim=[0, 3, 4]))


def checkpoint_blocks(model: nn.Module, name: str) -> Tuple[nn.Module, str]:
    """Wraps each sequential block of a zoo model in torch.utils.checkpoint;
    returns (model, description of what was wrapped).

    resnet*: every block of layer1..layer4; mobilenet_v2, densenet121,
    efficientnet: every child of `features`; vit: every encoder layer;
    transformer_encoder: every layer of `encoder.layers`; spiking_vgg: every
    conv-BN-(pool)-LIF block. (torch.utils.checkpoint reruns batch norm in
    the recompute, so running statistics are updated twice: a baseline for
    memory and time, not for gradients.)
    """
    def wrap_children(seq: nn.Module) -> int:
        names = [n for n, _ in seq.named_children()]
        for n in names:
            setattr(seq, n, _Checkpointed(getattr(seq, n)))
        return len(names)

    if name.startswith("resnet"):
        count = sum(wrap_children(getattr(model, f"layer{i}"))
                    for i in range(1, 5))
        return model, f"{count} blocks of layer1..layer4"
    if name in ("mobilenet_v2", "densenet121") or name.startswith("efficientnet"):
        return model, f"{wrap_children(model.features)} children of features"
    if name == "vit":
        return model, f"{wrap_children(model.encoder.layers)} encoder layers"
    if name == "transformer_encoder":
        return model, f"{wrap_children(model.encoder.layers)} encoder layers"
    if name.startswith("spiking"):
        return _CheckpointedSpikingVGG(model), \
            f"{len(model.convs)} conv-BN-LIF blocks"
    raise ValueError(f"no block structure known for {name!r}")


# ---------------------------------------------------------------------------
# One measurement in a fresh process
# ---------------------------------------------------------------------------

def _error_text(error: Exception) -> str:
    """A compiled module's failure as the worker reports it."""
    return f"{type(error).__name__}: {error}"[:4000]


def worker(spec: dict) -> dict:
    """Runs in a fresh process (graph-executor optimization off first).

    spec: {"zoo": name, "kwargs": {...}, "seed": 0, "threads": 1,
           "steps": 3, "warmup": 1,
           "eager": bool (measure eager), "checkpoint": bool (measure the
           torch.utils.checkpoint baseline),
           "compiled": {label: path to a compiled .pt},
           "compare": bool (compare each compiled module against eager),
           "compare_steps": 2, "measure": bool (measure compiled modules
           with measure_training_step; default true),
           "grad_buffers": "resident" (.grad zeroed in place between
           steps), "allocated" (set to None, as compiled with
           --grad-buffers allocated) or "auto" (the default: this
           PyTorch's zero_grad default, as --grad-buffers auto),
           "offload_simulation": bool (run offload:host on CPU tensors
           through the runtime's pool, as on a GPU; the result then has
           "offload_stats": the runtime's counters over all runs),
           "interleave": bool (measure eager and every compiled module
           together, their steps in turn: measure_interleaved; the result
           then has "step_ratios": {label: median over rounds of the
           module's step time over eager's})}
    Returns {"eager": StepMeasurement dict, "checkpoint": ...,
             "eager_compare": {"peak_bytes", "step_time_s"} of the eager
             reference's last compared step,
             "compiled": {label: {"measure": ..., "compare": ...} or
                          {"error": "..."}}}; each "compare" has the
    compiled module's "candidate_peak_bytes" of its last compared step
    (steady state when compare_steps >= 2).
    """
    torch._C._set_graph_executor_optimize(False)
    torch.set_num_threads(int(spec.get("threads", 1)))
    stats = load_runtime()
    if spec.get("offload_simulation"):
        torch.ops.memopt._set_offload_simulation(True)
        torch.ops.memopt.reset_offload_stats()
    name, kwargs = spec["zoo"], spec.get("kwargs", {})
    seed = int(spec.get("seed", 0))
    steps, warmup = int(spec.get("steps", 3)), int(spec.get("warmup", 1))
    _, shapes = build_zoo_model(name, kwargs, seed)
    inputs = make_inputs(shapes)
    result: dict = {"inputs": _shape_specs(shapes),
                    "threads": torch.get_num_threads(), "compiled": {}}

    set_to_none = {"resident": False, "allocated": True, "auto": None}[
        spec.get("grad_buffers", "auto")]

    def measure(model):
        return measure_training_step(model, inputs, steps, warmup, stats,
                                     set_to_none=set_to_none).as_dict()

    interleave = bool(spec.get("interleave")) and bool(spec.get("eager"))
    if spec.get("eager") and not interleave:
        model, _ = build_zoo_model(name, kwargs, seed)
        result["eager"] = measure(model)
        del model
    if spec.get("checkpoint"):
        model, _ = build_zoo_model(name, kwargs, seed)
        model, what = checkpoint_blocks(model, name)
        try:
            result["checkpoint"] = measure(model)
            result["checkpoint"]["wrapped"] = what
        except Exception as e:  # the baseline's own failure, reported
            result["checkpoint"] = {"wrapped": what,
                                    "error": str(e).splitlines()[0][:300]}
        del model
    reference_records = None
    for label, path in spec.get("compiled", {}).items():
        entry: dict = {}
        try:
            if spec.get("compare"):
                if reference_records is None:
                    eager, _ = build_zoo_model(name, kwargs, seed)
                    reference_state = _state(eager)
                    reference_records = train_steps(
                        eager, inputs, int(spec.get("compare_steps", 2)),
                        stats=stats, set_to_none=set_to_none)
                    result["eager_compare"] = {
                        "peak_bytes": reference_records[-1]["peak_bytes"],
                        "step_time_s": reference_records[-1]["step_time_s"]}
                    del eager
                module = torch.jit.load(str(path))
                module.train()
                init_problems = initial_state_problems(_state(module),
                                                       reference_state)
                cmp = compare_with_eager(None, module, inputs,
                                         int(spec.get("compare_steps", 2)),
                                         reference_records=reference_records,
                                         stats=stats, set_to_none=set_to_none)
                cmp["problems"] = init_problems + cmp["problems"]
                cmp["bitwise"] = cmp["bitwise"] and not init_problems
                entry["compare"] = cmp
                del module
            if spec.get("measure", True) and not interleave:
                module = torch.jit.load(str(path))
                module.train()
                entry["measure"] = measure(module)
                del module
        except Exception as e:  # report, go on with the other modules
            entry["error"] = _error_text(e)
        result["compiled"][label] = entry
    if interleave:
        models = {"eager": build_zoo_model(name, kwargs, seed)[0]}
        for label, path in spec.get("compiled", {}).items():
            if "error" in result["compiled"][label] or \
                    not spec.get("measure", True):
                continue
            try:
                module = torch.jit.load(str(path))
            except Exception as e:
                result["compiled"][label]["error"] = _error_text(e)
                continue
            module.train()
            models[label] = module
        try:
            measured = measure_interleaved(models, inputs, steps, warmup,
                                           stats, set_to_none=set_to_none)
        except Exception:
            # A module that fails stops the rounds: measure each alone, so
            # that the failure is that module's and the others still count.
            measured = {}
            for label, model in models.items():
                try:
                    measured[label] = measure_training_step(
                        model, inputs, steps, warmup, stats,
                        set_to_none=set_to_none)
                except Exception as e:
                    if label == "eager":
                        raise
                    result["compiled"][label]["error"] = _error_text(e)
        result["eager"] = measured["eager"].as_dict()
        ratios = step_time_ratios(measured, "eager")
        result["step_ratios"] = {label: ratios[label] for label in measured
                                 if label != "eager"}
        for label, m in measured.items():
            if label != "eager":
                result["compiled"][label]["measure"] = m.as_dict()
        del models
    if spec.get("offload_simulation"):
        result["offload_stats"] = dict(zip(
            ["tensors", "bytes", "fallbacks", "ahead", "reserved", "in_use"],
            torch.ops.memopt.offload_stats()))
    return result


def run_worker(spec: dict, timeout: float = 600) -> dict:
    """Runs `worker(spec)` in a fresh /usr/bin/python3 process (OMP threads
    = spec["threads"]) and returns its result."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [str(REPO / "python"), env.get("PYTHONPATH", "")] if p)
    threads = str(spec.get("threads", 1))
    env["OMP_NUM_THREADS"] = threads
    env["MKL_NUM_THREADS"] = threads
    env.setdefault("MEMOPT_BUILD_DIR", str(build_dir()))
    out = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "memopt.measure", "worker",
         json.dumps(spec)], capture_output=True, text=True, env=env,
        timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"measurement worker failed ({out.returncode}) "
                           f"for {spec}:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: List[str]) -> int:
    if len(argv) == 2 and argv[0] == "worker":
        print(json.dumps(worker(json.loads(argv[1]))))
        return 0
    print("usage: python3 -m memopt.measure worker '<json spec>'",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
