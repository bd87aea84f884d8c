"""The layering rule of docs/architecture.md, checked on the sources.

The compiler never links the runtime: compiler code may include, of the
runtime's headers, only the contract ones (plain C++ that both sides share,
written once), and those include neither torch nor MLIR. The kernel probe
also measures with the counting allocator (its own small library,
memopt_memory_stats). The runtime never includes MLIR or compiler headers.
"""
import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parents[2]
RUNTIME_INCLUDE = REPO / "include" / "memopt" / "Runtime"
CONTRACT = {"BatchNormChunks.h", "WeightGradChunks.h", "RegionIR.h",
            "LaunchStubs.h", "OpSchemas.h", "PackedFormat.h"}
# Headers beyond the contract that a compiler part links a library for.
LINKED = {"lib/Probe": {"MemoryStats.h"}}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def includes(path):
    return INCLUDE.findall(path.read_text(errors="replace"))


def compiler_sources():
    roots = [REPO / "lib", REPO / "passes", REPO / "tools", REPO / "fuzz",
             REPO / "include" / "memopt"]
    for root in roots:
        for path in root.rglob("*"):
            if path.suffix not in (".cpp", ".h", ".inc", ".def"):
                continue
            rel = path.relative_to(REPO).as_posix()
            if rel.startswith(("lib/Runtime/", "include/memopt/Runtime/")):
                continue
            yield rel, path


def test_compiler_includes_only_the_runtime_contract():
    offending = []
    for rel, path in compiler_sources():
        allowed = set(CONTRACT)
        for prefix, extra in LINKED.items():
            if rel.startswith(prefix + "/"):
                allowed |= extra
        for header in includes(path):
            if header.startswith("memopt/Runtime/") and \
                    header.split("/", 2)[2] not in allowed:
                offending.append(f"{rel}: {header}")
    assert not offending, "compiler code includes runtime internals:\n" + \
        "\n".join(offending)


def test_contract_headers_are_plain_cpp():
    for name in sorted(CONTRACT):
        for header in includes(RUNTIME_INCLUDE / name):
            assert not header.startswith(
                ("torch/", "ATen/", "c10/", "mlir/", "llvm/")), \
                f"contract header {name} includes {header}"
            if header.startswith("memopt/"):
                assert header.startswith("memopt/Runtime/") and \
                    header.split("/", 2)[2] in CONTRACT, \
                    f"contract header {name} includes {header}"


def test_runtime_includes_no_compiler_headers():
    roots = [REPO / "lib" / "Runtime", RUNTIME_INCLUDE]
    offending = []
    for root in roots:
        for path in root.rglob("*"):
            if path.suffix not in (".cpp", ".h", ".cu", ".cuh"):
                continue
            for header in includes(path):
                if header.startswith(("mlir/", "llvm/")) or (
                        header.startswith("memopt/") and
                        not header.startswith("memopt/Runtime/")):
                    offending.append(f"{path.relative_to(REPO)}: {header}")
    assert not offending, "runtime includes compiler headers:\n" + \
        "\n".join(offending)
