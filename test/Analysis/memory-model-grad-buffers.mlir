// RUN: memopt-opt %s -split-input-file -memopt-test-memory-model="kernel-workspaces=0" -o /dev/null | FileCheck %s
// Parameter .grad buffers, stamped as `memopt.grad_buffers` on the module
// (memopt-compile --grad-buffers): zeroed in place between steps they are
// resident and each parameter's gradient is added into them; set to None
// (PyTorch 2.x's zero_grad default) autograd allocates them in backward and
// they stay allocated to the end of the step, so they count in its peak.

// The conv -> batch_norm -> relu_ step of memory-model.mlir, resident.
// Parameters: weight 432 + bias 16 + gamma 16 + beta 16 = 480 bytes, their
// .grad as much again, buffers 32, input 2x3x8x8xf32 = 1536 bytes.
//   bn backward:  + grad y (2048) + grad gamma, beta (2 * 16)    = 10304
//                 - param grads (added into .grad), grad z, y,
//                   statistics                                   = 6144
//   conv backward: + grad w (432) + grad b (16)                  = 6592
// CHECK-LABEL: memory-model @conv_bn_relu
// CHECK:      backward aten::relu_ live 8224
// CHECK-NEXT: backward aten::batch_norm live 10304
// CHECK-NEXT: backward aten::conv2d live 6592
// CHECK:      resident 2528
// CHECK-NEXT: peak 10304 at backward aten::batch_norm
module attributes {memopt.grad_buffers = "resident"} {
func.func @conv_bn_relu(%x: tensor<2x3x8x8xf32>) -> tensor<2x4x8x8xf32> {
  %w = memopt.param "conv.weight" : tensor<4x3x3x3xf32>
  %b = memopt.param "conv.bias" : tensor<4xf32>
  %g = memopt.param "bn.weight" : tensor<4xf32>
  %be = memopt.param "bn.bias" : tensor<4xf32>
  %m = memopt.buffer "bn.running_mean" : tensor<4xf32>
  %v = memopt.buffer "bn.running_var" : tensor<4xf32>
  %y = memopt.op "aten::conv2d"(%x, %w, %b)
      [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
      : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %z = memopt.op "aten::batch_norm"(%y, %g, %be, %m, %v)
      [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, true, 0.1, 1.0e-5, true]
      {mutates = array<i64: 3, 4>}
      : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %r = memopt.op "aten::relu_"(%z) [#memopt.arg<0>] {mutates = array<i64: 0>, views = array<i64: 0>}
      : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %r : tensor<2x4x8x8xf32>
}
}

// -----

// The same step with .grad allocated in backward: the new gradients of
// gamma and beta become their .grad (nothing else holds them), so they are
// not released: 32 bytes more from there on; only the parameters (not their
// gradients) are resident.
//   bn backward:   10304, then 6144 + 32                         = 6176
//   conv backward: + grad w (432) + grad b (16), kept            = 6624
// CHECK-LABEL: memory-model @conv_bn_relu
// CHECK:      backward aten::relu_ live 8224
// CHECK-NEXT: backward aten::batch_norm live 10304
// CHECK-NEXT: backward aten::conv2d live 6624
// CHECK:      resident 2048
// CHECK-NEXT: peak 10304 at backward aten::batch_norm
module attributes {memopt.grad_buffers = "allocated"} {
func.func @conv_bn_relu(%x: tensor<2x3x8x8xf32>) -> tensor<2x4x8x8xf32> {
  %w = memopt.param "conv.weight" : tensor<4x3x3x3xf32>
  %b = memopt.param "conv.bias" : tensor<4xf32>
  %g = memopt.param "bn.weight" : tensor<4xf32>
  %be = memopt.param "bn.bias" : tensor<4xf32>
  %m = memopt.buffer "bn.running_mean" : tensor<4xf32>
  %v = memopt.buffer "bn.running_var" : tensor<4xf32>
  %y = memopt.op "aten::conv2d"(%x, %w, %b)
      [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
      : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %z = memopt.op "aten::batch_norm"(%y, %g, %be, %m, %v)
      [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, true, 0.1, 1.0e-5, true]
      {mutates = array<i64: 3, 4>}
      : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %r = memopt.op "aten::relu_"(%z) [#memopt.arg<0>] {mutates = array<i64: 0>, views = array<i64: 0>}
      : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %r : tensor<2x4x8x8xf32>
}
}

// -----

// A gradient that another consumer shares (add passes its output gradient
// to the parameter unchanged) cannot become .grad: AccumulateGrad copies
// it. w and x are 8x16xf32 = 512 bytes.
//   relu backward: loss gradient (held until backward returns, 512)
//                  + r (returned, 512) + grad y (512)             = 1536
//   add backward:  grad y passed to w, copied into a new .grad    = 2048
// CHECK-LABEL: memory-model @shared_gradient
// CHECK:      backward aten::relu live 1536
// CHECK-NEXT: backward aten::add live 2048
// CHECK:      resident 1024
// CHECK-NEXT: peak 2048 at backward aten::add
module attributes {memopt.grad_buffers = "allocated"} {
func.func @shared_gradient(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %w = memopt.param "w" : tensor<8x16xf32>
  %y = memopt.op "aten::add"(%w, %x) [#memopt.arg<0>, #memopt.arg<1>, 1]
      : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %r = memopt.op "aten::relu"(%y) [#memopt.arg<0>] : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
}

// -----

// Resident, the same shared gradient is added into .grad: nothing new, and
// .grad (512) is resident with w and x.
// CHECK-LABEL: memory-model @shared_gradient
// CHECK:      backward aten::relu live 1536
// CHECK-NEXT: backward aten::add live 1536
// CHECK:      resident 1536
// CHECK-NEXT: peak 1536 at backward aten::relu
module {
func.func @shared_gradient(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %w = memopt.param "w" : tensor<8x16xf32>
  %y = memopt.op "aten::add"(%w, %x) [#memopt.arg<0>, #memopt.arg<1>, 1]
      : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %r = memopt.op "aten::relu"(%y) [#memopt.arg<0>] : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
}
