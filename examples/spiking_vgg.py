#!/usr/bin/python3
"""Bundled example: a spiking VGG (8 conv-BN-LIF blocks, T=4 time steps) on
2x48x48 event frames, scripted and saved for memopt-compile.

    /usr/bin/python3 examples/spiking_vgg.py --out spiking_vgg.pt
    # prints the --input-shape arguments, e.g. --input-shape x:4x8x2x48x48

The model comes from python/memopt/zoo.py (seeded: the same weights every
time); examples/train.py rebuilds the same eager model to compare against.
"""
import sys

from _example import main

MODEL = "spiking_vgg"
KWARGS = dict(steps=4, batch=8, size=48, blocks=8)

if __name__ == "__main__":
    sys.exit(main(MODEL, KWARGS, __doc__))
