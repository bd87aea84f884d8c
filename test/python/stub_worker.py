"""Runs launch-stub checks in a process of their own (test_launch_stubs.py):
stubs register with the runtime for the whole process, which the other
tests of a pytest session must not see.

    python3 stub_worker.py RUNTIME_LIB STUBS_LIB CASE JSON_ARGS

prints one JSON object on its last line.
"""
import json
import sys

import torch


def binary(shape, dtype, generator):
    x = (torch.rand(shape, generator=generator) > 0.6).to(dtype)
    flat = x.view(-1)
    flat[::7] = -0.0  # either sign of zero is a zero
    return x


def formats(args, ops):
    """Every site of the demo module: the stub's payload bytes and restored
    values against the generic memopt::compress / decompress."""
    g = torch.Generator().manual_seed(0)
    results = []
    for site in args["sites"]:
        tensors = [binary(t["shape"], getattr(torch, t["dtype"]), g)
                   for t in site["tensors"]]
        kinds = [t["kind"] for t in site["tensors"]]
        # Without a check, any non-zero value packs as 1, as generically.
        unchecked = [t.clone() for t in tensors]
        unchecked[0].view(-1)[1] = 0.5
        for xs, check in ((tensors, True), (unchecked, False)):
            counts0 = ops.launch_counts()
            payloads = ops.launch_stub_pack(site["region"], xs, kinds, check)
            counts1 = ops.launch_counts()
            restored = ops.launch_stub_unpack(site["region"], payloads, xs,
                                              kinds)
            same_bytes = all(
                torch.equal(p, ops.compress(x, k, False))
                for p, x, k in zip(payloads, xs, kinds))
            same_values = all(
                torch.equal(r, ops.decompress(ops.compress(x, k, False), k,
                                              list(x.shape), x.dtype))
                for r, x, k in zip(restored, xs, kinds))
            results.append({"region": site["region"], "check": check,
                            "bytes": same_bytes, "values": same_values,
                            "stub_launches": counts1[1] - counts0[1]})
    # Tensors no site packs: a lookup error here, the generic kernels in
    # a model (the runtime asks for an exact match only).
    site = args["sites"][0]
    other = [torch.zeros(3, 5) for _ in site["tensors"]]
    try:
        ops.launch_stub_pack(site["region"], other,
                             [t["kind"] for t in site["tensors"]], False)
        mismatch = None
    except RuntimeError as e:
        mismatch = str(e).splitlines()[0]
    return {"results": results, "mismatch": mismatch}


def nonbinary(args, ops):
    """A checked pack of a value that is not 0 or 1 fails as the generic
    check does, word for word."""
    site = args["sites"][0]
    t = site["tensors"][0]
    x = torch.zeros(t["shape"], dtype=getattr(torch, t["dtype"]))
    x.view(-1)[4242 % x.numel()] = 2.0
    messages = []
    for call in (lambda: ops.launch_stub_pack(site["region"], [x] + [
                     torch.zeros(o["shape"], dtype=getattr(torch, o["dtype"]))
                     for o in site["tensors"][1:]],
                     [o["kind"] for o in site["tensors"]], True),
                 lambda: ops.compress(x, t["kind"], True)):
        try:
            call()
            messages.append(None)
        except RuntimeError as e:
            messages.append(str(e).splitlines()[0])
    return {"stub": messages[0], "generic": messages[1]}


def side_by_side(args, ops, x, after_step, zero_grad=None):
    """Two instances of the compiled model from the same weights, one trained
    with the stubs off and one with them on, step by step. `after_step()`
    reads the counters of the step just taken (reset before it); returns
    whether every gradient and parameter is bitwise equal, and the last
    step's counters of each."""
    torch.manual_seed(0)
    generic = torch.jit.load(args["compiled"])
    stubbed = torch.jit.load(args["compiled"])
    stubbed.load_state_dict(generic.state_dict())
    opts = {m: torch.optim.SGD(m.parameters(), lr=0.05)
            for m in (generic, stubbed)}
    counters = {}
    equal = True
    for step in range(args["steps"]):
        grads = {}
        for name, model, enabled in (("generic", generic, False),
                                     ("stubs", stubbed, True)):
            ops.set_launch_stubs(enabled)
            opts[model].zero_grad(**({} if zero_grad is None else
                                     {"set_to_none": zero_grad}))
            ops.reset_launch_counts()
            ops.reset_offload_stats()
            torch.manual_seed(100 + step)
            model(x).float().square().sum().backward()
            counters[name] = after_step()
            grads[name] = [p.grad.clone() for p in model.parameters()]
            opts[model].step()
        equal &= all(torch.equal(a, b)
                     for a, b in zip(grads["generic"], grads["stubs"]))
    equal &= all(torch.equal(a, b) for a, b in
                 zip(generic.state_dict().values(),
                     stubbed.state_dict().values()))
    return bool(equal), counters


def train(args, ops):
    """The generic compression kernels against the stubs on binary inputs:
    bitwise equal; launches per step of each."""
    x = (torch.rand(args["shape"]) > 0.7).float()
    equal, counts = side_by_side(args, ops, x, ops.launch_counts)
    return {"equal": equal, "generic": counts["generic"],
            "stubs": counts["stubs"]}


def offload(args, ops):
    """As train, for a CUDA plan whose regions offload inputs (simulated on
    CPU tensors: into the runtime's host pool and back): the generic offload
    group against the offload stubs, gradients bitwise equal; offload and
    prefetch copy calls per step of each."""
    ops._set_offload_simulation(True)
    x = torch.randn(args["shape"])
    equal, counters = side_by_side(
        args, ops, x,
        lambda: (ops.offload_copy_counts(), ops.offload_stats()),
        zero_grad=False)
    return {"equal": equal,
            "copies": {k: v[0] for k, v in counters.items()},
            "stats": {k: v[1] for k, v in counters.items()},
            "offload_sites": ops.offload_stub_sites()}


def main():
    runtime, stubs, case, args = sys.argv[1:5]
    torch.ops.load_library(runtime)
    ops = torch.ops.memopt
    before = ops.launch_stub_sites()
    torch.ops.load_library(stubs)
    result = {"sites_before": before, "sites": ops.launch_stub_sites()}
    result.update({"formats": formats, "nonbinary": nonbinary,
                   "train": train, "offload": offload}[case](json.loads(args), ops))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
