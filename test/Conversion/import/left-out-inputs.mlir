// Trailing inputs with defaults left out of the input specs (an optional
// mask, a step count) are bound to their defaults: the loop unrolls twice,
// the mask branch goes, and each argument records its bound value. The
// exported forward keeps the defaults in its signature (before, `mask` lost
// its `=None`, so calling the compiled model as the source was called
// failed) and refuses any other value (before, a mask passed in was
// silently ignored).
// RUN: memopt-translate --import-torchscript %S/../Inputs/defaulted_inputs.pt --input-shape x:2x4 | FileCheck %s
// CHECK-LABEL: func.func @forward(%arg0: tensor<2x4xf32>, %arg1: !memopt.script<"Tensor?"> {memopt.bound_default = #memopt.none}, %arg2: i64 {memopt.bound_default = 2 : i64})
// CHECK-COUNT-2: aten::tanh
// CHECK-NOT: aten::mul
// CHECK: return

// RUN: rm -rf %t && mkdir -p %t
// RUN: memopt-translate --import-torchscript %S/../Inputs/defaulted_inputs.pt --input-shape x:2x4 \
// RUN:   | memopt-translate --export-torchscript -o %t/out.pt
// RUN: %python -c "import torch, sys; print(torch.jit.load(sys.argv[1]).code)" %t/out.pt | FileCheck %s --check-prefix=EXPORT
// EXPORT: mask: Optional[Tensor]=None,
// EXPORT-NEXT: steps: int=2) -> Tensor:
// EXPORT-DAG: "memopt: this module was compiled for mask == None (left out of the input specs); compile it again with an input spec for mask to pass a tensor"
// EXPORT-DAG: "memopt: this module was compiled for steps == 2 (left out of the input specs); inputs other than tensors are compiled for their default only"
// EXPORT: if torch.__isnot__(mask, None):
// EXPORT: if torch.ne(steps, 2):
