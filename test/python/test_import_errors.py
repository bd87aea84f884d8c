"""Bad inputs to `memopt-translate --import-torchscript`: every case exits
non-zero with exactly one line `memopt: error: ...` and no abort trace."""
import pathlib
import subprocess
from typing import Any

import pytest
import torch

from conftest import REPO, tool_path, zip_record_data_offset

INPUTS = REPO / "test" / "Conversion" / "Inputs"
CONV_BN = INPUTS / "conv_bn.pt"


def run_import(path, *extra):
    tool = tool_path("memopt-translate")
    if not tool.exists():
        pytest.fail(f"memopt-translate not built: {tool}")
    return subprocess.run(
        [str(tool), "--import-torchscript", str(path), *extra],
        capture_output=True, text=True, timeout=120)


def assert_one_error_line(result, expected):
    assert result.returncode != 0, result.stdout
    assert result.returncode < 128, f"crashed with signal {result.returncode - 128}"
    lines = result.stderr.splitlines()
    assert len(lines) == 1, f"expected one line, got:\n{result.stderr}"
    assert lines[0].startswith("memopt: error: "), lines[0]
    assert expected in lines[0], lines[0]
    assert result.stdout == "", "no IR may be printed on failure"


def test_missing_file(tmp_path):
    # mlir-translate's driver reads the input itself; memopt-translate must
    # report an unreadable input in memopt's one-line form.
    result = run_import(tmp_path / "missing.pt")
    assert_one_error_line(result, "cannot open")


def test_truncated_zip(tmp_path):
    path = tmp_path / "truncated.pt"
    path.write_bytes(CONV_BN.read_bytes()[:3000])
    assert_one_error_line(run_import(path), "corrupt or truncated zip archive")


@pytest.mark.parametrize("stride", [97, 1009])
def test_corrupt_zip_bytes(tmp_path, stride):
    data = bytearray(CONV_BN.read_bytes())
    for i in range(200, len(data), stride):
        data[i] ^= 0x5A
    path = tmp_path / "corrupt.pt"
    path.write_bytes(bytes(data))
    result = run_import(path, "--input-shape", "x:2x3x8x8")
    assert_one_error_line(result, "")


def test_corrupt_payload_inside_valid_zip(tmp_path):
    # A well-formed zip whose code record is garbage.
    import zipfile
    src = zipfile.ZipFile(CONV_BN)
    path = tmp_path / "garbage_code.pt"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as out:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith(".py"):
                data = b"def forward(self, x:\n  return ((("
            out.writestr(info, data)
    assert_one_error_line(run_import(path), "cannot load TorchScript archive")


def rewrite_archive(source, path, compression, damage=None):
    """`source` record by record into `path`, then, in every record whose
    name `damage(name)` picks, up to 50 stored bytes flipped in place (the
    directory keeps the original CRC-32, as a flipped bit on disk would)."""
    import zipfile
    src = zipfile.ZipFile(source)
    with zipfile.ZipFile(path, "w", compression=compression) as out:
        for info in src.infolist():
            data = src.read(info)
            info.compress_type = compression
            out.writestr(info, data)
    if damage is None:
        return path
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            if not damage(info.filename):
                continue
            start = zip_record_data_offset(raw, info)
            for offset in range(0, min(info.compress_size, 50 * 7), 7):
                raw[start + offset] ^= 0x10
    path.write_bytes(bytes(raw))
    return path


def test_bit_flips_inside_a_weight_record(tmp_path):
    """torch.jit.load accepts this file (LibTorch does not check CRC-32s)
    and would load different weights; the importer names the record."""
    path = rewrite_archive(
        CONV_BN, tmp_path / "flipped.pt", 0,
        damage=lambda name: name.endswith("data/0"))
    torch.jit.load(str(path))  # what the check is for: this succeeds
    assert_one_error_line(run_import(path, "--input-shape", "x:2x3x8x8"),
                          "data/0' does not match its CRC-32")


def test_deflated_archive_imports(tmp_path):
    import zipfile
    path = rewrite_archive(CONV_BN, tmp_path / "deflated.pt",
                           zipfile.ZIP_DEFLATED)
    result = run_import(path, "--input-shape", "x:2x3x8x8")
    assert result.returncode == 0, result.stderr
    assert "memopt.param" in result.stdout or "func.func" in result.stdout


def test_damaged_deflated_record(tmp_path):
    import zipfile
    path = rewrite_archive(
        CONV_BN, tmp_path / "deflated.pt", zipfile.ZIP_DEFLATED,
        damage=lambda name: name.endswith("data/0"))
    result = run_import(path, "--input-shape", "x:2x3x8x8")
    assert_one_error_line(result, "corrupt or truncated zip archive (record '")


def test_not_a_zip(tmp_path):
    path = tmp_path / "text.pt"
    path.write_text("hello\n")
    assert_one_error_line(run_import(path), "not a zip file")


def test_zip_that_is_not_torchscript():
    assert_one_error_line(run_import(INPUTS / "state_dict.pt"),
                          "is a zip archive but not a TorchScript module")


def test_operator_without_schema():
    assert_one_error_line(run_import(INPUTS / "custom_op.pt"),
                          "operator 'memopt_test::scale' has no schema")


@pytest.mark.parametrize("specs,expected", [
    (["x:2x3x8x8", "y:4"], "the method takes 1 input(s) (x) but 2"),
    (["x:2x3x8"], "running 'aten::conv2d' on inputs of the given shapes failed"),
    (["x:2x3xAx8"], "invalid input spec 'x:2x3xAx8'"),
    (["x:2x3x8x8:f8"], "unknown dtype 'f8'"),
    (["x"], "invalid input spec 'x'"),
    (["y:2x3x8x8"], "input spec 'y' names no input of the method "
                    "(its inputs: x)"),
])
def test_input_spec_mismatch(specs, expected):
    args = [arg for spec in specs for arg in ("--input-shape", spec)]
    assert_one_error_line(run_import(CONV_BN, *args), expected)


def test_data_dependent_control_flow():
    # Kept whole (test_data_dependent_control_flow.py), unless the shapes
    # of its results would depend on the data.
    assert run_import(INPUTS / "data_dependent_if.pt",
                      "--input-shape", "x:2x3").returncode == 0
    result = run_import(INPUTS / "data_dependent_shapes.pt",
                        "--input-shape", "x:2x3")
    assert_one_error_line(result, "prim::If on tensor data returns [2, 2] "
                          "Float from its 'then' branch but [2, 3] Float")
    assert "make_models.py:" in result.stderr


@torch.jit.script
class Tally:
    """A user's context manager: TorchScript compiles it, memopt cannot say
    what its __enter__ and __exit__ change."""

    def __init__(self):
        self.depth = 0

    def __enter__(self):
        self.depth += 1

    def __exit__(self, kind: Any, value: Any, trace: Any):
        self.depth -= 1


class ContextInForward(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        with Tally():
            y = self.linear(x)
        return y


def test_with_block_other_than_no_grad_is_refused_by_name(tmp_path):
    # Running the context object at import used to crash the interpreter.
    # torch.no_grad() blocks are imported (test_no_grad_blocks.py).
    path = tmp_path / "context.pt"
    torch.jit.script(ContextInForward()).save(str(path))
    result = run_import(path, "--input-shape", "x:2x4")
    assert_one_error_line(result,
                          "'with' blocks other than torch.no_grad() are not "
                          "supported")
    assert "Tally" in result.stderr
    assert "test_import_errors.py:" in result.stderr


def test_model_that_raises_for_the_shapes(tmp_path):
    # Batch norm in training mode rejects one value per channel, like eager.
    result = run_import(CONV_BN, "--input-shape", "x:1x3x1x1")
    assert_one_error_line(result, "the model raises an exception")


def test_success_prints_ir_only():
    result = run_import(CONV_BN, "--input-shape", "x:2x3x8x8")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert 'memopt.param "conv.weight"' in result.stdout


@pytest.mark.parametrize("name", [
    "damaged_debug_info_huge_alloc.pt", "damaged_pickle_huge_string.pt",
    "damaged_record_25gb_alloc.pt", "damaged_code_class_constant.pt",
    "damaged_code_token.pt", "damaged_end_record_counts.pt"])
@pytest.mark.parametrize("specs", [[], ["x:2x3x8x8"]])
def test_fuzzer_findings_do_not_crash(name, specs):
    args = [arg for spec in specs for arg in ("--input-shape", spec)]
    result = run_import(INPUTS / "fuzz" / name, *args)
    assert result.returncode in (0, 1), result.stderr
    if result.returncode:
        assert_one_error_line(result, "")


def test_end_records_that_disagree_are_damage():
    # LibTorch reads the ZIP64 end record; a classic one that disagrees
    # once hid two damaged records from the CRC check (README in fuzz/).
    result = run_import(INPUTS / "fuzz" / "damaged_end_record_counts.pt",
                        "--input-shape", "x:2x3x8x8")
    assert_one_error_line(result, "corrupt or truncated zip archive "
                          "(end of central directory counts 23 entries on "
                          "its disk but 0 in all)")
