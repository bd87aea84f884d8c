#!/usr/bin/python3
"""memopt-compile's plans, measured: peak training memory and step time.

Sections (each configuration measured in a fresh process, one intra-op
thread unless --threads, graph-executor optimization off; peak = the
counting allocator's high-water mark above the bytes live before a
steady-state forward+backward, see python/memopt/measure.py):

  a  spiking VGG (8 conv-BN-LIF blocks, 2x48x48 events, T=4, batch 16):
     eager vs memopt --prefer memory / balanced / speed vs
     torch.utils.checkpoint around each block; compiled modules are also
     trained 2 steps against eager (outputs, gradients, BN buffers).
  b  resnet18, resnet50, mobilenet_v2, densenet121, VisionTransformer,
     TransformerEncoder at activation-dominated sizes: eager vs memopt
     --prefer memory vs torch.utils.checkpoint around each block.
  c  --budget 40% / 60% / 80%: measured peak vs the budget.
  d  predicted (report planned.predicted_peak_bytes) vs measured peak of
     every compiled model.
  e  memopt-compile time: import + kernel probe + plan + export (the report's timings,
     judged against 1 s) and the wall time from outside, process start-up
     included; alone (--sections e) it compiles each model --prefer memory.

    /usr/bin/python3 bench/planning.py                    # everything
    /usr/bin/python3 bench/planning.py --sections a,d,e --json out.json
    /usr/bin/python3 bench/planning.py --models resnet18 --sections b,c,d,e
    /usr/bin/python3 bench/planning.py --quick            # tiny sizes (smoke)

Prints markdown tables on stdout (progress on stderr).
"""
import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from memopt import measure  # noqa: E402

SNN = ("spiking_vgg", dict(steps=4, batch=16, size=48, blocks=8))

# Sizes where activations dominate the step's peak, chosen so that a step
# takes at most a few seconds on one core of this machine (its PyTorch uses
# the reference BLAS: matmuls and 1x1 convolutions are slow).
ZOO_SIZES = {
    "resnet18": dict(batch=16, image=224),
    "resnet50": dict(batch=4, image=112),
    "mobilenet_v2": dict(batch=16, image=224),
    "densenet121": dict(batch=4, image=128),
    "vit": dict(batch=32, image=64, patch=8, layers=4, heads=4, hidden=128,
                mlp=256),
    "transformer_encoder": dict(batch=16, seq=128, dim=128, heads=4, ff=512,
                                layers=4),
}
QUICK_SIZES = {
    "spiking_vgg": dict(steps=4, batch=2, size=32, blocks=8),
    "resnet18": dict(batch=4, image=64),
    "resnet50": dict(batch=2, image=64),
    "mobilenet_v2": dict(batch=4, image=64),
    "densenet121": dict(batch=2, image=64),
    "vit": dict(batch=4, image=32, patch=8, layers=2, hidden=64, mlp=128),
    "transformer_encoder": dict(batch=4, seq=32, dim=64, ff=128, layers=2),
}

PREFER = {"memory": ["--prefer", "memory"],
          "balanced": ["--prefer", "balanced"],
          "speed": ["--prefer", "speed"]}
BUDGETS = {"40%": 0.40, "60%": 0.60, "80%": 0.80}

# (peak reduction >= x, step time <= y x eager)
SNN_TARGETS = {"memory": (3.0, 1.25), "speed": (1.5, 1.15)}
ZOO_TARGET = 2.0
BUDGET_SLACK = 0.05
PREDICTION_ERROR = 0.10
COMPILE_SECONDS = 1.0


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def mib(n) -> str:
    return "-" if n is None else f"{n / 2**20:,.1f}"


def spec_text(inputs) -> str:
    return " ".join(inputs)


class Bench:
    def __init__(self, args, workdir: pathlib.Path):
        self.args = args
        self.workdir = workdir
        self.compiles = []     # every compile: model, label, report/error
        self.compiled_runs = []  # every compiled model measured
        self.sources = {}

    # -- building blocks ---------------------------------------------------

    def source(self, name, kwargs):
        key = (name, json.dumps(kwargs, sort_keys=True))
        if key not in self.sources:
            pt = self.workdir / f"{name}-{len(self.sources)}.pt"
            self.sources[key] = (pt, measure.save_zoo_model(name, kwargs, pt))
        return self.sources[key]

    def compile(self, name, kwargs, label, extra):
        pt, specs = self.source(name, kwargs)
        out = self.workdir / f"{pt.stem}.{label.replace('%', 'pct')}.memopt.pt"
        entry = {"model": name, "label": label, "inputs": specs,
                 "args": extra, "out": str(out)}
        try:
            report = None
            for _ in range(max(1, self.args.compile_repeats)):
                r = measure.compile_model(pt, out, specs, extra)
                if report is None or \
                        r["_compile"]["wall_s"] < report["_compile"]["wall_s"]:
                    report = r
            entry["report"] = {k: report.get(k) for k in (
                "baseline", "planned", "budget_bytes", "feasible",
                "min_reachable_peak_bytes", "planner_peak_bytes",
                "recompute_overhead", "timings", "regions", "compressed",
                "offloaded")}
            entry["wall_s"] = report["_compile"]["wall_s"]
            entry["command"] = " ".join(
                [pathlib.Path(report["_compile"]["cmd"][0]).name]
                + report["_compile"]["cmd"][1:])
        except measure.CompileError as e:
            entry["error"] = e.stderr.strip()
            entry["infeasible"] = e.infeasible
            entry["wall_s"] = e.wall_s
        except FileNotFoundError as e:
            entry["error"] = str(e)
            entry["infeasible"] = False
        self.compiles.append(entry)
        log(f"  compile {name} {label}: "
            + (f"error {entry['error'][:200]}" if "error" in entry else
               f"planned {mib(_planned(entry))} MiB in {entry['wall_s']:.2f} s"))
        return entry

    def run(self, name, kwargs, **spec):
        spec = dict({"zoo": name, "kwargs": kwargs, "seed": 0,
                     "threads": self.args.threads, "steps": self.args.steps,
                     "warmup": 1}, **spec)
        return measure.run_worker(spec, timeout=3600)

    def eager(self, name, kwargs):
        r = self.run(name, kwargs, eager=True)
        _remember(self.best, ("eager", name), r["eager"])
        r["eager"] = self.best[("eager", name)]
        log(f"  eager {name}: {mib(r['eager']['peak_bytes'])} MiB, "
            f"{r['eager']['step_time_s']:.3f} s")
        return r["eager"]

    def checkpoint(self, name, kwargs):
        r = self.run(name, kwargs, checkpoint=True)
        if "error" in r["checkpoint"]:
            log(f"  torch.utils.checkpoint {name}: {r['checkpoint']['error']}")
            return r["checkpoint"]
        _remember(self.best, ("checkpoint", name), r["checkpoint"])
        r["checkpoint"]["step_time_min_s"] = \
            self.best[("checkpoint", name)]["step_time_min_s"]
        log(f"  torch.utils.checkpoint {name}: "
            f"{mib(r['checkpoint']['peak_bytes'])} MiB, "
            f"{r['checkpoint']['step_time_s']:.3f} s")
        return r["checkpoint"]

    def compiled(self, name, kwargs, entry, compare=False):
        """Measures a compiled module (fresh process); None if it did not
        compile."""
        if "error" in entry:
            return None
        r = self.run(name, kwargs, compiled={entry["label"]: entry["out"]},
                     compare=compare, measure=True)
        got = r["compiled"][entry["label"]]
        if "error" in got:
            log(f"  {name} {entry['label']}: RUN ERROR {got['error'][:300]}")
            entry["run_error"] = got["error"]
            return None
        m = got["measure"]
        if compare:
            m["compare"] = got["compare"]
        key = ("compiled", name, entry["label"])
        _remember(self.best, key, m)
        m = self.best[key]
        if entry not in self.compiled_runs:
            entry["measured"] = m
            self.compiled_runs.append(entry)
        log(f"  memopt {name} {entry['label']}: {mib(m['peak_bytes'])} MiB, "
            f"{m['step_time_s']:.3f} s"
            + (f", bitwise={got['compare']['bitwise']} worst rel "
               f"{got['compare']['worst_relative']:.2g}" if compare else ""))
        return m

    # -- sections ----------------------------------------------------------

    def section_a(self):
        name, kwargs = self.snn
        log(f"== (a) {name} {kwargs}")
        entries = {label: self.compile(name, kwargs, label, PREFER[label])
                   for label in ("memory", "balanced", "speed")}
        # Rounds of fresh processes, interleaved, so that a burst of load
        # from other processes does not hit one configuration only; the
        # step time is the fastest step over all rounds.
        steps = self.args.steps
        self.args.steps = max(steps, 5)
        for round_ in range(self.args.rounds):
            log(f"  round {round_ + 1}/{self.args.rounds}")
            eager = self.eager(name, kwargs)
            measured = {label: self.compiled(name, kwargs, entry,
                                             compare=round_ == 0)
                        for label, entry in entries.items()}
            ck = self.checkpoint(name, kwargs)
        self.args.steps = steps
        rows = [("eager", eager, None, "")]
        rows += [(f"memopt --prefer {label}", measured[label], entries[label],
                  label) for label in entries]
        rows.append((f"torch.utils.checkpoint ({ck['wrapped']})", ck, None, ""))
        lines = [f"Input `{spec_text(self.source(name, kwargs)[1])}`, "
                 f"resident (params+buffers+grads) "
                 f"{mib(eager['resident_bytes'])} MiB, "
                 f"{self.args.threads} thread(s); step time = fastest of "
                 f"{self.args.rounds} x {max(steps, 5)} steps "
                 f"({self.args.rounds} fresh processes per configuration, "
                 f"interleaved).", "",
                 "| configuration | peak (MiB) | vs eager | step (s) | time vs eager | = eager (2 SGD steps) | target | met |",
                 "|---|---:|---:|---:|---:|---|---|---|"]
        for what, m, entry, label in rows:
            if m is not None and "error" in m:
                lines.append(f"| {what} | failed: {m['error'][:120]} | | | | | | |")
                continue
            if m is None:
                err = (entry or {}).get("error") or (entry or {}).get("run_error", "")
                lines.append(f"| {what} | failed: {err[:120]} | | | | | "
                             f"{_target_text(label)} | MISSED |")
                continue
            red = eager["peak_bytes"] / m["peak_bytes"]
            slow = m["step_time_min_s"] / eager["step_time_min_s"]
            cmp = m.get("compare")
            eq = "-" if cmp is None else (
                "bitwise" if cmp["bitwise"] else
                f"NO: worst rel {cmp['worst_relative']:.2g} ({cmp['worst_what']})"
                + (f"; {cmp['problems'][:2]}" if cmp["problems"] else ""))
            target, met = _target_text(label), ""
            if label in SNN_TARGETS:
                r_min, t_max = SNN_TARGETS[label]
                met = "yes" if red >= r_min and slow <= t_max else \
                    "MISSED (" + ", ".join(
                        x for x in [f"{red:.2f}x < {r_min}x" if red < r_min else "",
                                    f"{slow:.2f}x > {t_max}x" if slow > t_max else ""]
                        if x) + ")"
            lines.append(
                f"| {what} | {mib(m['peak_bytes'])} | {red:.2f}x | "
                f"{m['step_time_min_s']:.3f} | {slow:.2f}x | {eq} | {target} | {met} |")
        self.tables["a"] = lines

    def section_b(self):
        lines = ["| model | input | resident (MiB) | eager peak (MiB) | eager step (s) | memopt memory peak (MiB) | reduction | step (s) | time | torch.utils.checkpoint peak (MiB) | reduction | step (s) | time | ≥ 2x |",
                 "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for name in self.zoo_models:
            kwargs = self.sizes[name]
            log(f"== (b) {name} {kwargs}")
            eager = self.eager(name, kwargs)
            self.eager_peaks[name] = eager
            entry = self.compile(name, kwargs, "memory", PREFER["memory"])
            m = self.compiled(name, kwargs, entry)
            ck = self.checkpoint(name, kwargs)
            e = eager
            cells = [name, f"`{spec_text(self.source(name, kwargs)[1])}`",
                     mib(e["resident_bytes"]), mib(e["peak_bytes"]),
                     f"{e['step_time_min_s']:.2f}"]
            if m is None:
                err = entry.get("error") or entry.get("run_error", "")
                cells += [f"failed: {err[:80]}", "", "", ""]
                met = "MISSED (no plan)"
            else:
                red = e["peak_bytes"] / m["peak_bytes"]
                cells += [mib(m["peak_bytes"]), f"{red:.2f}x",
                          f"{m['step_time_min_s']:.2f}",
                          f"{m['step_time_min_s'] / e['step_time_min_s']:.2f}x"]
                met = "yes" if red >= ZOO_TARGET else f"MISSED ({red:.2f}x)"
            if "error" in ck:
                cells += [f"failed: {ck['error'][:120]}", "", "", "", met]
            else:
                cells += [mib(ck["peak_bytes"]),
                          f"{e['peak_bytes'] / ck['peak_bytes']:.2f}x",
                          f"{ck['step_time_min_s']:.2f}",
                          f"{ck['step_time_min_s'] / e['step_time_min_s']:.2f}x",
                          met]
            lines.append("| " + " | ".join(cells) + " |")
        self.tables["b"] = lines

    def section_c(self):
        lines = ["| model | budget | budget (MiB) | min reachable (MiB) | measured peak (MiB) | measured / budget | step (s) | ≤ budget + 5 % |",
                 "|---|---|---:|---:|---:|---:|---:|---|"]
        models = ([self.snn[0]] if self.snn[0] in self.models else []) + \
            self.zoo_models
        for name in models:
            kwargs = self.snn[1] if name == self.snn[0] else self.sizes[name]
            log(f"== (c) {name} budgets")
            for text, fraction in BUDGETS.items():
                entry = self.compile(name, kwargs, f"budget {text}",
                                     ["--budget", text])
                rep = entry.get("report", {})
                budget = rep.get("budget_bytes")
                mrp = rep.get("min_reachable_peak_bytes")
                if "error" in entry:
                    ok = "infeasible (reported)" if entry.get("infeasible") \
                        else f"COMPILE FAILED: {entry['error'][:100]}"
                    lines.append(f"| {name} | {text} | - | - | - | - | - | {ok} |")
                    continue
                m = self.compiled(name, kwargs, entry)
                if m is None:
                    lines.append(f"| {name} | {text} | {mib(budget)} | {mib(mrp)} | run failed | | | MISSED |")
                    continue
                ratio = m["peak_bytes"] / budget if budget else float("nan")
                ok = "yes" if budget and ratio <= 1 + BUDGET_SLACK else \
                    f"MISSED ({ratio:.2f})"
                lines.append(
                    f"| {name} | {text} | {mib(budget)} | {mib(mrp)} | "
                    f"{mib(m['peak_bytes'])} | {ratio:.2f} | "
                    f"{m['step_time_min_s']:.2f} | {ok} |")
        self.tables["c"] = lines

    def section_d(self):
        lines = ["| model | configuration | predicted baseline (MiB) | predicted planned (MiB) | measured (MiB) | error | within 10 % |",
                 "|---|---|---:|---:|---:|---:|---|"]
        for e in self.compiled_runs:
            pred = _planned(e)
            base = ((e["report"].get("baseline") or {})
                    .get("predicted_peak_bytes"))
            meas = e["measured"]["peak_bytes"]
            if pred is None:
                lines.append(f"| {e['model']} | {e['label']} | {mib(base)} | - | {mib(meas)} | - | MISSED (no prediction) |")
                continue
            err = (pred - meas) / meas
            ok = "yes" if abs(err) <= PREDICTION_ERROR else "MISSED"
            lines.append(f"| {e['model']} | {e['label']} | {mib(base)} | "
                         f"{mib(pred)} | {mib(meas)} | {100 * err:+.1f} % | {ok} |")
        self.tables["d"] = lines

    def section_e(self):
        """Compile times of every compile so far; alone, compiles each model
        with --prefer memory. "< 1 s" judges import + probe + plan + export (the
        report's total); the wall time seen from outside adds the process
        start-up, whose floor is LibTorch's (memopt-compile --help)."""
        if not self.compiles:
            for name in ([self.snn[0]] if self.snn[0] in self.models else []):
                self.compile(name, self.snn[1], "prefer memory",
                             ["--prefer", "memory"])
            for name in self.zoo_models:
                self.compile(name, self.sizes[name], "prefer memory",
                             ["--prefer", "memory"])
        lines = ["| model | configuration | import (s) | kernel probe (s) | plan (s) | export (s) | total (s) | < 1 s | wall, outside (s) |",
                 "|---|---|---:|---:|---:|---:|---:|---|---:|"]
        for e in self.compiles:
            t = (e.get("report") or {}).get("timings") or {}
            f = lambda k: f"{t[k]:.3f}" if isinstance(t.get(k), (int, float)) else "-"
            wall, total = e.get("wall_s"), t.get("total_s")
            status = "" if "error" not in e else (
                " (infeasible)" if e.get("infeasible") else " (failed)")
            # An infeasible budget exits before planning finishes: no time
            # to judge (its outside wall is still shown).
            ok = "-" if e.get("infeasible") else \
                "yes" if isinstance(total, (int, float)) and \
                total < COMPILE_SECONDS else "MISSED"
            lines.append(f"| {e['model']} | {e['label']}{status} | {f('import_s')} | "
                         f"{f('probe_s')} | {f('plan_s')} | {f('export_s')} | "
                         f"{f('total_s')} | {ok} | "
                         f"{'-' if wall is None else f'{wall:.3f}'} |")
        start = min(_wall([str(measure.tool_path("memopt-compile")), "--help"])
                    for _ in range(max(3, self.args.compile_repeats)))
        lines.append("")
        lines.append(f"Process start-up and exit with no work "
                     f"(`memopt-compile --help`, best of "
                     f"{max(3, self.args.compile_repeats)}): {start:.3f} s, "
                     f"almost all of it LibTorch's dynamic loading and static "
                     f"initializers (docs/compile.md, \"Compile time\").")
        self.tables["e"] = lines


def _wall(cmd) -> float:
    import subprocess
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    return time.perf_counter() - t0


def _remember(best: dict, key, m: dict) -> None:
    """Keeps, per configuration, the largest peak and the fastest step seen
    over rounds (peaks are deterministic; step times are disturbed by other
    processes on a shared machine)."""
    if key not in best:
        best[key] = dict(m)
        return
    b = best[key]
    b["peak_bytes"] = max(b["peak_bytes"], m["peak_bytes"])
    b["step_time_min_s"] = min(b["step_time_min_s"], m["step_time_min_s"])
    b.setdefault("rounds", 1)
    b["rounds"] += 1


def _planned(entry):
    rep = entry.get("report") or {}
    return (rep.get("planned") or {}).get("predicted_peak_bytes")


def _target_text(label):
    if label in SNN_TARGETS:
        r, t = SNN_TARGETS[label]
        return f"≥ {r}x lower, ≤ {t}x time"
    return ""


TITLES = {
    "a": "(a) Spiking VGG: eager vs memopt vs torch.utils.checkpoint",
    "b": "(b) Model zoo: eager vs memopt --prefer memory vs torch.utils.checkpoint",
    "c": "(c) Budgets: measured peak vs --budget",
    "d": "(d) Predicted vs measured peak (every compiled model above)",
    "e": "(e) memopt-compile wall time",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sections", default="a,b,c,d,e")
    parser.add_argument("--models", default=",".join(["spiking_vgg"] + list(ZOO_SIZES)),
                        help="models of sections b (zoo) and c (zoo and spiking_vgg)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3,
                        help="measured steps per configuration (after 1 warm-up)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="section a: fresh-process rounds per configuration")
    parser.add_argument("--compile-repeats", type=int, default=2,
                        help="compile each configuration this often, keep the fastest")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes: a smoke test of the bench itself")
    parser.add_argument("--json", help="also write raw results here")
    parser.add_argument("--keep", help="keep .pt files and reports here")
    args = parser.parse_args()
    sections = args.sections.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = pathlib.Path(args.keep or tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        bench = Bench(args, workdir)
        bench.sections = sections
        bench.models = args.models.split(",")
        bench.sizes = QUICK_SIZES if args.quick else ZOO_SIZES
        bench.snn = ("spiking_vgg", QUICK_SIZES["spiking_vgg"]) if args.quick \
            else SNN
        bench.zoo_models = [m for m in bench.models if m in bench.sizes
                            and m != "spiking_vgg"]
        bench.tables, bench.eager_peaks, bench.best = {}, {}, {}
        t0 = time.time()
        for s in "abcde":
            if s in sections:
                getattr(bench, f"section_{s}")()
        log(f"bench done in {time.time() - t0:.0f} s")
        import torch
        load = os.getloadavg()
        print(f"memopt bench/planning.py: PyTorch {torch.__version__}, "
              f"{args.threads} intra-op thread(s), {os.cpu_count()} CPUs "
              f"(load average at the end {load[0]:.1f} / {load[1]:.1f} / "
              f"{load[2]:.1f}), {args.steps} measured steps after 1 warm-up "
              f"(step time: the fastest step), {time.time() - t0:.0f} s.\n")
        for s in "abcde":
            if s in bench.tables:
                print(f"### {TITLES[s]}\n")
                print("\n".join(bench.tables[s]) + "\n")
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(
                {"compiles": bench.compiles, "tables": bench.tables},
                indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
