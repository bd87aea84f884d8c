#!/usr/bin/python3
"""The hostile-input table of docs/reliability.md: each damaged or wrong
input through memopt-compile (exit code, the one line it prints) and each
damaged compiled module through its first training step (the memopt line
of the exception). The same cases are asserted by test_import_errors.py,
test_compile_cli.py and test_damaged_modules.py; this prints what happens.

    /usr/bin/python3 bench/hostile_inputs.py [--build build]
"""
import argparse
import pathlib
import subprocess
import sys
import tempfile
import zipfile

REPO = pathlib.Path(__file__).resolve().parents[1]
CHAIN = REPO / "test" / "Compile" / "Inputs" / "chain_cnn.pt"


def record_data_offset(raw: bytes, info: zipfile.ZipInfo) -> int:
    local = info.header_offset
    return local + 30 + int.from_bytes(raw[local + 26:local + 28], "little") \
        + int.from_bytes(raw[local + 28:local + 30], "little")


def flipped_weights(path: pathlib.Path) -> pathlib.Path:
    """50 bits flipped inside the first tensor record."""
    raw = bytearray(CHAIN.read_bytes())
    with zipfile.ZipFile(CHAIN) as archive:
        info = next(i for i in archive.infolist()
                    if i.filename.endswith("data/0"))
    start = record_data_offset(raw, info)
    for i in range(50):
        raw[start + (i * 13) % info.file_size] ^= 1 << (i % 8)
    path.write_bytes(bytes(raw))
    return path


def rewritten(source, path, change=None, compression=zipfile.ZIP_STORED):
    """`source` rewritten record by record (fresh CRC-32s), `change(name,
    data)` applied to each record's bytes."""
    with zipfile.ZipFile(source) as src, \
            zipfile.ZipFile(path, "w", compression) as out:
        for info in src.infolist():
            data = src.read(info)
            if change:
                data = change(info.filename, data)
            info.compress_type = compression
            out.writestr(info, data)
    return path


def compile_cases(tmp: pathlib.Path):
    (tmp / "text.pt").write_text("hello\n")
    (tmp / "truncated.pt").write_bytes(CHAIN.read_bytes()[:3000])
    deflated_damaged = rewritten(CHAIN, tmp / "deflated.pt",
                                 compression=zipfile.ZIP_DEFLATED)
    raw = bytearray(deflated_damaged.read_bytes())
    with zipfile.ZipFile(deflated_damaged) as archive:
        info = next(i for i in archive.infolist()
                    if i.filename.endswith("data/0"))
    raw[record_data_offset(raw, info) + info.compress_size // 2] ^= 0x10
    deflated_damaged.write_bytes(bytes(raw))
    garbage_code = rewritten(
        CHAIN, tmp / "garbage_code.pt",
        lambda name, data: b"def forward(self, x:\n  return (((("
        if name.endswith(".py") else data)
    ok = ["--input-shape", "x:2x3x8x8", "-o", str(tmp / "o.pt")]
    return [
        ("missing file", [str(tmp / "missing.pt")] + ok),
        ("not a zip file", [str(tmp / "text.pt")] + ok),
        ("truncated archive", [str(tmp / "truncated.pt")] + ok),
        ("50 bits flipped in a weight record",
         [str(flipped_weights(tmp / "flipped.pt"))] + ok),
        ("one bit flipped in a deflated record", [str(deflated_damaged)] + ok),
        ("code record that does not compile", [str(garbage_code)] + ok),
        ("spec naming no input of the model",
         [str(CHAIN), "--input-shape", "y:2x3x8x8", "-o", str(tmp / "o.pt")]),
        ("one spec too many",
         [str(CHAIN), "--input-shape", "x:2x3x8x8", "--input-shape",
          "y:4", "-o", str(tmp / "o.pt")]),
        ("shape the model cannot run",
         [str(CHAIN), "--input-shape", "x:2x3x8", "-o", str(tmp / "o.pt")]),
        ("spec that does not parse",
         [str(CHAIN), "--input-shape", "x:2xAx8", "-o", str(tmp / "o.pt")]),
        ("unknown dtype",
         [str(CHAIN), "--input-shape", "x:2x3x8x8:f8", "-o",
          str(tmp / "o.pt")]),
        ("budget that does not parse",
         [str(CHAIN)] + ok + ["--budget", "lots"]),
        ("budget below what any plan reaches",
         [str(CHAIN)] + ok + ["--budget", "1KB"]),
        ("output into a missing directory",
         [str(CHAIN), "--input-shape", "x:2x3x8x8", "-o",
          str(tmp / "nodir" / "o.pt")]),
    ]


RUNTIME_CASES = [
    ("region graph: unknown operator", b"aten::conv2d", b"aten::conv9d"),
    ("region graph: syntax", b"graph(%0 : Tensor", b"graph(%0 ; Tensor"),
    ("region graph: unknown type", b"%1 : Tensor", b"%1 : Tensox"),
    ("save policy", b'"keep"', b'"kepp"'),
]

RUNTIME_STEP = r"""
import sys, torch
torch.ops.load_library(sys.argv[1])
model = torch.jit.load(sys.argv[2])
try:
    model(torch.randn(2, 3, 8, 8)).sum().backward()
    print("trained: no error")
except RuntimeError as e:
    lines = [l for l in str(e).splitlines() if l.startswith("RuntimeError: memopt")]
    print(lines[-1][len("RuntimeError: "):] if lines else str(e).splitlines()[-1])
"""


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(REPO / "build"))
    args = parser.parse_args()
    build = pathlib.Path(args.build)
    tool = build / "bin" / "memopt-compile"
    print("| case | exit | what memopt prints |\n|---|---:|---|")
    with tempfile.TemporaryDirectory() as name:
        tmp = pathlib.Path(name)
        for label, argv in compile_cases(tmp):
            result = subprocess.run([str(tool)] + argv, capture_output=True,
                                    text=True)
            lines = result.stderr.strip().splitlines()
            shown = lines[0] if result.returncode else "(compiled)"
            if result.returncode and len(lines) != 1:
                shown += f" (+{len(lines) - 1} more lines)"
            print(f"| {label} | {result.returncode} | {cell(shown)} |")
        compiled = tmp / "c.pt"
        subprocess.run([str(tool), str(CHAIN), "--input-shape", "x:2x3x8x8",
                        "--prefer", "memory", "-o", str(compiled)],
                       check=True, capture_output=True)
        for label, old, new in RUNTIME_CASES:
            damaged = rewritten(compiled, tmp / "d.pt",
                                lambda n, d: d.replace(old, new, 1)
                                if n.endswith(".py") else d)
            result = subprocess.run(
                [sys.executable, "-c", RUNTIME_STEP,
                 str(build / "lib" / "libmemopt_runtime.so"), str(damaged)],
                capture_output=True, text=True)
            print(f"| compiled module, {label} (first step) | "
                  f"RuntimeError | {cell(result.stdout.strip())} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
