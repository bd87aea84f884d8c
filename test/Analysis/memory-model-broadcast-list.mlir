// RUN: memopt-opt %s -memopt-test-memory-model -verify-diagnostics -o /dev/null | FileCheck %s

// F.mse_loss against the model's input (a reconstruction) broadcasts its
// operands through aten::broadcast_tensors and unpacks the list. Only the
// first element needs a gradient (its source, the linear's result, does;
// the input does not): mse_loss's backward makes one 8 KiB gradient, not
// two (`mse_loss|gt`, not `gg`): the saved result and the gradient.
// Before, 24584.
// CHECK-LABEL: memory-model @reconstruction
// CHECK: backward aten::mse_loss live 16392
func.func @reconstruction(%x: tensor<64x32xf32>) -> tensor<f32> {
  %w = memopt.param "recon.weight" : tensor<32x32xf32>
  %b = memopt.param "recon.bias" : tensor<32xf32>
  %r = memopt.op "aten::linear"(%x, %w, %b) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>]
      : (tensor<64x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<64x32xf32>
  %l = memopt.op "prim::ListConstruct"(%r, %x) [#memopt.arg<0>, #memopt.arg<1>]
      : (tensor<64x32xf32>, tensor<64x32xf32>) -> !memopt.list<tensor<*xf32>>
  %e = memopt.op "aten::broadcast_tensors"(%l) [#memopt.arg<0>]
      : (!memopt.list<tensor<*xf32>>) -> !memopt.list<tensor<*xf32>>
  %u:2 = memopt.op "prim::ListUnpack"(%e) [#memopt.arg<0>]
      : (!memopt.list<tensor<*xf32>>) -> (tensor<64x32xf32>, tensor<64x32xf32>)
  %m = memopt.op "aten::mse_loss"(%u#0, %u#1) [#memopt.arg<0>, #memopt.arg<1>, 1]
      : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<f32>
  return %m : tensor<f32>
}

// Both operands computed from parameters: both need one (`gg`): the two
// saved operands and two gradients at the loss's backward.
// CHECK-LABEL: memory-model @two_outputs
// CHECK: backward aten::mse_loss live 32776
func.func @two_outputs(%x: tensor<64x32xf32>) -> tensor<f32> {
  %w = memopt.param "a.weight" : tensor<32x32xf32>
  %v = memopt.param "b.weight" : tensor<32x32xf32>
  %r = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<64x32xf32>, tensor<32x32xf32>) -> tensor<64x32xf32>
  %s = memopt.op "aten::linear"(%x, %v) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<64x32xf32>, tensor<32x32xf32>) -> tensor<64x32xf32>
  %l = memopt.op "prim::ListConstruct"(%r, %s) [#memopt.arg<0>, #memopt.arg<1>]
      : (tensor<64x32xf32>, tensor<64x32xf32>) -> !memopt.list<tensor<*xf32>>
  %e = memopt.op "aten::broadcast_tensors"(%l) [#memopt.arg<0>]
      : (!memopt.list<tensor<*xf32>>) -> !memopt.list<tensor<*xf32>>
  %u:2 = memopt.op "prim::ListUnpack"(%e) [#memopt.arg<0>]
      : (!memopt.list<tensor<*xf32>>) -> (tensor<64x32xf32>, tensor<64x32xf32>)
  %m = memopt.op "aten::mse_loss"(%u#0, %u#1) [#memopt.arg<0>, #memopt.arg<1>, 1]
      : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<f32>
  return %m : tensor<f32>
}
