"""A CUDA plan (`memopt-compile --device cuda`) end to end, without a GPU:
the planner offloads region inputs, memopt-schedule-prefetch picks the
region whose backward brings each back, the exporter hands that trigger to
the runtime, and the runtime (offload simulated on CPU tensors: copied into
its pool and back, as on a GPU) prefetches exactly there.

The compiled module trains two SGD steps in a fresh process and must match
eager bit for bit; the runtime's counters must show every offloaded tensor
moved once per step and every early prefetch of the schedule issued once per
step, none falling back to keeping the tensor.

The same plan's launch stubs (`--emit-stubs`, host launchers built with the
system compiler) hold its copy schedule: one offload site per region,
every tensor at a static offset of one host block, the trigger as planned.
Trained with them, every region's inputs go out in one launcher call and
come back in one, with the same gradients as the generic copies.

The plan is made and trained with `.grad` zeroed in place (`--grad-buffers
resident`) on every PyTorch: at this size, with gradients allocated in the
step, ResNet-18's peak is its parameter gradients, which no offload lowers.
"""
import json
import os
import re
import subprocess
import sys

import pathlib

import pytest
import torch

from conftest import BUILD, REPO

sys.path.insert(0, str(REPO / "python"))
os.environ.setdefault("MEMOPT_BUILD_DIR", str(BUILD))
from memopt import measure  # noqa: E402

MODEL, KWARGS, STEPS = "resnet18", dict(batch=4, image=64), 2
NVCC = pathlib.Path("/usr/local/cuda/bin/nvcc")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    if not measure.tool_path("memopt-compile").exists():
        pytest.fail("memopt-compile not built")
    directory = tmp_path_factory.mktemp("offload")
    source = directory / "model.pt"
    specs = measure.save_zoo_model(MODEL, KWARGS, source)
    out = directory / "model.cuda.pt"
    report = measure.compile_model(
        source, out, specs, ["--prefer", "memory", "--device", "cuda",
                             "--grad-buffers", "resident",
                             "--emit-stubs", directory / "stubs"])
    return out, report["signatures"][0]


def test_plan_offloads_with_a_schedule(compiled):
    _, signature = compiled
    offloaded = signature["offloaded"]
    assert offloaded, "the CUDA plan offloads no region input"
    schedule = signature["prefetch_schedule"]
    regions = {o["used_by"] for o in offloaded}
    assert schedule["offloaded_regions"] == len(regions)
    early = {o["used_by"] for o in offloaded
             if "region " + o["prefetch_at"] != o["used_by"]}
    assert schedule["prefetched_early"] == len(early) >= 1
    # Backward waits at most for every copy on the one side stream: those
    # back, and those to the host still queued when backward starts.
    assert schedule["offload_seconds"] > 0 and schedule["transfer_seconds"] > 0
    assert 0 <= schedule["stall_seconds"] <= (schedule["transfer_seconds"] +
                                              schedule["offload_seconds"])
    assert 0 <= schedule["held_regions"] <= schedule["offloaded_regions"]


def test_exported_policies_name_their_trigger(compiled, runtime):
    path, signature = compiled
    code = torch.jit.load(str(path)).code
    for o in signature["offloaded"]:
        assert f'"offload:host@{o["prefetch_at"]}"' in code


def test_trains_like_eager_and_prefetches_on_schedule(compiled):
    path, signature = compiled
    run = measure.run_worker(
        {"zoo": MODEL, "kwargs": KWARGS, "seed": 0, "threads": 1,
         "compiled": {"cuda": str(path)}, "compare": True,
         "compare_steps": STEPS, "measure": False,
         "grad_buffers": "resident", "offload_simulation": True},
        timeout=600)
    entry = run["compiled"]["cuda"]
    assert "error" not in entry, entry.get("error")
    assert entry["compare"]["bitwise"], entry["compare"]["problems"][:5]
    stats = run["offload_stats"]
    offloaded = signature["offloaded"]
    assert stats["tensors"] == STEPS * len(offloaded)
    assert stats["bytes"] == STEPS * sum(o["bytes"] for o in offloaded)
    assert stats["fallbacks"] == 0
    assert stats["ahead"] == \
        STEPS * signature["prefetch_schedule"]["prefetched_early"]
    assert stats["in_use"] == 0


def test_unified_policy_plans_managed_memory(tmp_path, runtime):
    """`--offload-policy unified` plans the same offload into CUDA managed
    memory (`offload:unified@<trigger>` in the exported module) and trains
    like eager; `--offload-d2h-bandwidth` reaches the schedule. On CPU the
    runtime keeps such a tensor where it is (no managed memory here); the
    GPU check runs the migration itself."""
    source = tmp_path / "model.pt"
    specs = measure.save_zoo_model(MODEL, KWARGS, source)
    out = tmp_path / "model.unified.pt"
    report = measure.compile_model(
        source, out, specs, ["--prefer", "memory", "--device", "cuda",
                             "--grad-buffers", "resident",
                             "--offload-policy", "unified",
                             "--offload-d2h-bandwidth", "20"])
    signature = report["signatures"][0]
    offloaded = signature["offloaded"]
    assert offloaded and all(o["kind"] == "unified" for o in offloaded)
    code = torch.jit.load(str(out)).code
    for o in offloaded:
        assert f'"offload:unified@{o["prefetch_at"]}"' in code
    assert "offload:host" not in code
    schedule = signature["prefetch_schedule"]
    # 20 GB/s out against 55 back: the copies out take longer.
    assert schedule["offload_seconds"] > schedule["transfer_seconds"]
    run = measure.run_worker(
        {"zoo": MODEL, "kwargs": KWARGS, "seed": 0, "threads": 1,
         "compiled": {"unified": str(out)}, "compare": True,
         "compare_steps": STEPS, "measure": False,
         "grad_buffers": "resident"},
        timeout=600)
    entry = run["compiled"]["unified"]
    assert "error" not in entry, entry.get("error")
    assert entry["compare"]["bitwise"], entry["compare"]["problems"][:5]


def test_offload_stubs_carry_the_schedule_and_train_alike(compiled, tmp_path):
    path, signature = compiled
    source = path.parent / "stubs" / "model.stubs.cpp"
    text = source.read_text()
    offloaded = signature["offloaded"]
    regions = {o["used_by"][len("region "):] for o in offloaded}
    sites = re.findall(r'^// offload\d+: region "([^"]+)", (\d+) tensor', text,
                       re.M)
    assert {name for name, _ in sites} == regions, sites
    assert sum(int(n) for _, n in sites) == len(offloaded)
    for o in offloaded:
        region = o["used_by"][len("region "):]
        assert (f'// offload' in text and
                f'back: host -> device when the backward of region '
                f'"{o["prefetch_at"]}" starts' in text), o
        assert f'{{"{region}", "{o["prefetch_at"]}", MEMOPT_STUB_HOST' in text
    library = tmp_path / "libmodel_stubs.so"
    measure.build_launch_stubs(source, library)
    shape = [KWARGS["batch"], 3, KWARGS["image"], KWARGS["image"]]
    out = subprocess.run(
        [sys.executable, REPO / "test" / "python" / "stub_worker.py",
         measure.runtime_library_path(), library, "offload",
         json.dumps({"compiled": str(path), "shape": shape, "steps": STEPS})],
        capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["offload_sites"] == len(regions), got
    assert got["equal"], got
    # [generic, stubs] copy calls in one step: tensor by tensor out and
    # back, or one launcher call per region each way.
    assert got["copies"]["generic"] == [2 * len(offloaded), 0], got
    assert got["copies"]["stubs"] == [0, 2 * len(regions)], got
    # The same tensors and bytes moved, none kept for want of room.
    tensors, moved, fallbacks = got["stats"]["stubs"][:3]
    assert [tensors, moved, fallbacks] == got["stats"]["generic"][:3]
    assert tensors == len(offloaded) and fallbacks == 0


@pytest.mark.skipif(not NVCC.exists(), reason="no nvcc at /usr/local/cuda")
def test_offload_stubs_compile_with_nvcc(compiled, tmp_path):
    """The CUDA launchers of the copy schedule (cudaMemcpyAsync on the side
    stream) build with nvcc: one out and one back per offload site."""
    path, _ = compiled
    source = path.parent / "stubs" / "model.stubs.cpp"
    obj = tmp_path / "stubs.o"
    out = subprocess.run(
        [NVCC, "-x", "cu", "-std=c++17", f"-I{REPO / 'include'}",
         "-arch=sm_90", "-c", "-o", obj, source],
        capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    symbols = subprocess.run(["nm", "-C", obj], capture_output=True,
                             text=True).stdout
    launchers = set(re.findall(r"(offload\d+Cuda(?:Out|Back))\(", symbols))
    sites = len(re.findall(r"^// offload\d+: ", source.read_text(), re.M))
    assert sites and len(launchers) == 2 * sites, sorted(launchers)
