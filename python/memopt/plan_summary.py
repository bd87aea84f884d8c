"""`memopt.summary(wrapped)`: what memopt-compile planned, readable, and the
memory timeline as a figure.

Everything shown comes from the JSON report of the one memopt-compile run
that compiled the plan (`--report` with `--timeline`, docs/compile.md):
peaks, regions, packed and offloaded tensors, recompute overhead, the
recommendation, and the per-op live-bytes timelines of the baseline (the
imported function) and of the planned step. Nothing is re-computed here.

    s = memopt.summary(wrapped)
    print(s)                         # grouped by module
    s.planned_peak_bytes, s.regions, s.compressed, s.recommendation
    s.plot("memory.svg")             # or .png: baseline vs planned live bytes
"""
import dataclasses
import re
from typing import Dict, List, Optional, Tuple

__all__ = ["Summary", "Region", "TimelineEntry", "summary", "format_bytes",
           "predicted_peaks"]


@dataclasses.dataclass(frozen=True)
class TimelineEntry:
    """One op of a step: live bytes above resident while it runs."""
    index: int
    phase: str          # forward, recompute, backward
    live_bytes: int
    op: str
    module_path: str
    peak: bool


def _timeline(block: Optional[dict]) -> List[TimelineEntry]:
    """The TimelineEntry list of a report's `baseline` or `planned` block
    (empty without one)."""
    points = (block or {}).get("timeline") or []
    if not points:
        return []
    # the first op at the peak, as memopt-compile's `peak_at`
    peak = max(range(len(points)), key=lambda i: points[i]["live_bytes"])
    return [TimelineEntry(i, p["phase"], int(p["live_bytes"]), p["op"],
                          p.get("module_path") or "", i == peak)
            for i, p in enumerate(points)]


def format_bytes(n) -> str:
    """`22.5 MiB`: bytes to three digits (`1010 KiB` between 1000 and 1024
    of a unit, never an exponent)."""
    if n is None:
        return "-"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            value = n / scale
            text = f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
            return f"{text} {unit}"
    return f"{int(n)} B"


def predicted_peaks(base, planned) -> str:
    """`45 MiB -> 22.5 MiB (-50%)`: a baseline and a planned peak."""
    change = (f" ({(planned - base) / base:+.0%})"
              if base and planned is not None else "")
    return f"{format_bytes(base)} -> {format_bytes(planned)}{change}"


@dataclasses.dataclass(frozen=True)
class Region:
    """A checkpoint region: recomputed in backward instead of saved."""
    label: str
    module_paths: Tuple[str, ...]
    saved_bytes_avoided: int
    reason: str
    input_policies: Tuple[str, ...]
    ops: int
    # How much higher the predicted peak is without this region (None in
    # reports written before memopt computed it).
    lowers_peak_by_bytes: Optional[int] = None


_PRODUCER = re.compile(r"^(?P<path>[\w.\-]+) \((?P<op>[^()]+)\)$")


def _group_of_paths(paths) -> str:
    """The top-level module a set of module paths lies in; `first..last`
    when they span several, '(model code)' for code of the root module."""
    tops = []
    for p in paths:
        top = p.split(".")[0] if p else ""
        if top and top not in tops:
            tops.append(top)
    if not tops:
        return "(model code)"
    if len(tops) == 1:
        return tops[0]
    return f"{tops[0]}..{tops[-1]}"


def _producer_path(what: str) -> str:
    m = _PRODUCER.match(what or "")
    return m.group("path") if m else ""


class Summary:
    """The plan of a wrapped model (for one set of training flags).

    Attributes (from memopt-compile's report): `model`, `mode` (training
    flags), `signature`, `baseline_peak_bytes`, `planned_peak_bytes`,
    `resident_bytes`, `budget_bytes`, `feasible`, `regions` (Region, by
    module path, with what each frees and why), `compressed` (packed
    tensors), `offloaded`, `backward_kernels`, `recompute_overhead`,
    `recompute_seconds`, `step_seconds`, `recommendation`,
    `pytorch_version` (this process's), `compiled_with_pytorch` (the
    compiler's LibTorch), `memopt_version`, `signatures` (one report block
    per compiled signature), `cache_hit`, `seconds` (wrap/load time),
    `cache_entry`, and `report` (the whole JSON).
    """

    def __init__(self, report: dict, *, model: str = "", mode: str = "",
                 cache_hit: bool = False, seconds: float = 0.0,
                 cache_entry: str = ""):
        import torch
        from . import __version__
        self.report = report
        self.model = model
        self.mode = mode
        self.cache_hit = cache_hit
        self.seconds = seconds
        self.cache_entry = cache_entry
        self.function = report.get("function")
        self.signature = report.get("signature")
        self.signatures = list(report.get("signatures") or [])
        baseline = report.get("baseline") or {}
        planned = report.get("planned") or {}
        self.baseline_peak_bytes = baseline.get("predicted_peak_bytes")
        self.planned_peak_bytes = planned.get("predicted_peak_bytes")
        self.resident_bytes = baseline.get("resident_bytes")
        self.peak_at = planned.get("peak_at") or baseline.get("peak_at")
        self.budget_bytes = report.get("budget_bytes")
        self.feasible = report.get("feasible")
        self.preference = report.get("preference")
        self.options = report.get("options") or {}
        self.regions = [Region(r.get("label", ""),
                               tuple(r.get("module_paths") or ()),
                               int(r.get("saved_bytes_avoided") or 0),
                               r.get("reason", ""),
                               tuple(r.get("input_policies") or ()),
                               int(r.get("ops") or 0),
                               r.get("lowers_peak_by_bytes"))
                        for r in report.get("regions") or []]
        self.compressed = list(report.get("compressed") or [])
        self.offloaded = list(report.get("offloaded") or [])
        self.backward_kernels = list(report.get("backward_kernels") or [])
        self.unknown_ops = list(report.get("unknown_ops") or [])
        self.recompute_overhead = report.get("recompute_overhead")
        self.recompute_seconds = report.get("recompute_seconds")
        self.step_seconds = report.get("step_seconds")
        self.recommendation = report.get("recommendation")
        self.pytorch_version = torch.__version__
        self.compiled_with_pytorch = report.get("pytorch_version")
        self.memopt_version = __version__

    # -- timelines -------------------------------------------------------------
    def timelines(self) -> Tuple[List[TimelineEntry], List[TimelineEntry]]:
        """(baseline, planned) per-op timelines of the main signature (the
        report's top-level block); empty where the report has none."""
        return (_timeline(self.report.get("baseline")),
                _timeline(self.report.get("planned")))

    # -- text ------------------------------------------------------------------
    def groups(self) -> Dict[str, dict]:
        """Per top-level module: its regions, packed and offloaded tensors
        and the bytes they free."""
        groups: Dict[str, dict] = {}

        def group(name):
            return groups.setdefault(name, {"regions": [], "packed": [],
                                            "offloaded": [], "kernels": [],
                                            "frees": 0})
        for r in self.regions:
            g = group(_group_of_paths(r.module_paths or (r.label.split("..")[0],)))
            g["regions"].append(r)
            g["frees"] += r.saved_bytes_avoided
        for c in self.compressed:
            path = _producer_path(c.get("what", "")) or \
                _producer_path(c.get("used_by", ""))
            g = group(_group_of_paths([path]))
            g["packed"].append(c)
            g["frees"] += max(0, int(c.get("bytes_full") or 0) -
                              int(c.get("bytes_packed") or 0))
        for o in self.offloaded:
            g = group(_group_of_paths([_producer_path(o.get("what", ""))]))
            g["offloaded"].append(o)
        for k in self.backward_kernels:
            g = group(_group_of_paths([_producer_path(k.get("what", ""))]))
            g["kernels"].append(k)
        return groups

    def __str__(self) -> str:
        lines = []
        head = f"memopt plan for {self.model or 'the model'}"
        if self.mode:
            head += f" ({self.mode})"
        if self.signature:
            head += f", inputs {self.signature}"
        lines.append(head)
        peaks = predicted_peaks(self.baseline_peak_bytes,
                                self.planned_peak_bytes)
        lines.append(f"  predicted peak    {peaks}  (one step above the "
                     f"{format_bytes(self.resident_bytes)} resident)")
        if self.budget_bytes:
            verdict = {True: "met", False: "NOT met"}.get(self.feasible, "")
            lines.append(f"  budget            "
                         f"{format_bytes(self.budget_bytes)} {verdict}")
        else:
            lines.append(f"  budget            none (--prefer "
                         f"{self.options.get('prefer', self.preference)})")
        if self.recompute_overhead is not None:
            lines.append(
                f"  recompute         {self.recompute_overhead:+.1%} of a step "
                f"(predicted {self.recompute_seconds or 0:.3g} s of "
                f"{self.step_seconds or 0:.3g} s)")
        groups = self.groups()
        if groups:
            lines.append("  by module:")
            for name, g in sorted(groups.items(), key=lambda kv: -kv[1]["frees"]):
                parts = []
                if g["regions"]:
                    parts.append(f"{len(g['regions'])} region(s) recomputed")
                if g["packed"]:
                    full = sum(int(c.get("bytes_full") or 0) for c in g["packed"])
                    packed = sum(int(c.get("bytes_packed") or 0) for c in g["packed"])
                    kinds = sorted({c.get("kind", "") for c in g["packed"]})
                    parts.append(f"{len(g['packed'])} tensor(s) packed "
                                 f"({'/'.join(kinds)}: {format_bytes(full)} -> "
                                 f"{format_bytes(packed)})")
                if g["offloaded"]:
                    total = sum(int(o.get("bytes") or 0) for o in g["offloaded"])
                    parts.append(f"{len(g['offloaded'])} tensor(s) offloaded "
                                 f"({format_bytes(total)})")
                if g["kernels"]:
                    parts.append(f"{len(g['kernels'])} lean backward kernel(s)")
                lines.append(f"    {name:<22} frees "
                             f"{format_bytes(g['frees']):>10}: "
                             + ", ".join(parts))
                for r in g["regions"]:
                    lowers = ("" if r.lowers_peak_by_bytes is None else
                              f" (peak -{format_bytes(r.lowers_peak_by_bytes)})")
                    lines.append(f"      {r.label}: {r.reason}{lowers}")
        else:
            lines.append("  nothing planned: the model trains as it is")
        if self.unknown_ops:
            lines.append(f"  unknown ops       {len(self.unknown_ops)} "
                         f"(modelled as saving every tensor)")
        if self.recommendation:
            lines.append(f"  recommendation    {self.recommendation}")
        if len(self.signatures) > 1:
            lines.append(f"  signatures        {len(self.signatures)} compiled "
                         f"(shown: the most frequent)")
        origin = ("loaded from the cache" if self.cache_hit else "compiled")
        lines.append(f"  PyTorch {self.pytorch_version}, memopt "
                     f"{self.memopt_version}; plan {origin} in "
                     f"{self.seconds:.2f} s")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"Summary(model={self.model!r}, baseline_peak_bytes="
                f"{self.baseline_peak_bytes}, planned_peak_bytes="
                f"{self.planned_peak_bytes}, regions={len(self.regions)})")

    # -- figure ----------------------------------------------------------------
    def plot(self, path, title: Optional[str] = None):
        """Writes the memory timeline (live bytes above resident per op,
        forward then backward, baseline and planned step; checkpoint regions
        shaded where they are recomputed) to `path` (.svg, .png, .pdf: any
        format matplotlib writes). Returns `path`."""
        import os
        import matplotlib
        if matplotlib.get_backend().lower() not in ("agg", "svg", "pdf") and \
                not os.environ.get("DISPLAY"):
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        baseline, planned = self.timelines()
        if not planned and not baseline:
            raise ValueError("the report of this plan holds no timeline")
        scale = float(1 << 20)
        with matplotlib.rc_context({"svg.fonttype": "none",
                                    "svg.hashsalt": "memopt",
                                    "path.simplify": True}):
            fig, ax = plt.subplots(figsize=(8, 3.6))
            for entries, name, color in ((baseline, "baseline", "#7f7f7f"),
                                         (planned, "planned", "#d62728")):
                if not entries:
                    continue
                xs = [e.index for e in entries]
                ys = [e.live_bytes / scale for e in entries]
                peak = max(e.live_bytes for e in entries)
                (line,) = ax.step(
                    xs, ys, where="post", color=color, linewidth=1.4,
                    label=f"{name} step (peak {format_bytes(peak)})")
                line.set_gid(f"memopt-{name}")
                first_backward = next((e.index for e in entries
                                       if e.phase != "forward"), None)
                if first_backward is not None:
                    ax.axvline(first_backward, color=color, linestyle=":",
                               linewidth=0.8)
            self._shade_regions(ax, planned)
            ax.set_xlabel("op (forward, then backward)")
            ax.set_ylabel("live MiB above resident")
            ax.set_ylim(bottom=0)
            ax.set_title(title or f"{self.model or 'model'}"
                         f"{', ' + self.mode if self.mode else ''}: "
                         f"{format_bytes(self.baseline_peak_bytes)} -> "
                         f"{format_bytes(self.planned_peak_bytes)}", fontsize=10)
            ax.legend(loc="upper left", fontsize=8, frameon=False)
            ax.grid(axis="y", linewidth=0.3)
            fig.tight_layout()
            fig.savefig(path, metadata={"Date": None} if str(path).endswith(
                ".svg") else None)
            plt.close(fig)
        return path

    def _shade_regions(self, ax, planned: List[TimelineEntry]) -> None:
        """Shades each contiguous run of recompute ops of the planned
        timeline, labelled with the region whose module paths it runs."""
        spans = []
        for entry in planned:
            if entry.phase != "recompute":
                continue
            if spans and spans[-1][1] == entry.index - 1:
                spans[-1][1] = entry.index
                spans[-1][2].append(entry.module_path)
            else:
                spans.append([entry.index, entry.index, [entry.module_path]])
        first = True
        for start, end, paths in spans:
            patch = ax.axvspan(start - 0.5, end + 0.5, color="#1f77b4",
                               alpha=0.18, linewidth=0,
                               label="recomputed region" if first else None)
            patch.set_gid("memopt-region")
            first = False
            label = self._region_of(paths)
            if label and (end - start) >= 3:
                ax.annotate(label, xy=((start + end) / 2, 1),
                            xycoords=("data", "axes fraction"),
                            xytext=(0, -3), textcoords="offset points",
                            rotation=90, fontsize=6, ha="center", va="top",
                            color="#1f77b4")

    def _region_of(self, paths: List[str]) -> str:
        best, best_count = "", 0
        for r in self.regions:
            count = sum(1 for p in paths for m in r.module_paths
                        if p and (p == m or p.startswith(m + ".")))
            if count > best_count:
                best, best_count = r.label, count
        return best


def summary(wrapped) -> Summary:
    """The Summary of a `memopt.wrap`ped module's plan for its current
    training flags (else the first plan compiled)."""
    from .errors import InputError, describe
    from .flags import describe_flags
    from .wrapped_module import MemoptModule
    if not isinstance(wrapped, MemoptModule):
        raise InputError(f"summary takes what memopt.wrap returned, got "
                         f"{describe(wrapped)}")
    plan = wrapped._memopt_plan_for_summary()
    model = wrapped._memopt_model
    return Summary(plan.report, model=type(model).__name__,
                   mode=describe_flags(model, plan.flags),
                   cache_hit=plan.cache_hit, seconds=plan.seconds,
                   cache_entry=str(plan.entry.directory))
