#!/usr/bin/python3
"""Derives what autograd saves for backward, per operator, from PyTorch.

For every spec of saved_tensor_ops.py and every choice of which tensor
arguments require grad, this builds the operator on small CPU tensors, walks
the autograd nodes it created (`grad_fn`, `next_functions`) and reads their
`_saved_*` tensors. Each saved tensor is classified by the storage it keeps
alive: an argument (`a1`), a result (`r0`) or a new allocation
(`new:<size rule>:<dtype>`, e.g. dropout's noise or batch-norm's statistics).
It also records whether each result aliases an argument and whether each
input gradient is a new buffer or passes the output gradient through, and,
with `--runtime` (memopt's counting allocator), how much the operator's
backward allocates at its highest when that is more than the new gradients
(`4xlike.r0`: four result-sized buffers, as a division's does:
`-grad * self / (other * other)`).

    /usr/bin/python3 scripts/gen_saved_tensor_table.py \
        -o lib/Analysis/SavedTensorTable.def --runtime build/lib/libmemopt_runtime.so

writes the table the C++ training-memory model compiles in; `--print` gives
the same rows as `memopt-opt -memopt-test-memory-model=dump-table`.
"""
import argparse
import itertools
import math
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from saved_tensor_ops import SPECS, T  # noqa: E402

DTYPES = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
          torch.bfloat16: "bf16", torch.int64: "i64", torch.int32: "i32",
          torch.bool: "i1", torch.uint8: "ui8", torch.int8: "i8",
          torch.complex64: "c64", torch.complex128: "c128"}
# Ops whose result aliases its input only for contiguous inputs / same dtypes.
CONTIG_ALIAS = {"aten::reshape", "aten::contiguous", "aten::flatten"}
SAME_ALIAS = {"aten::to", "aten::type_as"}


# memopt's counting allocator (torch.ops.memopt), when --runtime loads it.
ALLOCATOR = None


def use_runtime(path):
    """Loads libmemopt_runtime at `path` and measures backward allocations
    with its counting allocator from now on."""
    global ALLOCATOR
    torch.ops.load_library(str(path))
    torch.ops.memopt.enable_memory_stats()
    ALLOCATOR = torch.ops.memopt


def storage_key(t):
    return t.storage().data_ptr() if t.numel() else None


def tensors_of(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for t in value if isinstance(t, torch.Tensor)]
    return []


def materialize(spec_args, grad_positions, noncontig):
    """Returns (args for the call, leaves that require grad, pattern).
    `noncontig`: make argument 0 non-contiguous with its last two dims
    swapped in memory (True), or argument K with its first two (("first",
    K), as transpose(0, 1) leaves it)."""
    args, leaves, pattern = [], [], ""
    for pos, a in enumerate(spec_args):
        elems = a if isinstance(a, list) and a and isinstance(a[0], T) else None
        specs = elems if elems else ([a] if isinstance(a, T) else None)
        if specs is None:
            args.append(a)
            pattern += "-"
            continue
        grad = pos in grad_positions
        made = []
        for s in specs:
            if s.values is not None:
                t = s.values()
            elif s.dtype == torch.bool:
                t = torch.rand(*s.shape) > 0.5
            elif not (s.dtype.is_floating_point or s.dtype.is_complex):
                # indices into >= 4 rows
                t = torch.randint(0, 4, s.shape, dtype=s.dtype)
            else:
                t = torch.randn(*s.shape, dtype=s.dtype)
            if isinstance(noncontig, tuple) and pos == noncontig[1] and \
                    t.dim() >= 3:
                t = t.transpose(0, 1).contiguous().transpose(0, 1)
            elif noncontig and pos == 0 and t.dim() >= 2:
                t = t.transpose(-1, -2).contiguous().transpose(-1, -2)
            if grad:
                leaf = t.detach().requires_grad_()
                leaves.append(leaf)
                t = leaf.clone()  # non-leaf: in-place ops are allowed on it
            made.append(t)
        args.append(made if elems else made[0])
        pattern += "g" if grad else "t"
    return args, leaves, pattern.rstrip("-")


def new_nodes(results, inputs):
    """Autograd nodes created by the op: reachable from results, stopping at
    nodes that produced the inputs (recorded before the call)."""
    seen, stack, out = set(), [], []
    for r in results:
        if r.grad_fn is not None:
            stack.append(r.grad_fn)
    while stack:
        node = stack.pop()
        if node is None or node in seen or node in inputs:
            continue
        seen.add(node)
        if type(node).__name__ == "AccumulateGrad":
            continue
        out.append(node)
        stack.extend(n for n, _ in node.next_functions)
    return out


def saved_tensors(node):
    for attr in dir(node):
        if not attr.startswith("_saved_"):
            continue
        try:
            value = getattr(node, attr)
        except RuntimeError:
            continue
        for t in tensors_of(value):
            if t is not None and t.numel():
                yield t


def size_candidates(args, results):
    cands = []
    for k, a in enumerate(args):
        ts = tensors_of(a)
        if ts:
            t = ts[0]
            cands.append((f"like.a{k}", t.numel()))
            if t.dim() >= 2:
                cands.append((f"dim1.a{k}", t.shape[1]))
            if t.dim() >= 1 and t.shape[-1]:
                cands.append((f"rows.a{k}", t.numel() // t.shape[-1]))
            if t.dim() >= 2:
                cands.append((f"dim01.a{k}", t.shape[0] * t.shape[1]))
    for k, r in enumerate(results):
        cands.append((f"like.r{k}", r.numel()))
    cands.append(("one", 1))
    # Attention scores: the query's rows (aK) times the key's (aK+1) length.
    for k in range(len(args) - 1):
        q, key = tensors_of(args[k]), tensors_of(args[k + 1])
        if q and key and q[0].dim() >= 2 and key[0].dim() >= 2:
            cands.append((f"attn.a{k}",
                          q[0].numel() // q[0].shape[-1] * key[0].shape[-2]))
    # Per sample and group (group norm's statistics): dim 0 of a tensor
    # argument times an integer argument. Last, so that it names only what
    # no rule above fits.
    for k, a in enumerate(args):
        ts = tensors_of(a)
        if not ts or ts[0].dim() < 1:
            continue
        for j, n in enumerate(args):
            if isinstance(n, int) and not isinstance(n, bool):
                cands.append((f"dim0byarg{j}.a{k}", ts[0].shape[0] * n))
    return cands


def aten_overload(name, overload):
    """torch.ops.aten's overload for a spec's name (a `[variant]` suffix
    names rows kept apart by a constant argument, e.g. attention's
    dropout), or None where this PyTorch has no such operator."""
    base = name.split("::")[1].split("[")[0]
    try:
        return getattr(getattr(torch.ops.aten, base), overload)
    except (AttributeError, RuntimeError):
        return None


def run_once(name, overload, spec_args, grad_positions, noncontig=False):
    args, leaves, pattern = materialize(spec_args, grad_positions, noncontig)
    inputs = {t.grad_fn for a in args for t in tensors_of(a) if t.grad_fn}
    fn = aten_overload(name, overload)
    arg_keys = {}
    for k, a in enumerate(args):
        for t in tensors_of(a):
            arg_keys.setdefault(storage_key(t), k)
    # TorchScript passes every argument in schema order; Python needs the
    # keyword-only ones by name.
    schema = fn._schema.arguments
    pos = [a for a, s in zip(args, schema) if not s.kwarg_only]
    kw = {s.name: a for a, s in zip(args, schema) if s.kwarg_only}
    first_dtype = next(t.dtype for a in args for t in tensors_of(a))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(*pos, **kw)
    outs = list(out) if isinstance(out, tuple) else [out]
    flat = [tensors_of(o) for o in outs]
    res_keys = {}
    for k, ts in enumerate(flat):
        for t in ts:
            res_keys.setdefault(storage_key(t), k)
    results = []
    for ts in flat:
        ks = {arg_keys.get(storage_key(t)) for t in ts}
        results.append(f"a{ks.pop()}" if len(ks) == 1 and None not in ks
                       else "new")
    saved, sizes = [], {}
    for node in new_nodes([t for ts in flat for t in ts], inputs):
        for t in saved_tensors(node):
            key = storage_key(t)
            if key in res_keys:
                item = f"r{res_keys[key]}"
            elif key in arg_keys:
                item = f"a{arg_keys[key]}"
            else:
                item = f"new#{key}"
                dtype = DTYPES[t.dtype]
                sizes[item] = (t.storage().nbytes() // t.element_size(),
                               "same" if t.dtype == first_dtype else dtype)
            if item not in saved:
                saved.append(item)
    grads = []
    backward = None
    diff = [t for ts in flat for t in ts if t.requires_grad]
    if leaves and diff:
        gos = [torch.randn(t.shape, dtype=t.dtype) for t in diff]
        go_keys = {storage_key(g) for g in gos}
        if ALLOCATOR is not None:
            before = ALLOCATOR.memory_stats()[0]
            ALLOCATOR.reset_peak_memory_stats()
        try:
            got = torch.autograd.grad(diff, leaves, gos, allow_unused=True)
        except RuntimeError:  # not differentiable (heaviside)
            got = [None] * len(leaves)
        if ALLOCATOR is not None:
            # What the backward allocated at its highest, and how much of
            # that the new gradients it returns are.
            high = ALLOCATOR.memory_stats()[1] - before
            fresh = {storage_key(g): g.storage().nbytes() for g in got
                     if g is not None and storage_key(g) not in go_keys}
            single = [t for ts in flat for t in ts]
            backward = (high, sum(fresh.values()),
                        torch.empty(0, dtype=first_dtype).element_size(),
                        single[0].storage().nbytes() if len(outs) == 1 and
                        len(single) == 1 else 0)
        per_arg, i = [], 0
        for k, a in enumerate(spec_args):
            if k in grad_positions:
                n = len(a) if isinstance(a, list) else 1
                per_arg.append(got[i])
                i += n
        # A new gradient seen through a view (linear's weight gradient,
        # the transpose of a product): its base holds the storage too, so
        # autograd cannot add a second gradient into it in place.
        for g in per_arg:
            grads.append("none" if g is None else
                         "pass" if storage_key(g) in go_keys else
                         "view" if g._is_view() else "new")
    else:
        grads = ["none"] * len(grad_positions)
    cands = size_candidates(args, [t for ts in flat for t in ts][:len(outs)])
    return pattern, saved, sizes, results, grads, cands, backward


def derive_spec(name, overload, configs, build):
    """Yields (pattern, saved, results, grads) for one spec, all grad sets."""
    sample = build(configs[0])
    grad_able = [k for k, a in enumerate(sample)
                 if (isinstance(a, T) and a.grad) or
                 (isinstance(a, list) and a and isinstance(a[0], T) and
                  a[0].grad)]
    for n in range(len(grad_able) + 1):
        for gp in itertools.combinations(grad_able, n):
            runs = [run_once(name, overload, build(c), set(gp))
                    for c in configs]
            pattern, _, _, results, grads, _, _ = runs[0]
            # New tensors: one size rule that fits every config.
            saved = []
            for idx, item in enumerate(runs[0][1]):
                if not item.startswith("new#"):
                    saved.append(item)
                    continue
                fits = None
                for run in runs:
                    if len(run[1]) != len(runs[0][1]):
                        raise RuntimeError(f"{name}: saved set depends on shape")
                    numel, _ = run[2][run[1][idx]]
                    ok = {c for c, v in run[5] if v == numel}
                    fits = ok if fits is None else fits & ok
                rule = next((c for c, _ in runs[0][5] if c in fits), None)
                if rule is None:
                    raise RuntimeError(f"{name}: no size rule for {item}")
                saved.append(f"new:{rule}:{runs[0][2][item][1]}")
            if name in CONTIG_ALIAS:
                probe = run_once(name, overload, build(configs[0]), set(gp),
                                 noncontig=True)
                results = [r + "?contig" if r.startswith("a") and p == "new"
                           else r for r, p in zip(results, probe[3])]
            for k, arg in enumerate(sample[:2]):
                if f"a{k}" not in saved or not isinstance(arg, T) or \
                        len(arg.shape) < 3:
                    continue
                # matmul folds a >= 3-d input (either, in a batched
                # product) with reshape: a non-contiguous input is copied,
                # and the copy is saved.
                probe = run_once(name, overload, build(configs[0]), set(gp),
                                 noncontig=("first", k))
                numel = math.prod(arg.shape)
                copies = [o for o in probe[1] if o.startswith("new#") and
                          probe[2][o][0] == numel]
                if f"a{k}" not in probe[1] and len(copies) == 1:
                    saved[saved.index(f"a{k}")] = f"a{k}?fold"
            yield pattern, saved, results, grads, backward_rule(runs)


def _fitted_factor(runs, name, amount, unit):
    """k when, in every config, `amount(run)` is k times `unit(run, value)`
    (value: candidate `name`'s elements) to within 2 % of the backward's
    high, the same k for each (k >= 1); None otherwise, or where `amount`
    returns None (a config the rule does not apply to)."""
    ks = set()
    for run in runs:
        value = dict(run[5]).get(name)
        measured = amount(run, value) if value else None
        if measured is None:
            return None
        one = unit(run, value)
        k = round(measured / one)
        if k < 1 or abs(measured - k * one) > 0.02 * run[6][0]:
            return None
        ks.add(k)
    return ks.pop() if len(ks) == 1 else None


def backward_rule(runs):
    """`<k>x<size rule>` when every config's backward allocates more at its
    highest than its new gradients, k times one size candidate (to within
    2 %: a reduced gradient of a few bytes may be live beside), the same k
    for each; "" otherwise (the memory model's own count is right). The
    unit is what the memory model takes (OpMemoryEffects.cpp): the
    candidate's elements at the first tensor argument's element size, or
    the only result's bytes where those are more (where's boolean
    condition against its float result)."""
    if any(r[6] is None or r[6][0] <= r[6][1] for r in runs):
        return ""
    # Temporaries the size of the largest argument or result: other
    # candidates (channels, rows, a bias) would extrapolate a kernel's
    # workspace wrongly.
    largest = max(v for n, v in runs[0][5] if n.startswith("like."))
    for name, value0 in runs[0][5]:
        if not name.startswith("like.") or value0 != largest:
            continue
        k = _fitted_factor(runs, name, lambda run, value: run[6][0],
                           lambda run, value: max(run[6][2] * value,
                                                  run[6][3]))
        if k is not None:
            return f"{k}x{name}"

    # Else temporaries beside the new gradients that scale with another
    # argument (an embedding bag's backward sorts its indices: four int64
    # buffers of the indices beside the table's gradient), as
    # `+<k>x<size rule>`: k buffers of the candidate at the first tensor
    # argument's element size, above the gradients, for the largest
    # candidate that fits every config.
    def extra(run, value):
        high, fresh = run[6][0], run[6][1]
        # A few bytes (a scalar's buffers) are not worth a rule.
        if value < 2 or high - fresh <= 0.02 * high:
            return None
        return high - fresh

    for name, _ in sorted((c for c in runs[0][5] if c[0].startswith("like.")),
                          key=lambda c: -c[1]):
        k = _fitted_factor(runs, name, extra,
                           lambda run, value: run[6][2] * value)
        if k is not None:
            return f"+{k}x{name}"
    return ""


def merge_backward(a, b):
    """One backward rule for two configs of a row: the one that has one,
    the larger of two on the same size candidate, else none."""
    if not a or not b:
        return a or b
    (ka, ca), (kb, cb) = a.split("x", 1), b.split("x", 1)
    if ca != cb or ka.startswith("+") != kb.startswith("+"):
        return ""
    return a if int(ka) >= int(kb) else b


def merge(rows, key, row):
    old = rows.get(key)
    if old is None or old == row:
        rows[key] = row
        return
    saved = list(old[0]) + [s for s in row[0] if s not in old[0]]
    # `aK?fold` (saved, or a saved copy when folded) covers plain `aK`.
    saved = [s for s in saved if s + "?fold" not in saved]
    results = []
    for a, b in zip(old[1], row[1]):
        if a == b:
            results.append(a)
        elif key[0] in SAME_ALIAS and "new" in (a, b):
            results.append((a if a != "new" else b).split("?")[0] + "?same")
        else:
            results.append("new")
    # A gradient passed through in one config and new in another (a
    # broadcast operand's, reduced to its shape, perhaps seen through a
    # view): "pass", which the memory model takes as new wherever the
    # operand's shape is not the result's. New in one, through a view in
    # another (a reduced gradient reshaped): "new"; "view" is for
    # gradients every config sees through a view (linear's weight's).
    def merged(a, b):
        if a == b:
            return a
        if "pass" in (a, b) and {a, b} <= {"pass", "new", "view"}:
            return "pass"
        return "new"
    grads = [merged(a, b) for a, b in zip(old[2], row[2])]
    rows[key] = (saved, results, grads, merge_backward(old[3], row[3]))


def input_buffer_accumulates_in_place():
    """Whether autograd adds a second gradient of a tensor into the first
    one's buffer (InputBuffer::accumulate reuses a buffer it alone holds)
    or into a new one (PyTorch 1.13: a third tensor while both live).
    Two fresh gradients of `y` meet; the sum is the first one's buffer only
    when added in place (a new one is allocated while both are live, so
    it cannot have either's address)."""
    made = []

    class Fresh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            out = grad * 2
            made.append(out.data_ptr())
            return out

    summed = []
    y = torch.ones(64, requires_grad=True) * 1
    y.register_hook(lambda grad: summed.append(grad.data_ptr()))
    (Fresh.apply(y) + Fresh.apply(y)).sum().backward()
    return len(made) == 2 and summed[0] in made


def torch_facts():
    """What this PyTorch does beyond any one operator: {name: integer}, as
    MEMOPT_TORCH_FACT lines: how autograd sums two gradients of a tensor,
    and the bytes of the CPU generator's state (what a checkpoint region
    that draws random numbers keeps for its recompute)."""
    state = torch.get_rng_state()
    return {"inputBufferAccumulatesInPlace":
            int(input_buffer_accumulates_in_place()),
            "cpuGeneratorStateBytes": state.numel() * state.element_size()}


def derive_table():
    torch.manual_seed(0)
    rows, by_overload = {}, {}
    for name, overload, configs, build in SPECS:
        if aten_overload(name, overload) is None:
            continue  # not in this PyTorch (e.g. attention before 2.0)
        for pattern, saved, results, grads, backward in derive_spec(
                name, overload, configs, build):
            row = (saved, results, grads, backward)
            merge(rows, (name, pattern), row)
            merge(by_overload, (f"{name}[{overload}]", pattern), row)
    # An overload that keeps less than the operator's merged row (max.dim
    # keeps its indices, max() its input and result) gets rows of its own,
    # `op[overload]`, which the memory model looks up first.
    overloads = {}
    for name, overload, _, _ in SPECS:
        overloads.setdefault(name, set()).add(overload)
    for (key, pattern), row in by_overload.items():
        name = key[:key.rfind("[")]
        if len(overloads[name]) > 1 and rows[(name, pattern)] != row:
            rows[(key, pattern)] = row
    return rows


def table_lines(rows, facts=None):
    """The canonical text form, one row per line, sorted, then PyTorch's
    facts as `torch|<name>|<value>`."""
    lines = sorted(f"{n}|{p}|{' '.join(s)}|{' '.join(r)}|{' '.join(g)}|{b}"
                   for (n, p), (s, r, g, b) in rows.items())
    return lines + [f"torch|{k}|{v}" for k, v in sorted((facts or {}).items())]


def write_def(rows, facts, path):
    with open(path, "w") as f:
        f.write("// Generated by scripts/gen_saved_tensor_table.py from PyTorch "
                f"{torch.__version__} (CPU). Do not edit.\n"
                "// MEMOPT_SAVED_OP(op, pattern, saved, results, grads, "
                "backward), MEMOPT_TORCH_FACT(name, value): see "
                "docs/analyses.md.\n")
        for line in table_lines(rows):
            n, p, s, r, g, b = line.split("|")
            f.write(f'MEMOPT_SAVED_OP("{n}", "{p}", "{s}", "{r}", "{g}", '
                    f'"{b}")\n')
        for name, value in sorted(facts.items()):
            f.write(f"MEMOPT_TORCH_FACT({name}, {value})\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-o", "--output", help="write the .def table here")
    parser.add_argument("--print", action="store_true",
                        help="print the canonical rows")
    parser.add_argument("--runtime", help="libmemopt_runtime.so: measure "
                        "what each backward allocates with its counting "
                        "allocator (without it, no backward column)")
    opts = parser.parse_args()
    if opts.runtime:
        try:
            use_runtime(opts.runtime)
        except (OSError, RuntimeError) as e:
            # An instrumented runtime that cannot load here (a fuzzing
            # build's): the table without the backward column.
            print(f"gen_saved_tensor_table: not measuring backward "
                  f"allocations ({str(e).splitlines()[0]})", file=sys.stderr)
    rows, facts = derive_table(), torch_facts()
    if opts.output:
        write_def(rows, facts, opts.output)
    if opts.print or not opts.output:
        print("\n".join(table_lines(rows, facts)))


if __name__ == "__main__":
    main()
