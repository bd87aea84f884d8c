// RUN: memopt-opt %s -memopt-test-memory-model -o /dev/null | FileCheck %s
// RUN: memopt-opt %s -memopt-test-memory-model="threads=1" -o /dev/null | FileCheck %s --check-prefix=ONE
// The intra-op threads stamped on the module (memopt-compile
// --intra-op-threads) reach the kernel formulas: the unstrided 1x1
// convolution of memory-model-workspace.mlir @pointwise runs through oneDNN
// on two threads (blocked copies) and without it on one.
// CHECK-LABEL: memory-model @pointwise
// CHECK: forward aten::conv2d live 32768
// CHECK: backward aten::conv2d live 59392
// ONE-LABEL: memory-model @pointwise
// ONE: forward aten::conv2d live 16384
// ONE: backward aten::conv2d live 34816
module attributes {memopt.intra_op_threads = 2 : i64} {
func.func @pointwise(%x: tensor<2x16x8x8xf32>) -> tensor<2x32x8x8xf32> {
  %w = memopt.param "c.weight" : tensor<32x16x1x1xf32>
  %nb = memopt.get_attr "c.bias" : !memopt.script<"Tensor?">
  %y = memopt.op "aten::conv2d"(%x, %w, %nb) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [0, 0], [1, 1], 1]
      : (tensor<2x16x8x8xf32>, tensor<32x16x1x1xf32>, !memopt.script<"Tensor?">) -> tensor<2x32x8x8xf32>
  return %y : tensor<2x32x8x8xf32>
}
}
