"""One rank of a DistributedDataParallel run over memopt-compiled modules
(test_distributed.py, bench/distributed.py, docs/distributed.md).

Started the way torchrun starts a script: RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT in the environment, gloo on CPU:

    torchrun --nproc-per-node 2 test/python/ddp_worker.py cases.json out.json
    RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 \
        python3 test/python/ddp_worker.py cases.json out.json   # and RANK=1

cases.json is a list of cases; each trains the same seeded model twice under
DDP, eager and compiled, from the same state, the same per-rank batches and
the same dropout seed, and compares every parameter bit for bit after the
last step:

    {"model": "resnet18",            memopt.zoo entry ("ddp_unused": below)
     "kwargs": {"batch": 2},         its arguments
     "rank_kwargs": [{...}, {...}],  per-rank overrides (dispatch: a batch
                                     size per rank)
     "compiled": "wrap" | "<path>",  memopt.wrap in this process, or a module
                                     memopt-compile wrote (loaded, then the
                                     eager state loaded into it)
     "wrap": {"prefer": "memory", "specs": [...]},   memopt.wrap options
     "static_graph": false, "find_unused_parameters": false,
     "micro_batches": 1,             >1: all but the last under no_sync()
     "steps": 3, "measure": true}    per-rank peak, DDP and single-process

{"fsdp": true, "model": ..., "compiled": "wrap"} instead runs the model
under FullyShardedDataParallel, eager and wrapped (run_fsdp_case).

out.json (rank 0 writes it, with every rank's results gathered) is a list
with one entry per case: {"ranks": [{"bitwise": bool, "mismatches": [...],
"grads_bitwise": ..., "peak": {...}, "ddp_bucket_bytes": ...}, ...]}.
"""
import copy
import gc
import json
import os
import pathlib
import socket
import subprocess
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))
os.environ.setdefault("MEMOPT_BUILD_DIR", str(REPO / "build"))

import memopt  # noqa: E402
from memopt import measure, zoo  # noqa: E402


class UnusedBranch(nn.Module):
    """A classifier with an auxiliary head that forward never uses: DDP
    needs find_unused_parameters=True for it (or static_graph)."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU())
        self.head = nn.Linear(32, 10)
        self.aux_head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.features(x).mean(dim=[2, 3]))


def ddp_unused(batch: int = 2, image: int = 16):
    return UnusedBranch().train(), [("x", (batch, 3, image, image))]


def build(case: dict, rank: int):
    kwargs = dict(case.get("kwargs", {}))
    kwargs.update((case.get("rank_kwargs") or [{}] * (rank + 1))[rank])
    torch.manual_seed(0)
    if case["model"] == "ddp_unused":
        return ddp_unused(**kwargs)
    return zoo.entry(case["model"])(**kwargs)


def compiled_copy(case: dict, model: nn.Module, inputs) -> nn.Module:
    twin = copy.deepcopy(model)
    if case["compiled"] == "wrap":
        options = dict(case.get("wrap", {}))
        options.setdefault("prefer", "memory")
        return memopt.wrap(twin, tuple(inputs), cache_dir=False,
                           verbose=False, **options)
    module = torch.jit.load(case["compiled"])
    module.load_state_dict(model.state_dict())
    return module


def loss_of(out) -> torch.Tensor:
    outs = measure.differentiable_outputs(out)
    generator = torch.Generator().manual_seed(7)
    return sum((o * torch.randn(o.shape, generator=generator)).sum()
               for o in outs)


def train(ddp: DDP, micro_batches, case: dict, rank: int, stats):
    """`steps` SGD steps; each step's micro-batches all but the last under
    no_sync(). Returns the per-step peaks above the bytes live before."""
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    peaks = []
    torch.manual_seed(1000 + rank)  # dropout: the same draws in both runs
    for _ in range(case.get("steps", 3)):
        optimizer.zero_grad(set_to_none=False)
        live = stats.memory_stats()[0]
        stats.reset_peak_memory_stats()
        for i, inputs in enumerate(micro_batches):
            last = i == len(micro_batches) - 1
            if last:
                loss_of(ddp(*inputs)).backward()
            else:
                with ddp.no_sync():
                    loss_of(ddp(*inputs)).backward()
        peaks.append(stats.memory_stats()[1] - live)
        optimizer.step()
    return peaks


def wrap_ddp(module: nn.Module, case: dict, stats):
    """DDP over `module`; also what constructing it left allocated (the
    reducer's gradient buckets)."""
    # What earlier cases left for the collector would be freed in between.
    gc.collect()
    dist.barrier()
    before = stats.memory_stats()[0]
    ddp = DDP(module, static_graph=case.get("static_graph", False),
              find_unused_parameters=case.get("find_unused_parameters",
                                              False))
    # DDP's constructor broadcasts rank 0's state through a flat copy that
    # gloo's work object may still hold for a moment.
    dist.barrier()
    gc.collect()
    return ddp, stats.memory_stats()[0] - before


def run_case(case: dict, rank: int, stats) -> dict:
    model, specs = build(case, rank)
    n = case.get("micro_batches", 1)
    micro_batches = [measure.make_inputs(specs, seed=100 + 10 * rank + i)
                     for i in range(n)]
    compiled = compiled_copy(case, model, micro_batches[0])
    result = {"rank": rank, "signature": zoo.input_specs(specs)}

    eager_ddp, eager_buckets = wrap_ddp(model, case, stats)
    eager_peaks = train(eager_ddp, micro_batches, case, rank, stats)
    compiled_ddp, compiled_buckets = wrap_ddp(compiled, case, stats)
    compiled_peaks = train(compiled_ddp, micro_batches, case, rank, stats)

    eager_params = dict(model.named_parameters())
    mismatches = [name for name, p in compiled.named_parameters()
                  if not measure.same_bits(p.detach(),
                                           eager_params[name].detach())]
    missing = sorted(set(eager_params) -
                     {n for n, _ in compiled.named_parameters()})
    eager_buffers = dict(model.named_buffers())
    buffer_mismatches = [
        name for name, b in compiled.named_buffers()
        if name in eager_buffers and not measure.same_bits(b,
                                                           eager_buffers[name])]
    result.update(
        bitwise=not mismatches and not missing and not buffer_mismatches,
        mismatches=mismatches + buffer_mismatches, missing=missing,
        parameters=len(eager_params),
        ddp_bucket_bytes={"eager": eager_buckets,
                          "compiled": compiled_buckets},
        trainable_bytes=sum(p.numel() * p.element_size()
                            for p in model.parameters() if p.requires_grad),
        peak={"ddp_eager": max(eager_peaks[1:] or eager_peaks),
              "ddp_compiled": max(compiled_peaks[1:] or compiled_peaks)})
    del eager_ddp, compiled_ddp
    if case["compiled"] == "wrap":
        # What wrap planned for (its default world size is the process
        # group's) and predicted for DDP's buckets.
        from memopt.binding import Plan
        reports = [p.report for p in compiled._memopt_plans.values()
                   if isinstance(p, Plan)]
        result["wrap_reports"] = [{
            "world_size": r["options"].get("world_size"),
            "gradient_bucket_bytes":
                r["baseline"].get("gradient_bucket_bytes")} for r in reports]
    if case.get("measure", False):
        # The same model and batch in this process without DDP.
        single = {}
        for name, module in (("eager", model), ("compiled", compiled)):
            m = measure.measure_training_step(module, micro_batches[0],
                                              steps=2, stats=stats,
                                              set_to_none=False)
            single[name] = m.peak_bytes
        result["peak"]["single_eager"] = single["eager"]
        result["peak"]["single_compiled"] = single["compiled"]
    return result


def run_fsdp_case(case: dict, rank: int) -> dict:
    """FullyShardedDataParallel (FSDP1, CPU): over the eager model it
    trains; over memopt.wrap's module the first forward must fail with
    memopt's one-line error (docs/distributed.md)."""
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    model, specs = build(case, rank)
    inputs = measure.make_inputs(specs, seed=100 + rank)
    result = {"rank": rank}
    for label, module in (("eager", copy.deepcopy(model)),
                          ("compiled", compiled_copy(case, model, inputs))):
        try:
            sharded = FSDP(module, device_id=torch.device("cpu"),
                           use_orig_params=case.get("use_orig_params",
                                                    False))
            loss_of(sharded(*inputs)).backward()
            result[label] = "ok"
        except Exception as error:
            result[label] = f"{type(error).__name__}: {error}"
        dist.barrier()
    return result


class LaunchError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(cases, workdir, world: int = 2, torchrun: bool = False,
           timeout: float = 900) -> list:
    """Runs `cases` on `world` ranks of this machine, started as torchrun
    starts them (or by torchrun); returns the gathered results. Raises
    LaunchError with the ranks' stderr when one fails or hangs."""
    workdir = pathlib.Path(workdir)
    spec, out = workdir / "cases.json", workdir / "out.json"
    spec.write_text(json.dumps(cases))
    port = free_port()
    # USE_LIBUV=0: Debian's PyTorch 2.x is built without libuv, which
    # TCPStore (the env:// rendezvous) asks for by default from 2.4 on.
    env = dict(os.environ, MEMOPT_BUILD_DIR=str(measure.build_dir()),
               OMP_NUM_THREADS="1", USE_LIBUV="0")
    script = str(pathlib.Path(__file__).resolve())
    if torchrun:
        run = subprocess.run(
            [sys.executable, "-m", "torch.distributed.run",
             f"--nproc_per_node={world}", f"--master_port={port}", script,
             str(spec), str(out)],
            env=env, capture_output=True, text=True, timeout=timeout)
        if run.returncode != 0:
            raise LaunchError(f"torchrun exit {run.returncode}: "
                              f"{run.stderr[-3000:]}")
        return json.loads(out.read_text())
    procs = []
    for rank in range(world):
        rank_env = dict(env, RANK=str(rank), LOCAL_RANK=str(rank),
                        WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                        MASTER_PORT=str(port))
        procs.append(subprocess.Popen(
            [sys.executable, script, str(spec), str(out)], env=rank_env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    errors = []
    for rank, proc in enumerate(procs):
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            raise LaunchError(f"rank {rank} did not finish in {timeout} s")
        if proc.returncode != 0:
            errors.append(f"rank {rank} exit {proc.returncode}: {err[-3000:]}")
    if errors:
        raise LaunchError("\n".join(errors))
    return json.loads(out.read_text())


def main() -> int:
    cases = json.loads(pathlib.Path(sys.argv[1]).read_text())
    out_path = pathlib.Path(sys.argv[2])
    # Compiled modules against eager: no profiling executor, whose second
    # call redraws dropout masks (memopt.measure's docstring).
    torch._C._set_graph_executor_optimize(False)
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    stats = measure.load_runtime()
    results = []
    for case in cases:
        try:
            local = (run_fsdp_case(case, rank) if case.get("fsdp")
                     else run_case(case, rank, stats))
        except Exception as error:  # reported by rank 0 for every rank
            local = {"rank": rank, "error": f"{type(error).__name__}: "
                                            f"{str(error).splitlines()[0]}"}
        gathered = [None] * world
        dist.all_gather_object(gathered, local)
        results.append({"case": case, "ranks": gathered})
    if rank == 0:
        out_path.write_text(json.dumps(results, indent=1))
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
