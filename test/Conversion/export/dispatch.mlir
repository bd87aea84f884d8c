// A module whose forward dispatches exports as ONE TorchScript module: a
// method per signature function and for the fallback, and a forward that
// tests each case's sizes and dtypes in order.
// RUN: %python -c "import torch; torch.manual_seed(0); torch.jit.script(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))).save('%t.pt')"
// RUN: memopt-translate --import-torchscript %t.pt --signature 'input:2x4;count=1' --signature 'input:8x4;count=5' | memopt-opt --memopt-specialize-signatures | memopt-translate --export-torchscript -o %t.out.pt
// RUN: %python %s.py %t.out.pt | FileCheck %s
// RUN: memopt-translate --import-torchscript %t.pt --signature 'input:2x4' --signature 'input:8x4' | memopt-opt --memopt-specialize-signatures=fallback=none | memopt-translate --export-torchscript -o %t.strict.pt
// RUN: %python %s.py %t.strict.pt | FileCheck %s --check-prefix=STRICT
// RUN: memopt-translate --import-torchscript %t.pt --signature 'input:2x4' --signature 'input:8x4' | memopt-opt --memopt-specialize-signatures=fallback=original | memopt-translate --export-torchscript -o %t.original.pt
// RUN: %python %s.py %t.original.pt | FileCheck %s --check-prefix=ORIGINAL

// The most frequent signature is tested first; the fallback takes any size
// of the right rank and dtype.
// CHECK-LABEL: def forward(self,
// CHECK-NEXT: input: Tensor) -> Tensor:
// CHECK-NEXT: ") matches none of the compiled signatures (input: 8x4 f32, input: 2x4 f32) and the generic fallback takes (input: ?x? f32) only; recompile with --spec for it"
// CHECK: if torch.eq(torch.size(input), [8, 4]):
// CHECK-NEXT: _{{[0-9]+}} = torch.eq(ops.prim.dtype(input), 6)
// CHECK: (self).forward_s1(input, )
// CHECK: if torch.eq(torch.size(input), [2, 4]):
// CHECK: (self).forward_s0(input, )
// CHECK: if torch.eq(torch.dim(input), 2):
// CHECK: (self).forward_generic(input, )
// CHECK: "memopt: input signature (input: "
// CHECK: ops.prim.RaiseException(
// Every method checks the assumptions it was compiled under.
// CHECK-LABEL: def forward_generic(self,
// CHECK: if torch.ne(training, True):
// CHECK-LABEL: def forward_s0(self,
// CHECK: if torch.ne(training, True):
// CHECK-LABEL: def forward_s1(self,
// CHECK: if torch.ne(training, True):
// CHECK-LABEL: methods: ['forward', 'forward_generic', 'forward_s0', 'forward_s1']
// CHECK-NEXT: state_dict: ['0.weight', '0.bias', '1.weight', '1.bias', '1.running_mean', '1.running_var', '1.num_batches_tracked']
// CHECK-NEXT: batch 8: (8, 3)
// CHECK-NEXT: batch 2: (2, 3)
// CHECK-NEXT: batch 5: (5, 3)
// CHECK-NEXT: batch 5 f64: {{.*}}RuntimeError: memopt: input signature (input: 5x4 f64) matches none of the compiled signatures (input: 8x4 f32, input: 2x4 f32) and the generic fallback takes (input: ?x? f32) only; recompile with --spec for it
// CHECK-NEXT: batch 1x2x4: {{.*}}memopt: input signature (input: 1x2x4 f32) matches none
// CHECK-NEXT: eval: {{.*}}memopt: this module was compiled for 1.training == True (memopt.assumes)

// STRICT-LABEL: methods: ['forward', 'forward_s0', 'forward_s1']
// STRICT: batch 8: (8, 3)
// STRICT-NEXT: batch 2: (2, 3)
// STRICT-NEXT: batch 5: {{.*}}memopt: input signature (input: 5x4 f32) matches none of the compiled signatures (input: 2x4 f32, input: 8x4 f32); recompile with --spec for it or drop --strict-signatures

// The original forward: a copy of the source's method, on the same state.
// ORIGINAL-LABEL: def forward_original(self,
// ORIGINAL: methods: ['forward', 'forward_original', 'forward_s0', 'forward_s1']
// ORIGINAL: batch 5: (5, 3)
// ORIGINAL-NEXT: batch 5 f64: RuntimeError:
// ORIGINAL-NOT: memopt: input signature
// ORIGINAL: eval: {{.*}}memopt: this module was compiled for 1.training == True
