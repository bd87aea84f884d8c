"""What the bundled examples share: save a seeded zoo model as TorchScript
and print its `--input-shape` arguments for memopt-compile."""
import argparse
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))


def main(model: str, kwargs: dict, doc: str) -> int:
    from memopt import measure
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--out", required=True, help="the .pt to write")
    args = parser.parse_args()
    specs = measure.save_zoo_model(model, kwargs, args.out, seed=0)
    print(" ".join(f"--input-shape {s}" for s in specs))
    return 0
