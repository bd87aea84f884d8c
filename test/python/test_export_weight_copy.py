"""The export copies unchanged weights from the source file (SourceArchive.h).

`memopt-compile` keeps the source `.pt` open from the import to the export
and copies the stored records of tensors that still hold the bytes they were
loaded from file to file, instead of writing them from memory. Whatever the
path, the written module must be the same bytes: a copy to a regular file,
a write to a pipe (`-o -`) and a write across file systems.
"""
import json
import pathlib
import subprocess

import pytest
import torch

from conftest import tool_path

MIN_COPY_BYTES = 64 * 1024  # SourceArchive::kMinCopyBytes


class Wide(torch.nn.Module):
    """Large weights (copied), small ones and buffers (written)."""

    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(64, 512)        # 128 KiB weight
        self.norm = torch.nn.BatchNorm1d(512)     # small parameters, buffers
        self.down = torch.nn.Linear(512, 96)      # 192 KiB weight
        self.head = torch.nn.Linear(96, 10)       # 3.75 KiB weight

    def forward(self, x):
        return self.head(torch.relu(self.down(torch.relu(self.norm(self.up(x))))))


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("weights") / "wide.pt"
    torch.jit.script(Wide()).save(str(path))
    return path


def compile_to(source, output, report, *extra):
    result = subprocess.run(
        [str(tool_path("memopt-compile")), str(source), "-o", str(output),
         "--input-shape", "x:8x64", "--prefer", "memory", "--report",
         str(report), *extra], capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr.decode()
    return result


def large_tensor_bytes(path):
    module = torch.jit.load(str(path))
    return sum(t.numel() * t.element_size()
               for t in module.state_dict().values()
               if t.numel() * t.element_size() >= MIN_COPY_BYTES)


def test_large_weights_are_copied_and_the_bytes_are_the_written_ones(
        source, tmp_path):
    copied = tmp_path / "copied.pt"
    compile_to(source, copied, tmp_path / "copied.json")
    report = json.loads((tmp_path / "copied.json").read_text())
    assert report["copied_weight_bytes"] == large_tensor_bytes(source) > 0

    # To stdout nothing can be copied; the archive is the same, byte for byte.
    piped = compile_to(source, "-", tmp_path / "piped.json")
    assert json.loads(
        (tmp_path / "piped.json").read_text())["copied_weight_bytes"] == 0
    assert piped.stdout == copied.read_bytes()


def test_written_module_has_the_source_weights(source, tmp_path, runtime):
    output = tmp_path / "out.pt"
    compile_to(source, output, tmp_path / "out.json")
    original = torch.jit.load(str(source)).state_dict()
    compiled = torch.jit.load(str(output)).state_dict()
    assert list(original) == list(compiled)
    for name, tensor in original.items():
        assert torch.equal(tensor, compiled[name]), name


def test_another_file_system_gets_the_same_bytes(source, tmp_path):
    """/dev/shm (tmpfs) and the temporary folder's file system: where the
    kernel cannot copy between them, the export writes the bytes itself."""
    shm = pathlib.Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm here")
    local = tmp_path / "local.pt"
    compile_to(source, local, tmp_path / "local.json")
    remote = shm / f"memopt-weight-copy-{tmp_path.name}.pt"
    try:
        compile_to(source, remote, tmp_path / "remote.json")
        assert remote.read_bytes() == local.read_bytes()
    finally:
        remote.unlink(missing_ok=True)
