"""memopt: an ahead-of-time training-memory compiler for PyTorch.

Submodules are imported on use (e.g. `import memopt.fx`) so that importing
the package needs nothing but PyTorch.
"""
