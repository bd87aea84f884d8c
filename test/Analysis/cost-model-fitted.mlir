// RUN: memopt-opt %s -memopt-test-cost-model -o /dev/null | FileCheck %s

// A module stamped with a machine's fit (memopt-compile --cost-model) prices
// the classes it names with its coefficients; the others keep the built-in
// fit, so the same relu costs the same in both modules.
// conv: 27648 flops, 4032 bytes: 1e-9 * 27648 + 1e-8 * 4032 + 5e-6 s =
// 7.2968e-05 s.
// CHECK-LABEL: cost-model @fitted
// CHECK: aten::conv2d class Conv flops 27648 bytes 4032 seconds 7.297e-05
// CHECK: aten::relu class Elementwise flops 512 bytes 4096 seconds [[RELU:.*]]
// A function's own stamp wins over its module's.
// CHECK-LABEL: cost-model @own_fit
// CHECK: aten::conv2d class Conv flops 27648 bytes 4032 seconds 1.000e+00
// CHECK: aten::relu class Elementwise flops 512 bytes 4096 seconds [[RELU]]
module attributes {memopt.cost_model = {Conv = array<f64: 1.0e-9, 1.0e-8, 5.0e-6>}} {
  func.func @fitted(%x: tensor<2x3x8x8xf32>) -> tensor<2x4x8x8xf32> {
    %w = memopt.param "conv.weight" : tensor<4x3x3x3xf32>
    %b = memopt.param "conv.bias" : tensor<4xf32>
    %y = memopt.op "aten::conv2d"(%x, %w, %b)
        [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
        : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
    %r = memopt.op "aten::relu"(%y) [#memopt.arg<0>] : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
    return %r : tensor<2x4x8x8xf32>
  }
  func.func @own_fit(%x: tensor<2x3x8x8xf32>) -> tensor<2x4x8x8xf32>
      attributes {memopt.cost_model = {Conv = array<f64: 0.0, 0.0, 1.0>}} {
    %w = memopt.param "conv.weight" : tensor<4x3x3x3xf32>
    %b = memopt.param "conv.bias" : tensor<4xf32>
    %y = memopt.op "aten::conv2d"(%x, %w, %b)
        [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
        : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
    %r = memopt.op "aten::relu"(%y) [#memopt.arg<0>] : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
    return %r : tensor<2x4x8x8xf32>
  }
}
