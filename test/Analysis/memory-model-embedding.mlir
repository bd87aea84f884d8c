// RUN: memopt-opt %s -memopt-test-memory-model="kernel-workspaces=0" -verify-diagnostics -o /dev/null | FileCheck %s
// RUN: memopt-opt %s -memopt-test-cost-model -o /dev/null | FileCheck %s --check-prefix=COST

// aten::embedding has a catalog row and a saved-tensor row (derived from
// PyTorch: it keeps the indices and the table, which is a resident
// parameter), so it is not an unknown op (no warning, nothing guessed):
// it saves the 4x8 int64 indices (256 bytes, a copy here so that they are
// not the resident input) and its result (4x8x16xf32 = 2048 bytes) is a new
// tensor. In backward the output gradient (2048), the weight's gradient, a
// new table-sized buffer (100x16xf32 = 6400), and the result still held as
// the function's output (2048) are live.
// CHECK-LABEL: memory-model @embedding
// CHECK: saved aten::embedding 256
// CHECK: forward aten::embedding live 2304
// CHECK: backward aten::embedding live 10752
// CHECK-NOT: unknown
// COST-LABEL: cost-model @embedding
// COST: aten::embedding class Elementwise flops 512
func.func @embedding(%tokens: tensor<4x8xi64>) -> tensor<4x8x16xf32> {
  %w = memopt.param "embed.weight" : tensor<100x16xf32>
  %i = memopt.op "aten::clone"(%tokens) [#memopt.arg<0>, #memopt.none]
      : (tensor<4x8xi64>) -> tensor<4x8xi64>
  %e = memopt.op "aten::embedding"(%w, %i) [#memopt.arg<0>, #memopt.arg<1>, -1, false, false]
      : (tensor<100x16xf32>, tensor<4x8xi64>) -> tensor<4x8x16xf32>
  return %e : tensor<4x8x16xf32>
}
