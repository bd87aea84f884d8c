#!/usr/bin/python3
"""A plain PyTorch training loop, made memory-efficient by one line:

    model = memopt.wrap(model, sample_input)

ResNet-18 (10 classes) on torchvision's FakeData: an SGD optimizer with
momentum and a StepLR scheduler built before the wrap, validation in eval
mode after every epoch, a checkpoint saved every epoch and loaded back into
a fresh eager model at the end. Then it prints memopt's summary of the
plan and a table of peak training memory and step time, eager against
wrapped, measured with the runtime's counting allocator (same model, same
parameters: `memopt.detach(model)` is the eager one).

    /usr/bin/python3 examples/train_wrap.py [--epochs 2] [--steps 8]
        [--batch 16] [--image 64] [--prefer memory] [--no-memopt]
        [--plot timeline.svg] [--out DIR]

Run by scripts/example.sh. Compiled plans are cached
(~/.cache/memopt, or --cache-dir): the second run starts training at once.
"""
import argparse
import pathlib
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader
from torchvision import transforms

REPO = pathlib.Path(__file__).resolve().parents[1]
if (REPO / "python" / "memopt").is_dir():  # in the checkout
    sys.path.insert(0, str(REPO / "python"))

import memopt  # noqa: E402


def loaders(args):
    to_tensor = transforms.ToTensor()
    train = torchvision.datasets.FakeData(
        size=args.steps * args.batch, image_size=(3, args.image, args.image),
        num_classes=10, transform=to_tensor, random_offset=0)
    val = torchvision.datasets.FakeData(
        size=2 * args.batch, image_size=(3, args.image, args.image),
        num_classes=10, transform=to_tensor, random_offset=10_000)
    return (DataLoader(train, batch_size=args.batch, shuffle=True,
                       drop_last=True),
            DataLoader(val, batch_size=args.batch))


def validate(model, loader):
    model.eval()
    correct = total = 0
    loss = 0.0
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            loss += F.cross_entropy(out, y, reduction="sum").item()
            correct += (out.argmax(1) == y).sum().item()
            total += len(y)
    return loss / total, correct / total


def mib(n: float) -> str:
    return f"{n / 2**20:8.1f} MiB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8, help="batches per epoch")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--image", type=int, default=64)
    parser.add_argument("--prefer", default="memory",
                        choices=["speed", "balanced", "memory"])
    parser.add_argument("--budget", help="e.g. 40%% or 200MiB (instead of --prefer)")
    parser.add_argument("--no-memopt", action="store_true",
                        help="train the eager model (the line commented out)")
    parser.add_argument("--cache-dir", help="memopt's plan cache")
    parser.add_argument("--plot", help="write the memory timeline figure here")
    parser.add_argument("--out", help="checkpoint directory (default: a temp dir)")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # in order with memopt's stderr
    torch.manual_seed(0)
    torch.set_num_threads(1)
    out_dir = pathlib.Path(args.out or tempfile.mkdtemp(prefix="train_wrap-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    train_loader, val_loader = loaders(args)

    model = torchvision.models.resnet18(num_classes=10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9,
                                weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)

    if not args.no_memopt:
        # The one line: compile a memory plan for these input shapes. The
        # optimizer and scheduler above keep working: the wrapped model
        # trains the same Parameter objects.
        model = memopt.wrap(model, next(iter(train_loader))[0],
                            prefer=args.prefer, budget=args.budget,
                            cache_dir=args.cache_dir)

    for epoch in range(args.epochs):
        model.train()
        t0 = time.perf_counter()
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        scheduler.step()
        seconds = time.perf_counter() - t0
        val_loss, accuracy = validate(model, val_loader)
        print(f"epoch {epoch}: train loss {loss.item():.3f} ({seconds:.1f} s), "
              f"val loss {val_loss:.3f}, accuracy {accuracy:.0%}, "
              f"lr {scheduler.get_last_lr()[0]:.4f}")
        torch.save({"epoch": epoch, "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict()},
                   out_dir / "checkpoint.pt")

    # Resume: the checkpoint (original state_dict keys) loads into a fresh
    # eager model, which validates exactly like the trained one.
    checkpoint = torch.load(out_dir / "checkpoint.pt")
    restored = torchvision.models.resnet18(num_classes=10)
    restored.load_state_dict(checkpoint["model"])
    resumed_optimizer = torch.optim.SGD(restored.parameters(), lr=0.05,
                                        momentum=0.9, weight_decay=5e-4)
    resumed_optimizer.load_state_dict(checkpoint["optimizer"])
    same = validate(restored, val_loader) == validate(model, val_loader)
    print(f"checkpoint of epoch {checkpoint['epoch']} loaded into a fresh "
          f"eager model: validation {'identical' if same else 'DIFFERENT'}")
    if args.no_memopt:
        return 0 if same else 1

    summary = memopt.summary(model)
    print()
    print(summary)
    if args.plot:
        summary.plot(args.plot)
        print(f"memory timeline: {args.plot}")

    # Peak training memory (counting allocator) and step time: the eager
    # model is the same object, without memopt's plan.
    from memopt import measure
    from memopt.wrapping import load_runtime
    load_runtime()
    stats = torch.ops.memopt
    stats.enable_memory_stats()
    x, y = next(iter(train_loader))
    model.train()

    def backward(out):
        F.cross_entropy(out, y).backward()
    labels = ["eager PyTorch",
              f"memopt.wrap (budget={args.budget})" if args.budget
              else f"memopt.wrap (prefer={args.prefer})"]
    models = [memopt.detach(model), model]
    results = {label: [] for label in labels}
    for _ in range(2):  # alternate, keep the least disturbed run
        for label, m in zip(labels, models):
            results[label].append(measure.measure_training_step(
                m, [x], steps=3, warmup=1, stats=stats, backward=backward))
    rows = [(label, min(runs, key=lambda r: r.step_time_min_s))
            for label, runs in results.items()]
    print()
    print(f"resnet18, batch {args.batch}x3x{args.image}x{args.image}, "
          f"1 thread: forward+backward (fastest of 3 steps after a warm-up, "
          f"twice each)")
    print(f"  {'':32} {'peak memory':>12}  {'step time':>10}")
    for label, r in rows:
        print(f"  {label:32} {mib(r.peak_bytes)}  {r.step_time_min_s:8.3f} s")
    (_, eager), (_, wrapped) = rows
    print(f"  => {eager.peak_bytes / wrapped.peak_bytes:.2f}x lower peak, "
          f"{wrapped.step_time_min_s / eager.step_time_min_s:.2f}x the step time "
          f"(predicted: {summary.baseline_peak_bytes / summary.planned_peak_bytes:.2f}x)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
