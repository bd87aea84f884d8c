#!/usr/bin/python3
"""Calibrates the cost model (lib/Analysis/CostCoefficients.def) on this machine.

For representative shapes of each operator class it measures the forward time
of the PyTorch op (median of repeated runs), asks memopt-opt's cost model for
the op's FLOPs and bytes (-memopt-test-cost-model, so the C++ formulas are the
ones fitted), fits per class `seconds = overhead + a * flops + b * bytes`
(non-negative least squares) and reports the median and worst relative error
of the fitted model over all measured ops.

    /usr/bin/python3 bench/cost_model_calibration.py --build build \
        --write lib/Analysis/CostCoefficients.def

The file --write makes is also what `memopt-compile --cost-model FILE`
(`memopt.wrap(..., cost_model=FILE)`, `memopt_add_model(... COST_MODEL
FILE)`) reads: run this on the machine that will train and compile with
its fit there (docs/analyses.md, "A machine's own fit").

A shared machine's speed drifts between runs by more than the classes
differ: `--runs N` measures every case N times, in turn, and fits the
median. `--update CLASS:REFERENCE --write FILE` changes only CLASS's line
of an existing FILE: the REFERENCE class's coefficients there times the
ratio this run fits between the two (added as a class the file lacked), so
that a new class joins a calibration made on another day consistently with
it, leaving every other class as it was:

    /usr/bin/python3 bench/cost_model_calibration.py --runs 5 \
        --update Gemm:Matmul --write lib/Analysis/CostCoefficients.def
"""
import argparse
import re
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

DT = {torch.float32: "f32", torch.bool: "i1", torch.int64: "i64"}


def ty(t):
    return "tensor<" + "".join(f"{d}x" for d in t.shape) + f"{DT[t.dtype]}>"


def mlir_const(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(mlir_const(x) for x in v) + "]"
    if v is None:
        return "#memopt.none"
    if isinstance(v, float):
        return f"{v:e}"
    if isinstance(v, str):
        return f'"{v}"'
    return str(v)


def case(cls, name, fn, args):
    """args: tensors (operands) and constants in schema order."""
    return dict(cls=cls, name=name, fn=fn, args=args)


def cases():
    r = torch.randn
    out = []
    for n, c, h, k, ks in [(8, 16, 32, 32, 3), (8, 32, 16, 64, 3),
                           (4, 64, 16, 64, 1), (16, 3, 32, 16, 3),
                           (8, 64, 8, 128, 3), (2, 128, 8, 128, 3)]:
        x, w, b = r(n, c, h, h), r(k, c, ks, ks), r(k)
        p = ks // 2
        out.append(case("Conv", "aten::conv2d", lambda x, w, b, *_, p=p: F.conv2d(
            x, w, b, 1, p), [x, w, b, [1, 1], [p, p], [1, 1], 1]))
    for m, kk, nn in [(256, 256, 256), (1024, 512, 128), (64, 1024, 1024),
                      (2048, 128, 512), (128, 64, 64)]:
        out.append(case("Matmul", "aten::linear", F.linear,
                        [r(m, kk), r(nn, kk), r(nn)]))
        # A linear layer's backward: grad_input = grad @ W and grad_weight =
        # grad^T @ input, products of the tensors as stored (the forward
        # multiplies by W transposed, slower with some BLAS builds).
        g, x, w = r(m, nn), r(m, kk), r(nn, kk)
        out.append(case("Gemm", "aten::mm", torch.mm, [g, w]))
        out.append(case("Gemm", "aten::mm", torch.mm, [g.t(), x]))
    for bsz, m, kk, nn in [(16, 64, 32, 64), (8, 128, 64, 128),
                           (32, 65, 32, 65)]:
        out.append(case("BatchedMatmul", "aten::bmm", torch.bmm,
                        [r(bsz, m, kk), r(bsz, kk, nn)]))
    for numel in [10_000, 200_000, 2_000_000]:
        x, y = r(numel // 100, 100), r(numel // 100, 100)
        out += [case("Elementwise", "aten::relu", torch.relu, [x]),
                case("Elementwise", "aten::sigmoid", torch.sigmoid, [x]),
                case("Elementwise", "aten::gelu", lambda x, a: F.gelu(x), [x, "none"]),
                case("Elementwise", "aten::add", lambda x, y, a: x + y, [x, y, 1]),
                case("Elementwise", "aten::mul", torch.mul, [x, y]),
                case("Softmax", "aten::softmax", lambda x, d, t: x.softmax(d),
                     [x, -1, None]),
                case("Reduction", "aten::sum", lambda x, t: x.sum(), [x, None])]
    for n, c, h in [(8, 16, 32), (8, 64, 16), (32, 64, 32)]:
        x = r(n, c, h, h)
        out += [
            case("BatchNorm", "aten::batch_norm",
                 lambda x, w, b, m, v, *_: F.batch_norm(x, m, v, w, b, True),
                 [x, r(c), r(c), torch.zeros(c), torch.ones(c), True, 0.1,
                  1e-5, True]),
            case("MaxPooling", "aten::max_pool2d",
                 lambda x, *_: F.max_pool2d(x, 2, 2),
                 [x, [2, 2], [2, 2], [0, 0], [1, 1], False]),
            case("Pooling", "aten::adaptive_avg_pool2d",
                 lambda x, s: F.adaptive_avg_pool2d(x, 1), [x, [1, 1]]),
            case("Copy", "aten::cat", lambda l, d: torch.cat(l, d),
                 [[x, x], 1])]
    for s, d in [(64, 256), (197, 384), (512, 512)]:
        x = r(8, s, d)
        out.append(case("Normalization", "aten::layer_norm",
                        lambda x, n, w, b, e, c: F.layer_norm(x, n, w, b, e),
                        [x, [d], r(d), r(d), 1e-5, True]))
    return out


def measure(c, repeats=7):
    args = c["args"]
    with torch.no_grad():
        c["fn"](*args)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            c["fn"](*args)
            times.append(time.perf_counter() - t0)
    return float(np.median(times))


def to_mlir(cases_):
    lines = []
    for i, c in enumerate(cases_):
        operands, types, refs, pre = [], [], [], []
        for a in c["args"]:
            if isinstance(a, torch.Tensor):
                refs.append(f"#memopt.arg<{len(operands)}>")
                operands.append(f"%a{i}_{len(operands)}")
                types.append(ty(a))
            elif isinstance(a, list) and a and isinstance(a[0], torch.Tensor):
                names = []
                for t in a:
                    names.append(f"%a{i}_{len(operands)}")
                    operands.append(names[-1])
                    types.append(ty(t))
                lt = f"!memopt.list<{ty(a[0])}>"
                pre.append(f"  %l{i} = memopt.op \"prim::ListConstruct\"("
                           f"{', '.join(names)}) [{', '.join(f'#memopt.arg<{k}>' for k in range(len(names)))}]"
                           f" : ({', '.join(ty(t) for t in a)}) -> {lt}")
                refs.append("#memopt.arg<0>")
            else:
                refs.append(mlir_const(a))
        with torch.no_grad():
            res = c["fn"](*c["args"])
        args_sig = ", ".join(f"{o}: {t}" for o, t in zip(operands, types))
        lines.append(f"func.func @c{i}({args_sig}) -> {ty(res)} {{")
        lines += pre
        if pre:
            ops, optys = f"%l{i}", f"!memopt.list<{types[0]}>"
        else:
            ops, optys = ", ".join(operands), ", ".join(types)
        lines.append(f"  %r = memopt.op \"{c['name']}\"({ops}) [{', '.join(refs)}]"
                     f" : ({optys}) -> {ty(res)}")
        lines.append(f"  return %r : {ty(res)}\n}}")
    return "\n".join(lines)


def model_costs(build, cases_):
    out = subprocess.run([f"{build}/bin/memopt-opt", "-memopt-test-cost-model",
                          "-o", "/dev/null"], input=to_mlir(cases_),
                         capture_output=True, text=True, check=True).stdout
    rows = re.findall(r"class (\w+) flops (\d+) bytes (\d+)", out)
    # One measured op per function; prim::ListConstruct is a free View.
    # The class is the C++ one (a 1x1 convolution without oneDNN is a Matmul).
    return [(float(f), float(b), cls) for cls, f, b in rows if cls != "View"]


def nnls(a, y):
    """Non-negative least squares on relative error (rows scaled by 1/y)."""
    from itertools import combinations
    a, y = a / y[:, None], np.ones_like(y)
    best = (np.inf, np.zeros(a.shape[1]))
    for k in range(1, a.shape[1] + 1):
        for cols in combinations(range(a.shape[1]), k):
            x, *_ = np.linalg.lstsq(a[:, cols], y, rcond=None)
            if (x < 0).any():
                continue
            full = np.zeros(a.shape[1])
            full[list(cols)] = x
            err = np.sum((a @ full - y) ** 2)
            if err < best[0]:
                best = (err, full)
    return best[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--write", help="write CostCoefficients.def here")
    parser.add_argument("--runs", type=int, default=1,
                        help="measure every case this many times, in turn, "
                        "and fit the median")
    parser.add_argument("--update", metavar="CLASS:REFERENCE",
                        help="with --write: change only CLASS's line of the "
                        "existing file, as REFERENCE's there times the "
                        "ratio fitted by this run")
    opts = parser.parse_args()
    if opts.update and (not opts.write or opts.update.count(":") != 1):
        parser.error("--update takes CLASS:REFERENCE and needs --write")
    torch.manual_seed(0)
    torch.set_num_threads(opts.threads)
    cs = cases()
    costs = model_costs(opts.build, cs)
    assert len(costs) == len(cs), (len(costs), len(cs))
    runs = [[measure(c) for c in cs] for _ in range(max(1, opts.runs))]
    times = np.median(np.array(runs), axis=0)
    for c, cost in zip(cs, costs):
        # Gemm is the class of a linear layer's backward products: fitted
        # on aten::mm's FLOPs, used by CostModel::getBackwardSeconds.
        if c["cls"] != "Gemm":
            c["cls"] = cost[2]
    coeffs, errors = {}, []
    for cls in sorted({c["cls"] for c in cs}):
        idx = [i for i, c in enumerate(cs) if c["cls"] == cls]
        a = np.array([[costs[i][0], costs[i][1], 1.0] for i in idx])
        x = nnls(a, times[idx])
        coeffs[cls] = x
        for i, pred in zip(idx, a @ x):
            errors.append((abs(pred - times[i]) / times[i], cs[i]["name"],
                           costs[i], times[i], pred))
    rel = np.array([e[0] for e in errors])
    print(f"{'op':28s} {'flops':>12s} {'bytes':>12s} {'measured':>10s} {'model':>10s} err")
    for e in errors:
        print(f"{e[1]:28s} {e[2][0]:12.0f} {e[2][1]:12.0f} {e[3]*1e3:9.3f}ms "
              f"{e[4]*1e3:9.3f}ms {e[0]*100:5.1f}%")
    print(f"ops: {len(rel)}  median relative error: {np.median(rel)*100:.1f}%  "
          f"worst: {rel.max()*100:.1f}% (threads={opts.threads})")
    if opts.update:
        update_class(opts.write, *opts.update.split(":"), coeffs, opts.runs)
    elif opts.write:
        with open(opts.write, "w") as f:
            f.write("// Generated by: /usr/bin/python3 bench/cost_model_calibration.py"
                    f" --threads {opts.threads} --write {opts.write}\n"
                    f"// on this machine; median relative error "
                    f"{np.median(rel)*100:.1f}%, worst {rel.max()*100:.1f}%.\n"
                    "// MEMOPT_COST_CLASS(class, secondsPerFlop, secondsPerByte,"
                    " overheadSeconds)\n")
            # The order of CostClass (include/memopt/Analysis/CostModel.h).
            order = ["Conv", "Matmul", "Elementwise", "Reduction",
                     "Normalization", "Pooling", "Copy", "View", "Unknown",
                     "MaxPooling", "Softmax", "BatchNorm", "BatchedMatmul",
                     "Gemm"]
            for cls in order:
                x = coeffs.get(cls)
                if cls == "View":
                    x = [0.0, 0.0, 1e-6]
                if cls == "Unknown":
                    x = coeffs["Elementwise"]
                f.write(f"MEMOPT_COST_CLASS({cls}, {x[0]:.4e}, {x[1]:.4e}, "
                        f"{x[2]:.4e})\n")


LINE = re.compile(r"MEMOPT_COST_CLASS\((\w+), ([^,]+), ([^,]+), ([^)]+)\)")


def update_class(path, cls, reference, coeffs, runs):
    """Rewrites `cls`'s line of the .def at `path` as `reference`'s there
    scaled by this run's fitted ratio (per FLOP, per byte and overhead; a
    term the reference lacks is taken as fitted)."""
    if cls not in coeffs or reference not in coeffs:
        sys.exit(f"--update: this run fits no {cls if cls not in coeffs else reference}")
    lines = open(path).read().splitlines()
    known = {m.group(1): [float(m.group(k)) for k in (2, 3, 4)]
             for m in map(LINE.match, lines) if m}
    if reference not in known:
        sys.exit(f"--update: {path} has no {reference} line")
    new = []
    for ref, mine, theirs in zip(known[reference], coeffs[cls],
                                 coeffs[reference]):
        new.append(ref * mine / theirs if theirs > 0 and ref > 0 else mine)
    text = (f"MEMOPT_COST_CLASS({cls}, {new[0]:.4e}, {new[1]:.4e}, "
            f"{new[2]:.4e})")
    note = (f"// {cls}: {reference}'s line times this machine's ratio of the "
            f"two (bench/cost_model_calibration.py --runs {runs} --update "
            f"{cls}:{reference}).")
    out = [l for l in lines if not l.startswith(f"// {cls}: ")]
    at = next((i for i, l in enumerate(out)
               if (m := LINE.match(l)) and m.group(1) == cls), None)
    if at is None:
        out += [note, text]
    else:
        out[at] = text
        out.insert(at, note)
    open(path, "w").write("\n".join(out) + "\n")
    print(f"{path}: {text}")


if __name__ == "__main__":
    main()
