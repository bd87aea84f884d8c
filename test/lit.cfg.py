# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "MEMOPT"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.memopt_obj_root, "test")
# Inputs and generators live beside the tests but are not tests themselves.
config.excludes = ["Inputs", "python", "unit", "extension", "CMakeLists.txt",
                   "lit.cfg.py"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
# Python is not instrumented: under a sanitizer build
# (scripts/test-sanitizers.sh --all) the runtimes it loads through memopt's
# library must be preloaded, as for the runtime's pytest files.
python_preload = os.environ.get("MEMOPT_PYTHON_PRELOAD")
config.substitutions.append(
    ("%python", f"env LD_PRELOAD={python_preload} {config.python_executable}"
     if python_preload else config.python_executable))
config.substitutions.append(("%memopt_src", config.memopt_src_root))
# A library of a model's own operators (test/extension), for --load-library.
config.substitutions.append(
    ("%test_operators",
     os.path.join(config.memopt_obj_root, "lib", "libmemopt_test_operators.so")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
# memopt-compile plans for this environment's intra-op threads unless told
# (--intra-op-threads auto); the checks are for one.
config.environment["OMP_NUM_THREADS"] = "1"

tool_dirs = [config.memopt_tools_dir, config.llvm_tools_dir]
tools = ["memopt-opt", "memopt-translate", "memopt-compile"]
llvm_config.add_tool_substitutions(
    [ToolSubst(t, unresolved="ignore") for t in tools], tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
