"""`memopt.wrap` (issue 18, docs/python.md): one call, same parameters, same
optimizer, eval works, summary and memory timeline.

For resnet18, mobilenet_v2, ViT, TransformerEncoder and the spiking VGG
(memopt.zoo at small sizes) ONE fresh process per model (the `worker` at
the end of this file; two run at a time) builds two identical models, the
optimizer and LR scheduler of one of them BEFORE wrapping it, and then:

  * checks that `named_parameters()` of the wrapped model, and of the
    compiled module it runs, are the original Parameter objects;
  * trains eager and wrapped 3 steps (dropout active, same seed per step)
    with SGD-with-momentum, then with Adam, each with a StepLR scheduler,
    comparing every parameter and buffer bit for bit after each step, and
    running eval-mode validation under torch.no_grad() between steps
    (outputs bit for bit);
  * trains one step with every batch norm frozen (partly-eval flags,
    autograd on: a second plan compiled on first use) against eager;
  * round-trips state_dict: wrapped -> fresh eager, eager -> wrapped;
  * measures the steady-state peak of the wrapped model and of the module
    memopt-compile writes for the same options (counting allocator):
    within 2 %.

The other tests run in this process: bad inputs (one line, model and cache
untouched), a damaged cache entry, what the cache key covers, the
eval/no_grad dispatch and the fallback warning, tracing, FX with keyword
inputs, several sample shapes and recorded signatures, a model changed after
wrapping, a buffer reassigned in forward, the summary and its figure, a
cache hit in a new process, and `cmake --install` / `pip install`.
"""
import copy
import concurrent.futures
import json
import os
import pathlib
import re
import subprocess
import sys
import time
import warnings
import xml.etree.ElementTree as ET

import pytest
import torch
import torch.nn as nn

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "python"))
os.environ.setdefault("MEMOPT_BUILD_DIR", str(REPO / "build"))

import memopt  # noqa: E402
from memopt import measure  # noqa: E402
from memopt.binding import Plan  # noqa: E402
from memopt.cache import FORMAT, lookup, make_key  # noqa: E402
from memopt.compiler import Compiler  # noqa: E402
from memopt.flags import flags_of  # noqa: E402
from memopt.options import Options, budget_text  # noqa: E402
from memopt.signatures import collect_signatures  # noqa: E402

MODELS = {
    "resnet18": dict(batch=2, image=32),
    "mobilenet_v2": dict(batch=2, image=32),
    "vit": dict(batch=2, image=32, layers=2, hidden=64, mlp=128),
    "transformer_encoder": dict(batch=2, seq=16, dim=64),
    "spiking_vgg": dict(steps=4, batch=2, size=32),
}
PEAK_TOLERANCE = 0.02
STEPS = 3


# ---------------------------------------------------------------------------
# The worker: one model, in a fresh process
# ---------------------------------------------------------------------------

def _equal_state(a: nn.Module, b: nn.Module):
    """Names of parameters/buffers that differ (bitwise, NaNs included: at
    these batch sizes a model's own training may diverge, in eager too)."""
    sa, sb = a.state_dict(), b.state_dict()
    if list(sa) != list(sb):
        return ["<keys differ>"]
    return [k for k in sa if not measure.same_bits(sa[k], sb[k])]


def _loss(out):
    weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(7))
    return (out * weights).sum()


def worker(spec: dict) -> dict:
    torch.set_num_threads(1)
    name, kwargs, cache_dir = spec["model"], spec["kwargs"], spec["cache_dir"]
    _, shapes = measure.build_zoo_model(name, kwargs)
    x = measure.make_inputs(shapes, seed=1)
    x_val = measure.make_inputs(shapes, seed=2)
    result = {"model": name, "optimizers": {}}

    def build(seed=0):
        return measure.build_zoo_model(name, kwargs, seed)[0]

    optimizers = {
        "sgd": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
        "adam": lambda p: torch.optim.Adam(p, lr=1e-3),
    }
    wrapped = None
    for label, make_opt in optimizers.items():
        eager, model = build(), build()
        opt_e, opt_w = make_opt(eager.parameters()), make_opt(model.parameters())
        sched_e = torch.optim.lr_scheduler.StepLR(opt_e, 1, gamma=0.5)
        sched_w = torch.optim.lr_scheduler.StepLR(opt_w, 1, gamma=0.5)
        originals = dict(model.named_parameters())
        t0 = time.perf_counter()
        wrapped = memopt.wrap(model, tuple(x), cache_dir=cache_dir,
                              verbose=False)
        wrap_s = time.perf_counter() - t0
        plan = next(iter(wrapped._memopt_plans.values()))
        record = {"wrap_s": wrap_s, "cache_hit": plan.cache_hit,
                  "steps": [], "validation": []}
        record["same_objects"] = (
            list(dict(wrapped.named_parameters())) == list(originals)
            and all(p is originals[n] for n, p in wrapped.named_parameters()))
        record["compiled_reads_originals"] = all(
            p is originals[n] for n, p in plan.module.named_parameters())
        record["buffers_shared"] = all(
            b is dict(model.named_buffers())[n]
            for n, b in plan.module.named_buffers())
        record["detach"] = memopt.detach(wrapped) is model
        for step in range(STEPS):
            for m, opt, sched in ((eager, opt_e, sched_e),
                                  (wrapped, opt_w, sched_w)):
                m.train()
                opt.zero_grad()
                torch.manual_seed(100 + step)
                _loss(m(*x)).backward()
                opt.step()
                sched.step()
            record["steps"].append(_equal_state(eager, model))
            # validation, as a training loop does it
            outs = []
            for m in (eager, wrapped):
                m.eval()
                with torch.no_grad():
                    outs.append(m(*x_val))
            record["validation"].append(bool(measure.same_bits(*outs)))
        record["lr"] = [opt_e.param_groups[0]["lr"], opt_w.param_groups[0]["lr"]]
        result["optimizers"][label] = record

    # Fine-tuning with frozen batch norm: autograd on, partly eval.
    bns = [n for n, m in wrapped.named_modules()
           if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if bns:
        eager = copy.deepcopy(memopt.detach(wrapped))
        for p in list(eager.parameters()) + list(wrapped.parameters()):
            p.grad = None
        for m in (eager, wrapped):
            m.train()
            for n, sub in m.named_modules():
                if n in bns:
                    sub.eval()
        outs = []
        for m in (eager, wrapped):
            torch.manual_seed(300)
            out = m(*x)
            _loss(out).backward()
            outs.append(out.detach())
        grads = [n for (n, a), (_, b) in zip(eager.named_parameters(),
                                             wrapped.named_parameters())
                 if not measure.same_bits(a.grad, b.grad)]
        flags = flags_of(memopt.detach(wrapped))
        result["frozen_bn"] = {
            "plans": len([p for p in wrapped._memopt_plans.values()
                          if isinstance(p, Plan)]),
            "compiled": isinstance(wrapped._memopt_plans.get(flags), Plan),
            "outputs_equal": bool(measure.same_bits(*outs)),
            "grads_differ": grads, "state_differs": _equal_state(eager, wrapped)}
        wrapped.train()

    # state_dict both ways: wrapped -> a fresh eager model, eager -> wrapped
    fresh = build(seed=5)
    state = wrapped.state_dict()
    fresh.load_state_dict(state)
    to_eager = _equal_state(fresh, memopt.detach(wrapped)) == []
    other = build(seed=6)
    wrapped.load_state_dict(other.state_dict())
    from_eager = _equal_state(other, wrapped) == []
    outs = []
    for m in (other, wrapped):
        m.train()
        torch.manual_seed(400)
        outs.append(m(*x).detach())
    plan = wrapped._memopt_plans[flags_of(memopt.detach(wrapped))]
    result["state_dict"] = {
        "keys": list(state) == list(build().state_dict()),
        "wrapped_to_eager_equal": to_eager,
        "from_eager_equal": from_eager,
        "from_eager_trains_same": bool(measure.same_bits(*outs)),
        "still_bound": all(p is dict(wrapped.named_parameters())[n]
                           for n, p in plan.module.named_parameters()),
    }

    # Peak: the wrapped model against the module memopt-compile writes for
    # the same options.
    stats = measure.load_runtime()
    peak_model = build()
    wrapped_peak = memopt.wrap(peak_model, tuple(x), cache_dir=cache_dir,
                               verbose=False)
    m_wrapped = measure.measure_training_step(wrapped_peak, x, steps=3,
                                              warmup=1, stats=stats)
    source = pathlib.Path(spec["tmp"]) / f"{name}.pt"
    out = pathlib.Path(spec["tmp"]) / f"{name}.memopt.pt"
    torch.jit.script(build()).save(str(source))
    report = measure.compile_model(source, out, measure._shape_specs(shapes),
                                   ["--prefer", "balanced", "--device", "cpu"])
    cli = torch.jit.load(str(out))
    cli.train()
    optimize = torch._C._get_graph_executor_optimize()
    torch._C._set_graph_executor_optimize(False)
    m_cli = measure.measure_training_step(cli, x, steps=3, warmup=1,
                                          stats=stats)
    torch._C._set_graph_executor_optimize(optimize)
    eager_peak = measure.measure_training_step(build(), x, steps=3, warmup=1,
                                               stats=stats)
    result["peak"] = {"wrapped": m_wrapped.peak_bytes, "cli": m_cli.peak_bytes,
                      "eager": eager_peak.peak_bytes,
                      "predicted": report["planned"]["predicted_peak_bytes"],
                      "wrapped_step_s": m_wrapped.step_time_s,
                      "cli_step_s": m_cli.step_time_s,
                      "eager_step_s": eager_peak.step_time_s}
    return result


def run_worker(spec: dict) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO / "python"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["OMP_NUM_THREADS"] = "1"
    out = subprocess.run(
        [sys.executable, "-W", "ignore", str(pathlib.Path(__file__)),
         "worker", json.dumps(spec)],
        capture_output=True, text=True, env=env, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"worker for {spec['model']} failed:\n"
                           f"{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


_RESULTS: dict = {}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("memopt-cache")


@pytest.fixture(scope="module")
def results(tmp_path_factory, cache_dir):
    if not _RESULTS:
        specs = [{"model": n, "kwargs": k, "cache_dir": str(cache_dir),
                  "tmp": str(tmp_path_factory.mktemp(n))}
                 for n, k in MODELS.items()]
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            for spec, res in zip(specs, pool.map(
                    lambda s: _safe_worker(s), specs)):
                _RESULTS[spec["model"]] = res
        print("\nwrap results:\n" + json.dumps(
            {k: {"peak": v.get("peak"), "bitwise": {
                o: r["steps"] for o, r in v.get("optimizers", {}).items()}}
             for k, v in _RESULTS.items()}, indent=1))
    return _RESULTS


def _safe_worker(spec):
    try:
        return run_worker(spec)
    except Exception as e:  # reported by the test of that model
        return {"error": str(e)}


def _result(results, name):
    res = results[name]
    assert "error" not in res, res["error"]
    return res


@pytest.mark.parametrize("name", list(MODELS))
def test_trains_like_eager(results, name):
    res = _result(results, name)
    for label, record in res["optimizers"].items():
        assert record["same_objects"], f"{label}: named_parameters are not the model's"
        assert record["compiled_reads_originals"], \
            f"{label}: the compiled module holds other parameter objects"
        assert record["buffers_shared"], f"{label}: buffers not shared"
        assert record["detach"]
        for step, differing in enumerate(record["steps"]):
            assert differing == [], \
                f"{label} step {step}: differs from eager in {differing[:5]}"
        assert all(record["validation"]), f"{label}: eval outputs differ"
        # the scheduler built before wrap stepped the optimizer's lr
        assert record["lr"][0] == record["lr"][1] < \
            (0.05 if label == "sgd" else 1e-3)
    # The second wrap (Adam) of the same model and shapes hit the cache.
    assert res["optimizers"]["adam"]["cache_hit"]


@pytest.mark.parametrize("name", [n for n in MODELS
                                  if n in ("resnet18", "mobilenet_v2",
                                           "spiking_vgg")])
def test_frozen_batch_norm_trains_like_eager(results, name):
    res = _result(results, name)["frozen_bn"]
    assert res["compiled"], "no plan was compiled for the partly-eval flags"
    assert res["plans"] >= 2
    assert res["outputs_equal"]
    assert res["grads_differ"] == []
    assert res["state_differs"] == []


@pytest.mark.parametrize("name", list(MODELS))
def test_state_dict_round_trip(results, name):
    res = _result(results, name)["state_dict"]
    assert res["keys"]
    assert res["wrapped_to_eager_equal"]
    assert res["from_eager_equal"]
    assert res["from_eager_trains_same"]
    assert res["still_bound"]


@pytest.mark.parametrize("name", list(MODELS))
def test_peak_matches_compiled_module(results, name):
    peak = _result(results, name)["peak"]
    assert peak["cli"] > 0
    assert abs(peak["wrapped"] - peak["cli"]) <= PEAK_TOLERANCE * peak["cli"], peak


# ---------------------------------------------------------------------------
# Bad input: one line, nothing modified
# ---------------------------------------------------------------------------

class TraceLosesNoGrad(nn.Module):
    """Not scriptable (a lambda); its trace records the torch.no_grad()
    block as ordinary operations, so gradients would flow through `scale`
    where eager's do not."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        h = self.bn(self.lin(x))
        with torch.no_grad():
            scale = h.abs().mean() + 1.0
        double = (lambda t: t * 2.0)  # noqa: E731 (TorchScript has none)
        return double(h * scale)


class NeitherScriptNorTrace(nn.Module):
    """forward goes through numpy and returns an array."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        import numpy
        return numpy.asarray(self.bn(self.lin(x)).detach())


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(self.drop(y.mean(dim=[2, 3])))


def _snapshot(model):
    return ({k: v.clone() for k, v in model.state_dict().items()},
            [m.training for m in model.modules()],
            [type(m) for m in model.modules()],
            {k: v for k, v in vars(model).items()})


def _assert_unmodified(model, snapshot):
    state, flags, types, attrs = snapshot
    now = model.state_dict()
    assert list(now) == list(state)
    for k in state:
        assert torch.equal(now[k], state[k]), f"{k} changed"
    assert [m.training for m in model.modules()] == flags
    assert [type(m) for m in model.modules()] == types
    assert set(vars(model)) == set(attrs)
    assert not any(hasattr(m, "_memopt_model") for m in model.modules())


def _entries(cache_dir):
    if not pathlib.Path(cache_dir).exists():
        return []
    return sorted(p.name for p in pathlib.Path(cache_dir).iterdir())


def _one_line_error(excinfo):
    text = str(excinfo.value)
    assert "\n" not in text, text
    assert "Traceback" not in text and "C++" not in text and \
        "frame #" not in text, text
    return text


CASES = {
    "neither_scriptable_nor_traceable": (
        NeitherScriptNorTrace, lambda: torch.randn(2, 4), {},
        memopt.UnsupportedModelError, "neither scripted"),
    "trace_loses_no_grad": (
        TraceLosesNoGrad, lambda: torch.randn(2, 4), {},
        memopt.UnsupportedModelError, "its trace computes other gradients"),
    "sample_of_wrong_type": (
        SmallNet, lambda: [[1.0, 2.0]], {}, memopt.InputError,
        "sample_input[0] is a list"),
    "sample_numpy": (
        SmallNet, lambda: __import__("numpy").zeros((2, 3, 8, 8)), {},
        memopt.InputError, "expected a tensor"),
    "sample_of_wrong_rank": (
        SmallNet, lambda: torch.randn(3, 8), {}, memopt.InputShapeError,
        "conv2d"),
    "infeasible_budget": (
        SmallNet, lambda: torch.randn(2, 3, 8, 8), {"budget": 1},
        memopt.InfeasibleBudgetError, ""),
    "unknown_preference": (
        SmallNet, lambda: torch.randn(2, 3, 8, 8), {"prefer": "fast"},
        memopt.InputError, "unknown prefer"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_and_modifies_nothing(case, tmp_path):
    cls, sample, options, error, expected = CASES[case]
    torch.manual_seed(0)
    model = cls().train()
    snap = _snapshot(model)
    cache = tmp_path / "cache"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error) as excinfo:
            memopt.wrap(model, sample(), cache_dir=cache, verbose=False,
                        **options)
    text = _one_line_error(excinfo)
    assert isinstance(excinfo.value, memopt.MemoptError)
    assert expected in text, text
    _assert_unmodified(model, snap)
    assert [e for e in _entries(cache) if not e.startswith(".")] == []
    assert [e for e in _entries(cache) if e.startswith(".")] == [], \
        "a compile's work directory was left behind"
    if case == "sample_of_wrong_rank":
        # the compiler's message, with where it failed
        assert isinstance(excinfo.value, memopt.InputError)
        assert excinfo.value.diagnostic, text
        assert excinfo.value.module_path == "conv", text
        assert excinfo.value.source and ".py:" in excinfo.value.source
    if case in ("neither_scriptable_nor_traceable", "trace_loses_no_grad"):
        assert excinfo.value.source and "test_wrap.py:" in excinfo.value.source
    if case == "infeasible_budget":
        assert "budget" in text.lower()


def test_damaged_cache_entry_is_recompiled(tmp_path):
    torch.manual_seed(0)
    model = SmallNet().train()
    x = torch.randn(2, 3, 8, 8)
    cache = tmp_path / "cache"
    memopt.wrap(model, x, cache_dir=cache, verbose=False)
    (entry,) = [cache / e for e in _entries(cache)]
    pt = entry / "model.memopt.pt"
    data = bytearray(pt.read_bytes())
    data[len(data) // 2] ^= 0xFF
    pt.write_bytes(bytes(data))
    snap = _snapshot(model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wrapped = memopt.wrap(model, x, cache_dir=cache, verbose=False)
    cache_warnings = [w for w in caught if issubclass(w.category,
                                                     memopt.CacheWarning)]
    assert len(cache_warnings) == 1, [str(w.message) for w in caught]
    message = str(cache_warnings[0].message)
    assert "\n" not in message and "damaged" in message, message
    _assert_unmodified(model, snap)
    plan = next(iter(wrapped._memopt_plans.values()))
    assert not plan.cache_hit
    # The entry is whole again and the plan trains like the model.
    assert lookup(cache, entry.name) is not None
    eager = copy.deepcopy(model)
    outs = []
    for m in (eager, wrapped):
        torch.manual_seed(1)
        outs.append(m(x))
        outs[-1].sum().backward()
    assert torch.equal(outs[0], outs[1])
    assert all(torch.equal(a.grad, b.grad) for a, b in
               zip(eager.parameters(), model.parameters()))
    # meta.json garbage: also recompiled, never loaded
    (entry / "meta.json").write_text("{not json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        memopt.wrap(SmallNet().train(), x, cache_dir=cache, verbose=False)
    assert any("damaged" in str(w.message) for w in caught)


def _key(model, sample, prefer="balanced", budget=None):
    """The cache key wrap would use (without compiling)."""
    signatures = collect_signatures(model, sample, None)
    options = Options(budget=budget_text(budget), prefer=prefer, device="cpu",
                      checkpoint=None, no_checkpoint=None, assume_binary=None)
    compiler = Compiler(model, signatures, options, None, False)
    return make_key(compiler.key_parts(flags_of(model)))


def test_key_covers_code_options_and_flags(tmp_path):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8, 8)
    cache = tmp_path / "cache"
    memopt.wrap(SmallNet().train(), x, cache_dir=cache, verbose=False)
    (entry,) = _entries(cache)
    # same code and shapes, other weights: the same entry, no compile
    wrapped = memopt.wrap(SmallNet().train(), x, cache_dir=cache,
                          verbose=False)
    assert _entries(cache) == [entry]
    assert next(iter(wrapped._memopt_plans.values())).cache_hit
    assert _key(SmallNet().train(), x) == entry
    # anything the plan depends on: another key
    other = SmallNet().train()
    other.drop.p = 0.5
    frozen = SmallNet().train()
    frozen.fc.weight.requires_grad_(False)
    partly_eval = SmallNet().train()
    partly_eval.bn.eval()

    class Subclass(SmallNet):  # other code
        def forward(self, x):
            return super().forward(x) * 2
    keys = {
        "prefer": _key(SmallNet().train(), x, prefer="memory"),
        "budget": _key(SmallNet().train(), x, budget="50%"),
        "attribute": _key(other, x),
        "requires_grad": _key(frozen, x),
        "eval": _key(SmallNet().eval(), x),
        "partly eval": _key(partly_eval, x),
        "shape": _key(SmallNet().train(), torch.randn(4, 3, 8, 8)),
        "dtype": _key(SmallNet().double().train(), x.double()),
        "code": _key(Subclass().train(), x),
    }
    assert entry not in keys.values()
    assert len(set(keys.values())) == len(keys), keys


def test_one_compile_per_plan(tmp_path, monkeypatch):
    """Each plan is ONE memopt-compile run (its --report with --timeline
    holds everything the summary shows); a cache hit runs none; an entry
    of an older cache format is not used."""
    runs = []
    popen = subprocess.Popen

    def counting(command, *args, **kwargs):
        if pathlib.Path(command[0]).name == "memopt-compile":
            runs.append(list(command))
        return popen(command, *args, **kwargs)
    monkeypatch.setattr(subprocess, "Popen", counting)
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8, 8)
    cache = tmp_path / "cache"
    monkeypatch.setattr("memopt.cache.FORMAT", FORMAT - 1)
    memopt.wrap(SmallNet().train(), x, cache_dir=cache, verbose=False)
    monkeypatch.setattr("memopt.cache.FORMAT", FORMAT)
    assert len(runs) == 1
    model = SmallNet().train()
    wrapped = memopt.wrap(model, x, cache_dir=cache, verbose=False)
    assert len(runs) == 2, "an entry of the older format was used"
    assert not next(iter(wrapped._memopt_plans.values())).cache_hit
    command = runs[-1]
    assert "--timeline" in command and "--report" in command
    assert "--analyze-only" not in command
    memopt.wrap(SmallNet().train(), x, cache_dir=cache, verbose=False)
    assert len(runs) == 2, "a cache hit ran memopt-compile"
    wrapped.eval()
    wrapped(x)  # autograd on, eval flags: a second plan, one more run
    assert len(runs) == 3
    with torch.no_grad():
        wrapped(x)
    memopt.summary(wrapped).timelines()
    assert len(runs) == 3
    entries = _entries(cache)
    assert len(entries) == 3  # the older format's, train mode, eval mode
    for entry in entries:
        assert sorted(p.name for p in (cache / entry).iterdir()) == [
            "meta.json", "model.memopt.pt", "report.json"]


def test_no_grad_runs_eager_and_autograd_runs_the_plan(tmp_path):
    torch.manual_seed(0)
    model = SmallNet().train()
    x = torch.randn(2, 3, 8, 8)
    calls = []
    model.register_forward_hook(lambda *a: calls.append(1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wrapped = memopt.wrap(model, x, cache_dir=tmp_path, verbose=False)
    # scripted without the hook (a lambda), and told so
    assert [str(w.message) for w in caught
            if issubclass(w.category, memopt.MemoptWarning)] == [
        "memopt.wrap: the hooks registered on <root> do not run in the "
        "compiled forward (only under torch.no_grad(), where the model's own "
        "forward runs); hooks on the wrapped module do"]
    wrapped(x)
    assert calls == [], "autograd on: the compiled plan runs, not the model"
    with torch.no_grad():
        wrapped(x)
    with torch.inference_mode():
        wrapped(x)
    assert calls == [1, 1], "autograd off: the model's own forward runs"
    # eval with autograd on: a second plan, compiled on first use, kept
    wrapped.eval()
    assert not model.training and not model.bn.training
    wrapped(x)
    plans = [p for p in wrapped._memopt_plans.values()
             if isinstance(p, Plan)]
    assert len(plans) == 2 and calls == [1, 1]
    wrapped.train()
    wrapped(x)
    assert len(wrapped._memopt_plans) == 2


def test_changed_model_gets_a_new_plan(tmp_path):
    """A plain attribute TorchScript folds into the code (dropout's p), the
    dtype, a replaced submodule: the next call runs a plan for the model as
    it is, like eager."""
    torch.manual_seed(0)
    model = SmallNet().train()
    x = torch.randn(2, 3, 8, 8)
    wrapped = memopt.wrap(model, x, cache_dir=tmp_path, verbose=False)
    first = next(iter(wrapped._memopt_plans.values()))

    def same_as_eager(inputs):
        eager = copy.deepcopy(model)
        outs = []
        for m in (eager, wrapped):
            torch.manual_seed(1)
            outs.append(m(inputs))
        return torch.equal(*outs)
    model.drop.p = 0.6
    assert same_as_eager(x)
    assert next(iter(wrapped._memopt_plans.values())) is not first
    wrapped.double()
    assert same_as_eager(x.double())
    model.fc = nn.Linear(8, 3).double()
    out = wrapped(x.double())
    assert out.shape == (2, 3) and same_as_eager(x.double())
    plan = next(iter(wrapped._memopt_plans.values()))
    assert plan.module.fc.weight is model.fc.weight


def test_fallback_warns_once(tmp_path, monkeypatch):
    torch.manual_seed(0)
    model = SmallNet().train()
    x = torch.randn(2, 3, 8, 8)
    wrapped = memopt.wrap(model, x, cache_dir=tmp_path, verbose=False)

    def refuse(flags):
        raise memopt.CompileError("memopt-compile failed on SmallNet: no")
    monkeypatch.setattr(wrapped._memopt_compiler, "plan", refuse)
    calls = []
    model.register_forward_hook(lambda *a: calls.append(1))
    wrapped.eval()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wrapped(x)
        wrapped(x)
    assert calls == [1, 1]
    relevant = [w for w in caught if issubclass(w.category, memopt.MemoptWarning)]
    assert len(relevant) == 1
    assert "memory is not optimized" in str(relevant[0].message)
    assert "\n" not in str(relevant[0].message)


def test_traced_fallback_warns_why(tmp_path):
    class Unscriptable(SmallNet):
        def forward(self, x):
            y = torch.relu(self.bn(self.conv(x)))
            scale = (lambda t: t * 2.0)  # a lambda: TorchScript has none
            return scale(self.fc(self.drop(y.mean(dim=[2, 3]))))
    torch.manual_seed(0)
    model = Unscriptable().train()
    snap = _snapshot(model)
    x = torch.randn(2, 3, 8, 8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wrapped = memopt.wrap(model, x, cache_dir=tmp_path, verbose=False)
    messages = [str(w.message) for w in caught
                if issubclass(w.category, memopt.MemoptWarning)]
    assert len(messages) == 1 and "traced" in messages[0] and \
        "control flow" in messages[0], messages
    _assert_unmodified(model, snap)  # tracing ran forward: state restored
    eager = copy.deepcopy(model)
    for mode in (True, False):  # eval with autograd on: traced again
        outs = []
        for m in (eager, wrapped):
            m.train(mode)
            torch.manual_seed(1)
            outs.append(m(x))
        assert torch.equal(*outs), f"training={mode}"
    assert len(wrapped._memopt_plans) == 2
    assert wrapped._memopt_compiler.how == "trace"


def test_fx_graph_module_and_kwargs(tmp_path):
    torch.manual_seed(0)
    gm = torch.fx.symbolic_trace(SmallNet().train())
    x = torch.randn(2, 3, 8, 8)
    wrapped = memopt.wrap(gm, {"x": x}, cache_dir=tmp_path, verbose=False)
    eager = copy.deepcopy(gm)
    outs = []
    for m in (eager, wrapped):
        torch.manual_seed(1)
        outs.append(m(x=x))
    assert torch.equal(*outs)


def test_several_sample_inputs_compile_one_plan_each(tmp_path):
    """A list of samples and recorded signatures: one plan per shape, most
    frequent first; other shapes run the generic fallback."""
    from memopt.recorder import SignatureRecorder
    torch.manual_seed(0)
    model = SmallNet().train()
    samples = [torch.randn(2, 3, 8, 8), torch.randn(4, 3, 8, 8)]
    recorder = SignatureRecorder(model)
    for _ in range(3):
        recorder.record(torch.randn(6, 3, 8, 8))
    wrapped = memopt.wrap(model, samples, specs=recorder, cache_dir=tmp_path,
                          verbose=False)
    s = memopt.summary(wrapped)
    assert sorted(b["signature"] for b in s.signatures) == [
        "x:2x3x8x8", "x:4x3x8x8", "x:6x3x8x8"]
    assert s.signature == "x:6x3x8x8"  # the most frequent
    eager = copy.deepcopy(model)
    for x in samples + [torch.randn(6, 3, 8, 8), torch.randn(3, 3, 8, 8)]:
        outs = []
        for m in (eager, wrapped):
            torch.manual_seed(1)
            outs.append(m(x))
        assert torch.equal(*outs)


class ReassignsBuffer(nn.Module):
    """forward reassigns a buffer (prim::SetAttr in the compiled code)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls = self.calls + 1
        return self.lin(x) * self.calls


def test_reassigned_buffer_follows_eager(tmp_path):
    torch.manual_seed(0)
    model = ReassignsBuffer()
    eager = copy.deepcopy(model)
    x = torch.randn(2, 4)
    wrapped = memopt.wrap(model, x, cache_dir=tmp_path, verbose=False)
    plan = next(iter(wrapped._memopt_plans.values()))
    for _ in range(3):
        assert torch.equal(eager(x), wrapped(x))
    assert float(model.calls) == float(eager.calls) == 3.0
    assert wrapped.state_dict(keep_vars=True)["calls"] is model.calls
    # the plan kept up with the reassignment: no recompile, still bound
    assert next(iter(wrapped._memopt_plans.values())) is plan and plan.in_sync()


# ---------------------------------------------------------------------------
# Summary and figure
# ---------------------------------------------------------------------------

def _svg_curve_points(svg_path, gid):
    root = ET.parse(svg_path).getroot()
    for element in root.iter():
        if element.get("id") == gid:
            points = 0
            for path in element.iter():
                d = path.get("d")
                if d:
                    points += len(re.findall(r"[ML]", d))
            return points
    return 0


@pytest.mark.parametrize("n,text", [
    (None, "-"), (512, "512 B"), (1024, "1 KiB"), (1536, "1.5 KiB"),
    (1010 * 1024, "1010 KiB"), (1023.9 * 1024, "1024 KiB"),
    (22.5 * (1 << 20), "22.5 MiB"), (1000 * (1 << 30), "1000 GiB"),
    (2 ** 42, "4096 GiB")])
def test_summary_sizes_have_three_digits_and_no_exponent(n, text):
    # wrap's line read "predicted peak 1.01e+03 KiB -> 631 KiB" for a
    # weight-standardized conv net of 1010 KiB.
    from memopt.plan_summary import format_bytes
    assert format_bytes(n) == text


def test_summary_and_timeline_figure(tmp_path):
    from memopt import zoo
    model, shapes = zoo.build("spiking_vgg", "small")
    x = measure.make_inputs(shapes)
    wrapped = memopt.wrap(model, tuple(x), prefer="memory",
                          cache_dir=tmp_path / "cache", verbose=False)
    s = memopt.summary(wrapped)
    report = s.report
    assert s.baseline_peak_bytes == report["baseline"]["predicted_peak_bytes"]
    assert s.planned_peak_bytes == report["planned"]["predicted_peak_bytes"]
    assert 0 < s.planned_peak_bytes < s.baseline_peak_bytes
    assert s.regions and all(r.reason for r in s.regions)
    assert s.recompute_overhead is not None
    assert s.recommendation
    assert s.recommendation == report["recommendation"]
    assert s.pytorch_version == torch.__version__
    text = str(s)
    assert "by module:" in text and s.recommendation in text
    assert s.regions[0].label in text
    # grouped: fewer lines than regions + packed tensors
    assert len(text.splitlines()) < 12 + len(s.regions) + len(s.compressed)
    baseline, planned = s.timelines()
    assert baseline and planned
    for entries, block in ((baseline, "baseline"), (planned, "planned")):
        assert [(e.op, e.module_path, e.phase, e.live_bytes)
                for e in entries] == [
            (p["op"], p["module_path"], p["phase"], p["live_bytes"])
            for p in report[block]["timeline"]]
    assert any(e.phase == "recompute" for e in planned)
    assert max(e.live_bytes for e in baseline) == s.baseline_peak_bytes
    assert max(e.live_bytes for e in planned) == s.planned_peak_bytes
    svg = s.plot(tmp_path / "timeline.svg")
    assert _svg_curve_points(svg, "memopt-baseline") >= len(baseline)
    assert _svg_curve_points(svg, "memopt-planned") >= len(planned)
    content = pathlib.Path(svg).read_text()
    assert "baseline step" in content and "planned step" in content
    assert "memopt-region" in content
    png = s.plot(tmp_path / "timeline.png")
    assert pathlib.Path(png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------------------
# Cache hit in a new process; install
# ---------------------------------------------------------------------------

_CACHE_SCRIPT = r"""
import sys, time, json, torch
from memopt import zoo, measure
import memopt
model, shapes = zoo.build("transformer_encoder", "small")
x = measure.make_inputs(shapes)
t0 = time.perf_counter()
wrapped = memopt.wrap(model, tuple(x), cache_dir=sys.argv[1], verbose=False)
seconds = time.perf_counter() - t0
plan = next(iter(wrapped._memopt_plans.values()))
print(json.dumps({"seconds": seconds, "hit": plan.cache_hit}))
"""


def test_second_wrap_in_new_process_hits_cache(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", _CACHE_SCRIPT,
                              str(tmp_path / "cache")], env=env,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert not runs[0]["hit"] and runs[1]["hit"], runs
    # bench/wrap_cache.py measures the <= 0.5 s; here: clearly no compile
    assert runs[1]["seconds"] < runs[0]["seconds"], runs


def _clean_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MEMOPT_") and k != "PYTHONPATH"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


_FIND_SCRIPT = ("import memopt, memopt.locate as l, memopt.wrapping as w, torch; "
                "print(l.compiler_path()); print(l.runtime_library_path()); "
                "w.load_runtime(); "
                "print(torch.ops.memopt.memory_stats())")


def test_cmake_install_finds_its_own_tools(tmp_path):
    build = pathlib.Path(os.environ["MEMOPT_BUILD_DIR"])
    install_script = build / "cmake_install.cmake"
    if "_paths.py" not in install_script.read_text():
        pytest.fail(f"{build} was configured before the install rules: "
                    f"re-run cmake")
    prefix = tmp_path / "prefix"
    out = subprocess.run(["cmake", "--install", str(build), "--prefix",
                          str(prefix), "--component", "memopt"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    (package,) = list(prefix.glob("lib/python3*/dist-packages/memopt"))
    env = _clean_env()
    env["PYTHONPATH"] = str(package.parent)
    run = subprocess.run([sys.executable, "-c", _FIND_SCRIPT], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    compiler, runtime = run.stdout.splitlines()[:2]
    assert pathlib.Path(compiler).resolve() == (prefix / "bin" / "memopt-compile").resolve()
    assert pathlib.Path(runtime).resolve() == (prefix / "lib" / "libmemopt_runtime.so").resolve()


def test_pip_install_bundles_tools(tmp_path):
    target = tmp_path / "site"
    env = _clean_env()
    env["MEMOPT_BUILD_DIR"] = os.environ["MEMOPT_BUILD_DIR"]
    out = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-build-isolation",
         "--no-deps", "--no-index", "--quiet", "--target", str(target),
         str(REPO)], capture_output=True, text=True, env=env, timeout=600,
        cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    env = _clean_env()
    env["PYTHONPATH"] = str(target)
    run = subprocess.run([sys.executable, "-c", _FIND_SCRIPT], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    compiler, runtime = run.stdout.splitlines()[:2]
    assert pathlib.Path(compiler).is_relative_to(target)
    assert pathlib.Path(runtime).is_relative_to(target)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "worker":
        print(json.dumps(worker(json.loads(sys.argv[2]))))
        sys.exit(0)
    print("usage: test_wrap.py worker '<json>'", file=sys.stderr)
    sys.exit(2)
