"""A compiled module damaged after compilation, in a way torch.jit.load
cannot see (the archive rewritten with fresh CRC-32s): its region graph or
save policies changed. The first call raises one RuntimeError whose memopt
line names the region and what is wrong, on one line; nothing crashes and
nothing trains on a different graph."""
import subprocess
import zipfile

import pytest
import torch

from conftest import REPO, tool_path

torch._C._set_graph_executor_optimize(False)

CHAIN = REPO / "test" / "Compile" / "Inputs" / "chain_cnn.pt"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory, runtime):
    out = tmp_path_factory.mktemp("damaged") / "c.pt"
    result = subprocess.run(
        [str(tool_path("memopt-compile")), str(CHAIN), "--input-shape",
         "x:2x3x8x8", "--prefer", "memory", "-o", str(out)],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return out


def damage(compiled, path, old: bytes, new: bytes):
    with zipfile.ZipFile(compiled) as src, \
            zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as out:
        found = False
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith(".py") and old in data:
                data = data.replace(old, new, 1)
                found = True
            out.writestr(info, data)
    assert found, f"{old!r} is not in the compiled code"
    return path


@pytest.mark.parametrize("old, new, expected", [
    (b"aten::conv2d", b"aten::conv9d",
     ["no registered operator matches `%", "= aten::conv9d(%0, %1"]),
    (b"graph(%0 : Tensor", b"graph(%0 ; Tensor",
     ["cannot parse the region graph (TorchScript IR): expected a valid "
      "token but found ' ' here", "`graph(%0 ; Tensor,`"]),
    # PyTorch 2.x adds a sentence after "unknown type specifier".
    (b"%1 : Tensor", b"%1 : Tensox",
     ["cannot parse the region graph (TorchScript IR): unknown type "
      "specifier", "`%1 : Tensox,`"]),
    (b'"keep"', b'"kepp"', ["memopt: unknown save policy 'kepp'"]),
])
def test_damaged_region_is_one_line(compiled, tmp_path, old, new, expected):
    model = torch.jit.load(str(damage(compiled, tmp_path / "d.pt", old, new)))
    with pytest.raises(RuntimeError) as error:
        model(torch.randn(2, 3, 8, 8)).sum().backward()
    memopt_lines = [line for line in str(error.value).splitlines()
                    if line.startswith("RuntimeError: memopt")]
    assert len(memopt_lines) == 1, str(error.value)
    assert memopt_lines[0].startswith("RuntimeError: memopt")
    for part in expected:
        assert part in memopt_lines[0], memopt_lines[0]
    assert str(error.value).rstrip().endswith(memopt_lines[0].rstrip())
