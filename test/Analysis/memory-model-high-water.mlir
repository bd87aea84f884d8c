// RUN: memopt-opt %s -memopt-test-memory-model -o /dev/null | FileCheck %s
// RUN: memopt-opt %s -memopt-test-memory-model="kernel-workspaces=0" -o /dev/null | FileCheck %s --check-prefix=NOWS

// `high_water` (measured by memopt-compile's kernel probe) replaces the
// workspace formulas: memory-model-workspace.mlir's @two_convs, whose
// formulas give 25600 / 33792 forward and 58368 / 50176 backward, with
// other marks. Live bytes before each kernel are the same as there:
//   forward  conv1: 0 + 30000                              = 30000
//            conv2: 8192 (r) + 20000                       = 28192
//   backward conv2: 24576 + backward[input|weight] 40000   = 64576
//            conv1: 24576 + backward[weight] 30000         = 54576
// CHECK-LABEL: memory-model @two_convs
// CHECK: forward aten::conv2d live 30000
// CHECK-NEXT: forward aten::relu live 16384
// CHECK-NEXT: forward aten::conv2d live 28192
// CHECK-NEXT: backward aten::conv2d live 64576
// CHECK-NEXT: backward aten::relu live 40960
// CHECK-NEXT: backward aten::conv2d live 54576
// CHECK: peak 64576 at backward aten::conv2d
// Without workspaces the marks are ignored too.
// NOWS-LABEL: memory-model @two_convs
// NOWS: forward aten::conv2d live 8192
// NOWS: peak 41984
func.func @two_convs(%x: tensor<2x16x8x8xf32>) -> tensor<2x16x8x8xf32> {
  %w1 = memopt.param "c1.weight" : tensor<16x16x3x3xf32>
  %nb = memopt.get_attr "c1.bias" : !memopt.script<"Tensor?">
  %y1 = memopt.op "aten::conv2d"(%x, %w1, %nb) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
      {high_water = #memopt.high_water<forward = 30000, backward = [-1, 1, 30000, 3]>}
      : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>, !memopt.script<"Tensor?">) -> tensor<2x16x8x8xf32>
  %r = memopt.op "aten::relu"(%y1) [#memopt.arg<0>] : (tensor<2x16x8x8xf32>) -> tensor<2x16x8x8xf32>
  %w2 = memopt.param "c2.weight" : tensor<16x16x3x3xf32>
  %y2 = memopt.op "aten::conv2d"(%r, %w2, %nb) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
      {high_water = #memopt.high_water<forward = 20000, backward = [-1, 1, 2, 40000]>}
      : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>, !memopt.script<"Tensor?">) -> tensor<2x16x8x8xf32>
  return %y2 : tensor<2x16x8x8xf32>
}

// The probe measured the weight and bias getting gradients together; with a
// frozen bias (a gradient for the weight only) and with a mark of -1 (not
// measured), the formulas apply: the same bytes as without marks.
// CHECK-LABEL: memory-model @formula
// CHECK: forward aten::conv2d live [[FWD:[0-9]+]]
// CHECK: backward aten::conv2d live [[BWD:[0-9]+]]
// CHECK-LABEL: memory-model @frozen_bias
// CHECK: forward aten::conv2d live [[FWD]]
// CHECK: backward aten::conv2d live [[BWD]]
func.func @formula(%x: tensor<2x16x8x8xf32>) -> tensor<2x16x8x8xf32> {
  %w = memopt.param "c.weight" : tensor<16x16x3x3xf32>
  %b = memopt.param "c.bias" frozen : tensor<16xf32>
  %y = memopt.op "aten::conv2d"(%x, %w, %b) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
      : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>, tensor<16xf32>) -> tensor<2x16x8x8xf32>
  return %y : tensor<2x16x8x8xf32>
}
func.func @frozen_bias(%x: tensor<2x16x8x8xf32>) -> tensor<2x16x8x8xf32> {
  %w = memopt.param "c.weight" : tensor<16x16x3x3xf32>
  %b = memopt.param "c.bias" frozen : tensor<16xf32>
  %y = memopt.op "aten::conv2d"(%x, %w, %b) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
      {high_water = #memopt.high_water<forward = -1, backward = [1, 1, 1, 1]>}
      : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>, tensor<16xf32>) -> tensor<2x16x8x8xf32>
  return %y : tensor<2x16x8x8xf32>
}
