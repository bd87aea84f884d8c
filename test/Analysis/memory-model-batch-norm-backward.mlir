// RUN: memopt-opt %s -memopt-test-memory-model -o /dev/null | FileCheck %s

// Training-mode batch-norm's CPU backward allocates a temporary of its
// input's size next to the input gradient (PyTorch 1.13, measured with the
// counting allocator: 2 x the input above the live bytes). x is 2x4x8x8xf32
// (2048 bytes); the conv before it makes x require grad.
//   forward:  conv y (2048), batch-norm z (2048) + 2 x 4 statistics     = 4128
//   backward: loss gradient of z                                        = 6176
//             batch-norm: + grad y (2048) + temporary (2048)            = 10272
// CHECK-LABEL: memory-model @bn
// CHECK: backward aten::batch_norm live 10272
func.func @bn(%x: tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32> {
  %cw = memopt.param "conv.weight" : tensor<4x4x1x1xf32>
  %y = memopt.op "aten::conv2d"(%x, %cw) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, [1, 1], [0, 0], [1, 1], 1] {overload = ""} : (tensor<2x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %w = memopt.param "bn.weight" : tensor<4xf32>
  %b = memopt.param "bn.bias" : tensor<4xf32>
  %m = memopt.buffer "bn.running_mean" : tensor<4xf32>
  %v = memopt.buffer "bn.running_var" : tensor<4xf32>
  %z = memopt.op "aten::batch_norm"(%y, %w, %b, %m, %v) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, true, 0.1, 1.0e-05, true] {mutates = array<i64: 3, 4>, overload = ""} : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  return %z : tensor<2x4x8x8xf32>
}
