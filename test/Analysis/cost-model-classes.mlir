// RUN: memopt-opt %s -memopt-test-cost-model -o /dev/null | FileCheck %s

// Ops whose PyTorch 1.13 CPU kernels are far from the rest of their family
// have classes of their own; an unstrided 1x1 convolution on a small batch
// runs as one matrix product per image (no oneDNN on one thread).
// 1x1 conv: 2 * (2*8*4*4 outputs) * 4 = 2048 flops.
// bmm: 2 * (2*3*5 outputs) * 4 = 240 flops.
// CHECK-LABEL: cost-model @classes
// CHECK: aten::conv2d class Matmul flops 2048
// CHECK: aten::batch_norm class BatchNorm flops 1280
// CHECK: aten::max_pool2d class MaxPooling flops 256
// CHECK: aten::softmax class Softmax flops 1024
// CHECK: aten::bmm class BatchedMatmul flops 240
// CHECK: aten::matmul class BatchedMatmul flops 240
// CHECK: aten::layer_norm class Normalization
func.func @classes(%x: tensor<2x4x4x4xf32>, %p: tensor<2x3x4xf32>, %q: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %w = memopt.param "c.weight" : tensor<8x4x1x1xf32>
  %nb = memopt.get_attr "c.bias" : !memopt.none
  %y = memopt.op "aten::conv2d"(%x, %w, %nb) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [0, 0], [1, 1], 1]
      : (tensor<2x4x4x4xf32>, tensor<8x4x1x1xf32>, !memopt.none) -> tensor<2x8x4x4xf32>
  %g = memopt.param "bn.weight" : tensor<8xf32>
  %b = memopt.param "bn.bias" : tensor<8xf32>
  %m = memopt.buffer "bn.running_mean" : tensor<8xf32>
  %v = memopt.buffer "bn.running_var" : tensor<8xf32>
  %n = memopt.op "aten::batch_norm"(%y, %g, %b, %m, %v) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, true, 0.1, 1.0e-5, true]
      {mutates = array<i64: 3, 4>}
      : (tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x4x4xf32>
  %mp = memopt.op "aten::max_pool2d"(%n) [#memopt.arg<0>, [2, 2], [2, 2], [0, 0], [1, 1], false]
      : (tensor<2x8x4x4xf32>) -> tensor<2x8x2x2xf32>
  %s = memopt.op "aten::softmax"(%n) [#memopt.arg<0>, -1, #memopt.none] {overload = "int"}
      : (tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32>
  %bm = memopt.op "aten::bmm"(%p, %q) [#memopt.arg<0>, #memopt.arg<1>] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %mm = memopt.op "aten::matmul"(%p, %q) [#memopt.arg<0>, #memopt.arg<1>] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %lw = memopt.param "ln.weight" : tensor<5xf32>
  %lb = memopt.param "ln.bias" : tensor<5xf32>
  %l = memopt.op "aten::layer_norm"(%mm, %lw, %lb) [#memopt.arg<0>, [5], #memopt.arg<1>, #memopt.arg<2>, 1.0e-5, true]
      : (tensor<2x3x5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  return %bm : tensor<2x3x5xf32>
}

// A transposed convolution's work grows with its input: each of the
// 2*4*4*4 input values meets cout/groups * k = 3*2*2 weights, 2 flops each:
// 2 * 128 * 12 = 3072 flops (its 2x3x8x8 output would give 2 * 384 * 16).
// CHECK-LABEL: cost-model @transposed
// CHECK: aten::conv_transpose2d class Conv flops 3072
func.func @transposed(%x: tensor<2x4x4x4xf32>) -> tensor<2x3x8x8xf32> {
  %w = memopt.param "up.weight" : tensor<4x3x2x2xf32>
  %b = memopt.param "up.bias" : tensor<3xf32>
  %y = memopt.op "aten::conv_transpose2d"(%x, %w, %b) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [2, 2], [0, 0], [0, 0], 1, [1, 1]] {overload = "input"}
      : (tensor<2x4x4x4xf32>, tensor<4x3x2x2xf32>, tensor<3xf32>) -> tensor<2x3x8x8xf32>
  return %y : tensor<2x3x8x8xf32>
}
