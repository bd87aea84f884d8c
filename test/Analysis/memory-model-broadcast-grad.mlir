// RUN: memopt-opt %s -memopt-test-memory-model="kernel-workspaces=0" -o /dev/null | FileCheck %s

// A layer scale: `g * y` with g of shape [8, 1, 1] broadcast over y's
// [2, 8, 4, 4] (1024 bytes). MulBackward computes g's gradient at y's shape
// (grad * y) and autograd reduces it to [8, 1, 1] only after the node
// returns, so while it runs the output (1024), its gradient (1024), the
// saved y (1024), y's gradient (1024) and g's unreduced gradient (1024) are
// alive: 5120 bytes, plus g's reduced gradient (32). Then x * w (x is a
// function argument and needs no gradient): the output and the gradient
// the caller holds for it, y's gradient and w's unreduced gradient (1024
// each), plus w's reduced one (32). Without the unreduced buffers: 4128
// and 3104.
// CHECK-LABEL: memory-model @layer_scale
// CHECK: backward aten::mul live 5152
// CHECK: backward aten::mul live 4128
func.func @layer_scale(%x: tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32> {
  %w = memopt.param "w" : tensor<8x1x1xf32>
  %g = memopt.param "g" : tensor<8x1x1xf32>
  %y = memopt.op "aten::mul"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>]
      : (tensor<2x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<2x8x4x4xf32>
  %o = memopt.op "aten::mul"(%g, %y) [#memopt.arg<0>, #memopt.arg<1>]
      : (tensor<8x1x1xf32>, tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32>
  return %o : tensor<2x8x4x4xf32>
}

// An elementwise op whose operands have the result's shape reduces
// nothing: no extra buffer (the output, its gradient, w's gradient).
// CHECK-LABEL: memory-model @same_shape
// CHECK: backward aten::mul live 3072
func.func @same_shape(%x: tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32> {
  %w = memopt.param "w" : tensor<2x8x4x4xf32>
  %o = memopt.op "aten::mul"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>]
      : (tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32>
  return %o : tensor<2x8x4x4xf32>
}

// A broadcast bias added: AddBackward passes the output gradient through,
// and autograd sums it to b's shape [8, 1, 1]. Only that reduced buffer
// (32 bytes) is new: no buffer of the result's shape, as mul's has (before
// this rule the model counted one: 1024 bytes over what PyTorch allocates).
// After y = x * w, the backward of add holds the output and its gradient
// (1024 each; the gradient passes through to y) and b's reduced gradient.
// CHECK-LABEL: memory-model @broadcast_bias
// CHECK: backward aten::add live 2080
func.func @broadcast_bias(%x: tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32> {
  %w = memopt.param "w" : tensor<2x8x4x4xf32>
  %b = memopt.param "b" : tensor<8x1x1xf32>
  %y = memopt.op "aten::mul"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>]
      : (tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32>
  %o = memopt.op "aten::add"(%y, %b) [#memopt.arg<0>, #memopt.arg<1>, 1]
      {overload = "Tensor"}
      : (tensor<2x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<2x8x4x4xf32>
  return %o : tensor<2x8x4x4xf32>
}
