"""Launch stubs (issue 21, item 3; docs/launch-stubs.md).

memopt-translate --emit-launch-stubs / memopt-compile --emit-stubs write
one pack and one unpack launcher per plan site with static sizes. Here the
host launchers are compiled with the system C++ compiler and loaded next to
the runtime, each case in a process of its own (stub_worker.py): they write
the generic kernels' payload bytes for every element type and format, fail
a checked pack of a non-binary value with the generic message, and train
the spiking VGG bitwise equal to the generic kernels with fewer launches
per step. The same sources compile with nvcc for sm_80 and sm_90.
"""
import json
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import REPO, runtime_library_path, tool_path

sys.path.insert(0, str(REPO / "python"))
from memopt import measure  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
NVCC = pathlib.Path("/usr/local/cuda/bin/nvcc")

# Sites in every format the stubs have: odd sizes, a tensor over one CUDA
# block (8192 values), each element type, a region and a layer.
DEMO = """
func.func @forward(%a: tensor<3x8193xf32>, %b: tensor<37xf16>, %c: tensor<4x25xbf16>, %w: tensor<5xf32>, %d: tensor<2x3x7xf32>) -> (tensor<3x8193xf32>, tensor<2x3x7xf32>) {
  %r = memopt.checkpoint "mixed" (%a, %w, %b, %c) policies [#memopt.compress<bit>, #memopt.keep, #memopt.compress<bit>, #memopt.compress<bool>] : (tensor<3x8193xf32>, tensor<5xf32>, tensor<37xf16>, tensor<4x25xbf16>) -> tensor<3x8193xf32> {
  ^bb0(%x: tensor<3x8193xf32>, %y: tensor<5xf32>, %z: tensor<37xf16>, %v: tensor<4x25xbf16>):
    memopt.yield %x : tensor<3x8193xf32>
  }
  %p = memopt.op "aten::mul"(%d, %d) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor", saved_input = #memopt.compress<bool>} : (tensor<2x3x7xf32>, tensor<2x3x7xf32>) -> tensor<2x3x7xf32>
  return %r, %p : tensor<3x8193xf32>, tensor<2x3x7xf32>
}
"""
DEMO_SITES = [
    {"region": "mixed", "tensors": [
        {"shape": [3, 8193], "dtype": "float32", "kind": "bit"},
        {"shape": [37], "dtype": "float16", "kind": "bit"},
        {"shape": [4, 25], "dtype": "bfloat16", "kind": "bool"}]},
    {"region": "", "tensors": [
        {"shape": [2, 3, 7], "dtype": "float32", "kind": "bool"}]},
]


def run(cmd, **kwargs):
    out = subprocess.run([str(c) for c in cmd], capture_output=True,
                         text=True, timeout=900, **kwargs)
    assert out.returncode == 0, (cmd, out.stdout[-3000:], out.stderr[-3000:])
    return out


def worker(stubs: pathlib.Path, case: str, args: dict) -> dict:
    out = run([sys.executable, HERE / "stub_worker.py",
               runtime_library_path(), stubs, case, json.dumps(args)])
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("stubs")
    mlir = tmp / "demo.mlir"
    mlir.write_text(DEMO)
    source = tmp / "demo.stubs.cpp"
    run([tool_path("memopt-translate"), mlir, "--emit-launch-stubs",
         "--launch-stubs-model=demo", "-o", source])
    library = tmp / "libdemo_stubs.so"
    measure.build_launch_stubs(source, library)
    return {"source": source, "library": library}


@pytest.fixture(scope="module")
def spiking_vgg(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vgg")
    model = tmp / "spiking_vgg.pt"
    shapes = run([sys.executable, "-W", "ignore",
                  REPO / "examples" / "spiking_vgg.py", "--out", model])
    spec = shapes.stdout.split()
    compiled = tmp / "spiking_vgg.memopt.pt"
    run([tool_path("memopt-compile"), model, *spec, "--prefer", "memory",
         "-o", compiled, "--emit-stubs", tmp / "stubs"])
    source = tmp / "stubs" / "spiking_vgg.stubs.cpp"
    library = tmp / "libspiking_vgg_stubs.so"
    measure.build_launch_stubs(source, library)
    shape = [int(d) for d in spec[1].split(":")[1].split("x")]
    return {"compiled": compiled, "source": source, "library": library,
            "shape": shape}


def test_host_launchers_write_the_generic_bytes(demo):
    got = worker(demo["library"], "formats", {"sites": DEMO_SITES})
    assert got["sites_before"] == 0 and got["sites"] == 2, got
    assert len(got["results"]) == 2 * len(DEMO_SITES)
    for result in got["results"]:
        assert result["bytes"] and result["values"], result
        # One launch packs every tensor of the site.
        assert result["stub_launches"] == 1, result
    assert "no registered launch stub site of region 'mixed' packs these " \
           "3 tensor(s)" in got["mismatch"], got


def test_checked_pack_fails_like_the_generic_check(demo):
    got = worker(demo["library"], "nonbinary", {"sites": DEMO_SITES})
    assert got["generic"] and got["generic"] == got["stub"], got
    assert "value 2 at flat index 4242" in got["stub"], got


def test_spiking_vgg_trains_bitwise_with_fewer_launches(spiking_vgg):
    source = spiking_vgg["source"].read_text()
    sites = len(re.findall(r"^// site\d+: ", source, re.M))
    regions = len(re.findall(r"^// site\d+: region ", source, re.M))
    assert sites > 20 and regions > 0, source[:2000]
    got = worker(spiking_vgg["library"], "train",
                 {"compiled": str(spiking_vgg["compiled"]),
                  "shape": spiking_vgg["shape"], "steps": 3})
    assert got["sites"] == sites, got
    assert got["equal"], got
    generic, stubs = got["generic"], got["stubs"]
    print(f"launches per step: generic {generic[0]}, stubs {stubs[1]} "
          f"({sites} sites, {regions} regions)")
    # With stubs loaded every compression launch is a stub's ...
    assert stubs[0] == 0 and generic[1] == 0, got
    # ... and there are fewer: checks fused into packs, one kernel per
    # tensor instead of a vector kernel and a tail, region inputs packed
    # together (138 -> 70 at the time of writing).
    assert stubs[1] < 0.6 * generic[0], got


@pytest.mark.skipif(not NVCC.exists(), reason="no nvcc at /usr/local/cuda")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_stub_sources_compile_with_nvcc(spiking_vgg, tmp_path, arch):
    """The CUDA side of the stubs: one pack and one unpack kernel per site
    in the cubin (readelf lists its kernels; the toolkit here has no
    cuobjdump)."""
    cubin = tmp_path / f"stubs.{arch}.cubin"
    run([NVCC, "-x", "cu", "-std=c++17", f"-I{REPO / 'include'}",
         f"-arch={arch}", "-cubin", "-o", cubin, spiking_vgg["source"]])
    symbols = run(["readelf", "-sW", cubin]).stdout
    kernels = set(re.findall(r"(site\d+(?:Pack|Unpack)Kernel)", symbols))
    sites = len(re.findall(r"^// site\d+: ", spiking_vgg["source"].read_text(),
                           re.M))
    assert len(kernels) == 2 * sites, sorted(kernels)


def test_stubs_of_another_abi_are_refused(runtime):
    """A stubs library built against another layout of the C structs is not
    used (registration returns -1 with a message on stderr), never misread."""
    import ctypes
    lib = ctypes.CDLL(str(runtime_library_path()))
    register = lib.memopt_register_launch_stubs
    register.restype = ctypes.c_int
    register.argtypes = [ctypes.c_int32, ctypes.c_char_p, ctypes.c_void_p,
                         ctypes.c_int32]
    before = runtime.launch_stub_sites()
    assert register(999, b"stale", None, 0) == -1
    assert runtime.launch_stub_sites() == before
