"""The compiler driver: the plan for one set of training flags, from the
cache or from ONE `memopt-compile` run.

`Compiler.plan(flags)` looks the plan up in the cache (memopt/cache.py)
under the key of everything it depends on; on a miss it converts the model
to TorchScript with those flags (memopt/torchscript.py), runs

    memopt-compile source.pt -o model.memopt.pt --report report.json
                   --timeline --spec ... --prefer ... --device ...

and stores the compiled module (weights emptied) and the report, which is
everything the summary shows: peaks, regions, the recommendation and, with
`--timeline`, the per-op timelines of the baseline and the planned step.
The loaded module is then bound to the model's tensors (memopt/binding.py).
Every planning decision is memopt-compile's.
"""
import atexit
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import List, Optional

import torch
import torch.nn as nn

from . import cache, kernel_marks
from .binding import Plan, Stale, strip
from .errors import CacheWarning, CompileError, compile_error, warn
from .flags import Flags, apply_flags, describe_flags
from .locate import compiler_path, runtime_library_path
from .options import Options
from .plan_summary import predicted_peaks
from .runtime import (load_runtime, operator_libraries,
                      python_only_libraries)
from .signatures import Signatures
from .torchscript import (BUILTIN_NAMESPACES, calls_library_operators,
                          first_line, to_torchscript)

__all__ = ["Compiler"]

#: While a compile runs longer, a line says so this often (seconds).
_PROGRESS_EVERY = 10.0


_NO_SCHEMA = re.compile(
    r"operator '([A-Za-z0-9_]+)::([A-Za-z0-9_]+)[A-Za-z0-9_.]*' has no schema")


def _explain_missing_operator(stderr: str) -> str:
    """memopt-compile's stderr, where it found no schema for an operator
    that this process has: said why (every library torch.ops.load_library
    loaded was passed to it)."""
    match = _NO_SCHEMA.search(stderr)
    if not match or match.group(1) in BUILTIN_NAMESPACES:
        return stderr
    try:
        getattr(getattr(torch.ops, match.group(1)), match.group(2))
    except (AttributeError, RuntimeError):
        return stderr
    skipped = python_only_libraries()
    why = ("this process has it, but memopt-compile loads C++ libraries "
           "only: an operator defined from Python, or by an extension "
           "imported as a Python module, cannot run there")
    if skipped:
        why += (f"; nor can a library that needs the Python interpreter "
                f"(not passed: "
                f"{', '.join(os.path.basename(p) for p in skipped)})")
    return stderr.replace(
        "no library that registers it is loaded: pass it with --load-library",
        why)


def _temporary_root() -> pathlib.Path:
    """A cache directory removed when the process exits."""
    root = tempfile.mkdtemp(prefix="memopt-wrap-")
    atexit.register(shutil.rmtree, root, True)
    return pathlib.Path(root)


class Compiler:
    """Everything needed to compile the model for some training flags."""

    def __init__(self, model: nn.Module, signatures: Signatures,
                 options: Options, cache_dir, verbose: bool):
        self.model = model
        self.name = type(model).__name__
        self.signatures = signatures
        self.options = options
        self.verbose = verbose
        if cache_dir is False:
            self.cache_root = _temporary_root()
        elif cache_dir is not None:
            self.cache_root = pathlib.Path(cache_dir)
        else:
            self.cache_root = cache.default_dir()
        self.compiler = compiler_path()
        self.runtime = runtime_library_path()
        self.scripted = None
        self.scripted_flags: Optional[Flags] = None
        self.warned_trace = False
        self.how: Optional[str] = None
        self._fingerprint: Optional[str] = None

    # -- the model as it is now ----------------------------------------------
    def fingerprint(self, refresh: bool = False) -> str:
        """The cache's fingerprint of the model's code and structure."""
        if self._fingerprint is None or refresh:
            self._fingerprint = cache.model_fingerprint(self.model)
        return self._fingerprint

    def model_changed(self) -> bool:
        """Whether the model's code or structure changed since the last
        fingerprint (which is then the model's as it is now)."""
        return self.fingerprint() != self.fingerprint(refresh=True)

    def restructured(self) -> None:
        """The model's modules, parameters or buffers were replaced: convert
        it again for the next plan."""
        self.scripted = None
        self.fingerprint(refresh=True)

    def key_parts(self, flags: Flags) -> dict:
        return {
            "format": cache.FORMAT,
            "model": self.fingerprint(),
            "class": f"{type(self.model).__module__}.{type(self.model).__qualname__}",
            "flags": "".join("1" if f else "0" for f in flags),
            "specs": self.signatures.specs,
            "signature_files": [t for _, t in self.signatures.files],
            "options": self.options.arguments(),
            # The fit by what it holds: rewritten in place, it plans anew.
            "cost_model": cache.content_identity(self.options.cost_model)
            if self.options.cost_model else None,
            "torch": torch.__version__,
            "memopt": cache.tool_identity(self.compiler, self.runtime),
            # The model may call their operators (known once it is scripted).
            "operator_libraries": [cache.file_identity(path) for path
                                   in operator_libraries()],
            # The GPU whose convolution workspaces the plan counts.
            "kernel_marks": marks.context if (marks := self._marks())
            else None,
        }

    # -- the plan for some flags --------------------------------------------
    def plan(self, flags: Flags) -> Plan:
        t0 = time.perf_counter()
        load_runtime()
        parts = self.key_parts(flags)
        key = cache.make_key(parts)
        what = describe_flags(self.model, flags)
        try:
            entry = cache.lookup(self.cache_root, key)
        except cache.DamagedEntry as e:
            warn(f"memopt.wrap: cache entry {self.cache_root / key} "
                 f"is damaged ({e}); compiling again", CacheWarning)
            cache.remove(self.cache_root, key)
            entry = None
        if entry is not None:
            try:
                plan = self._load(entry, flags, cache_hit=True, t0=t0)
                self._announce(plan, f"{self.name} ({what}): plan loaded "
                                     f"from the cache in {plan.seconds:.2f} s")
                return plan
            except Stale as e:
                warn(f"memopt.wrap: cache entry {entry.directory} is "
                     f"stale ({e}); compiling again", CacheWarning)
                cache.remove(self.cache_root, key)
        entry = self._compile(key, parts, flags, what)
        try:
            plan = self._load(entry, flags, cache_hit=False, t0=t0)
        except Stale as e:
            cache.remove(self.cache_root, key)
            raise CompileError(f"the module memopt-compile wrote for "
                               f"{self.name} does not fit it: {e}") from None
        self._announce(plan, f"{self.name} ({what}): compiled in "
                             f"{plan.seconds:.1f} s")
        return plan

    def _say(self, text: str) -> None:
        if self.verbose:
            print(f"memopt: {text}", file=sys.stderr, flush=True)

    def _announce(self, plan: Plan, text: str) -> None:
        """`text`, and the predicted peaks of the plan's report."""
        if not self.verbose:
            return
        try:
            report = plan.report
            base = report["baseline"]["predicted_peak_bytes"]
            planned = (report.get("planned") or {}).get("predicted_peak_bytes")
        except (KeyError, TypeError, ValueError, OSError):
            base = planned = None
        if base and planned is not None:
            text += ": predicted peak " + predicted_peaks(base, planned)
        self._say(text)

    def _load(self, entry: cache.Entry, flags: Flags, cache_hit: bool,
              t0: float) -> Plan:
        try:
            loaded = torch.jit.load(str(entry.module_path),
                                    map_location=self.options.device)
        except Exception as e:
            raise Stale(f"it does not load: {first_line(e)}") from None
        loaded.train(True)
        apply_flags(self.model, loaded)
        plan = Plan(loaded, self.model, entry, flags, cache_hit)
        plan.seconds = time.perf_counter() - t0
        return plan

    def _torchscript(self, flags: Flags):
        # A trace fixes the training flags it ran with (dropout's `train`
        # argument, batch norm's branch): trace again for other flags.
        if self.scripted is not None and self.how == "trace" and \
                flags != self.scripted_flags:
            self.scripted = None
        if self.scripted is None:
            self.scripted, self.how = to_torchscript(
                self.model, self.signatures.example,
                warn_trace=not self.warned_trace)
            self.warned_trace |= self.how == "trace"
            self.scripted_flags = flags
        return self.scripted

    def _work_directory(self, key: str) -> pathlib.Path:
        """A fresh directory for the compile, in the cache directory (else,
        when that cannot be written, in a temporary one from now on)."""
        try:
            return cache.new_directory(self.cache_root, key)
        except OSError as e:
            fallback = _temporary_root()
            warn(f"memopt.wrap: cannot write the cache directory "
                 f"{self.cache_root} ({e.strerror}); plans are kept in "
                 f"{fallback} until the process exits")
            self.cache_root = fallback
            return cache.new_directory(self.cache_root, key)

    def _compile(self, key: str, parts: dict, flags: Flags,
                 what: str) -> cache.Entry:
        scripted = self._torchscript(flags)
        work = self._work_directory(key)
        try:
            apply_flags(self.model, scripted)
            source = work / "source.pt"
            scripted.save(str(source))
            module = work / cache.MODULE
            command = [str(self.compiler), str(source), "-o", str(module),
                       "--report", str(work / cache.REPORT), "--timeline",
                       *self.signatures.arguments(work),
                       *self.options.arguments()]
            # The libraries this process loaded register the operators the
            # model calls outside LibTorch's: memopt-compile loads them too.
            if calls_library_operators(scripted):
                for library in operator_libraries():
                    command += ["--load-library", library]
            self._say(f"compiling {self.name} ({what}) for "
                      f"{self.signatures.describe()} with memopt-compile "
                      f"{' '.join(self.options.arguments())} ...")
            self._run_with_marks(command, work)
            # The cache keeps no weights: the model's are bound at load.
            compiled = torch.jit.load(str(module), map_location="cpu")
            strip(compiled)
            compiled.save(str(module))
            del compiled
            return cache.store(self.cache_root, key, work, parts,
                               {"model_class": self.name, "how": self.how,
                                "flags": what})
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise

    def _marks(self) -> Optional[kernel_marks.WrapMarks]:
        """The marks of the GPU the model trains on (cuDNN's convolution
        workspaces), when it trains on one; MEMOPT_KERNEL_MARKS=off: none."""
        if self.options.device != "cuda" or \
                os.environ.get("MEMOPT_KERNEL_MARKS") == "off" or \
                not torch.cuda.is_available():
            return None
        index = next((t.device.index for t in self.model.parameters()
                      if t.device.type == "cuda" and t.device.index
                      is not None), torch.cuda.current_device())
        return kernel_marks.WrapMarks(self.cache_root, index)

    def _run_with_marks(self, command: List[str],
                        work: pathlib.Path) -> None:
        """Runs memopt-compile; on a GPU with the marks measured there, and
        when the model makes convolution calls they lack, measures those
        (a fresh process on the GPU) and compiles again with them. A
        measurement that fails costs the workspaces, not the plan."""
        log = work / "compile.log"
        marks = self._marks()
        if marks is None:
            self._run(command, log)
            return
        requests = work / "kernel-requests.jsonl"
        try:
            self._run(command + marks.arguments(requests), log)
        except CompileError as e:
            if str(marks.file) not in e.diagnostic:
                raise
            # The marks file is the compile's one problem (damaged by a
            # crash mid-write): measure again from nothing.
            warn(f"memopt.wrap: {e.diagnostic}; removing it and measuring "
                 f"again", CacheWarning)
            marks.file.unlink(missing_ok=True)
            requests.unlink(missing_ok=True)
            self._run(command + marks.arguments(requests), log)
        if not requests.exists():
            return
        try:
            count = marks.measure(requests)
        except RuntimeError as e:
            warn(f"memopt.wrap: cannot measure {self.name}'s convolutions "
                 f"on the GPU ({first_line(e)}); its plan counts no "
                 f"convolution workspace")
            return
        self._say(f"measured {count} convolution call"
                  f"{'' if count == 1 else 's'} on the GPU; compiling "
                  f"again with their workspaces ...")
        self._run(command + marks.arguments(None), log)

    def _run(self, command: List[str], log: pathlib.Path) -> None:
        """Runs memopt-compile (its stderr, timeline text included, into
        `log`); the CompileError of its diagnostic when it fails."""
        # The compiler runs what it wrote once before it succeeds, with
        # the runtime this process will load.
        env = dict(os.environ, MEMOPT_RUNTIME_LIB=str(self.runtime))
        with open(log, "w") as stderr:
            try:
                process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                           stderr=stderr, env=env)
            except OSError as e:
                raise CompileError(f"cannot run {command[0]}: "
                                   f"{e.strerror}") from None
            started = time.perf_counter()
            next_note = _PROGRESS_EVERY
            try:
                while True:
                    try:
                        process.wait(timeout=0.5)
                        break
                    except subprocess.TimeoutExpired:
                        elapsed = time.perf_counter() - started
                        if elapsed >= next_note:
                            self._say(f"  ... still compiling ({elapsed:.0f} s)")
                            next_note += _PROGRESS_EVERY
            except BaseException:  # e.g. KeyboardInterrupt: no orphan
                process.kill()
                process.wait()
                raise
        if process.returncode != 0:
            raise compile_error(
                _explain_missing_operator(log.read_text(errors="replace")),
                command, process.returncode, self.name) from None
