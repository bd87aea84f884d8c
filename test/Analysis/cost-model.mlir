// RUN: memopt-opt %s -memopt-test-cost-model="bandwidth=1.0e9" -o /dev/null | FileCheck %s

// conv: 2 * (2*4*8*8 outputs) * (3*3*3) = 27648 flops; bytes = x 1536 + w 432
//       + b 16 + y 2048 = 4032.
// linear: 2 * (8*16 outputs) * 4 = 1024 flops; bytes = 128 + 256 + 64 + 512.
// relu: one flop per element (512), reads and writes 2048 bytes each.
// dropout: its random draws cost as much as 40 elementwise flops a value
// (512 values: 20480).
// view: free.
// CHECK-LABEL: cost-model @costs
// CHECK: aten::conv2d class Conv flops 27648 bytes 4032
// CHECK: aten::relu class Elementwise flops 512 bytes 4096
// CHECK: aten::dropout class Elementwise flops 20480 bytes 4096
// CHECK: aten::view class View flops 0 bytes 0
// CHECK: aten::linear class Matmul flops 1024 bytes 960
// CHECK: recompute-all seconds
// An offload of the 512-byte output over 1 GB/s: 10 us latency + 0.512 us.
// CHECK: offload 512 bytes seconds 1.051e-05
func.func @costs(%x: tensor<2x3x8x8xf32>, %a: tensor<8x4xf32>) -> tensor<8x16xf32> {
  %w = memopt.param "conv.weight" : tensor<4x3x3x3xf32>
  %b = memopt.param "conv.bias" : tensor<4xf32>
  %y = memopt.op "aten::conv2d"(%x, %w, %b)
      [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
      : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %r = memopt.op "aten::relu"(%y) [#memopt.arg<0>] : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %d = memopt.op "aten::dropout"(%r) [#memopt.arg<0>, 0.1, true] {nondeterministic} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %v = memopt.op "aten::view"(%d) [#memopt.arg<0>, [2, -1]] : (tensor<2x4x8x8xf32>) -> tensor<2x256xf32>
  %fw = memopt.param "fc.weight" : tensor<16x4xf32>
  %fb = memopt.param "fc.bias" : tensor<16xf32>
  %h = memopt.op "aten::linear"(%a, %fw, %fb) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>]
      : (tensor<8x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  return %h : tensor<8x16xf32>
}
