"""A compiled module and the runtime ops it calls train silently: no
deprecation or user warning, from Python or from C++ (TORCH_WARN goes to
stderr), on any call of a training loop, on every PyTorch we build against
(PyTorch 2.x deprecates APIs 1.13 used, and warns on every call when one is
hit).

Each model is compiled with --prefer memory (checkpoint regions, packed
saved tensors, saved forms: the runtime ops the exporter uses) and trained
three steps in a fresh process with every warning shown
(`-W always`); what that process writes to stderr between loading the
module and the end of training must be empty. (Imports are left out:
Debian 13's torchvision itself leaves a TemporaryDirectory to the garbage
collector, a ResourceWarning at import.)
"""
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import BUILD, REPO

sys.path.insert(0, str(REPO / "python"))
os.environ.setdefault("MEMOPT_BUILD_DIR", str(BUILD))
from memopt import measure  # noqa: E402

MODELS = {
    "spiking_vgg": dict(steps=2, batch=2, size=16),
    "vit": dict(batch=2, image=32, patch=8, layers=2, hidden=32, mlp=64),
    "resnet18": dict(batch=2, image=32),
}

TRAIN = textwrap.dedent("""
    import gc, sys, torch
    from memopt import measure
    name, kwargs, path = sys.argv[1], eval(sys.argv[2]), sys.argv[3]
    _, shapes = measure.build_zoo_model(name, kwargs, 0)
    inputs = measure.make_inputs(shapes)
    gc.collect()
    print("=== begin", file=sys.stderr, flush=True)
    measure.load_runtime()
    module = torch.jit.load(path)
    module.train()
    optimizer = torch.optim.SGD(module.parameters(), lr=0.01, momentum=0.9)
    for _ in range(3):
        optimizer.zero_grad()
        out = module(*inputs)
        (out if isinstance(out, torch.Tensor) else out[0]).sum().backward()
        optimizer.step()
    gc.collect()
    print("=== end", file=sys.stderr, flush=True)
    print("trained")
""")


@pytest.mark.parametrize("name", list(MODELS))
def test_compiled_module_trains_without_warnings(name, tmp_path):
    if not measure.tool_path("memopt-compile").exists():
        pytest.fail("memopt-compile not built")
    source, out = tmp_path / f"{name}.pt", tmp_path / f"{name}.memopt.pt"
    specs = measure.save_zoo_model(name, MODELS[name], source)
    report = measure.compile_model(source, out, specs, ["--prefer", "memory"])
    block = report.get("planned") or report["signatures"][0]["planned"]
    assert block, "nothing was planned"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [str(REPO / "python"), env.get("PYTHONPATH", "")] if p)
    result = subprocess.run(
        [sys.executable, "-W", "always", "-c", TRAIN, name,
         repr(MODELS[name]), str(out)],
        capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("trained")
    during = result.stderr.split("=== begin\n", 1)[-1].split("=== end\n", 1)
    assert len(during) == 2, result.stderr[-3000:]
    assert during[0] == "", f"warnings while training:\n{during[0][-3000:]}"
