// RUN: memopt-opt %s -memopt-test-memory-model="kernel-workspaces=0" -verify-diagnostics -o /dev/null | FileCheck %s

// ATen's batched matmul expands both operands to the common batch and
// reshapes each to one bmm batch; an operand the batch dims broadcast (a
// weight shared by every sample, capsule routing's W @ u) is copied, and
// bmm saves the copy: 2 x 6 x (4x3) floats = 576 bytes for the weight, not
// its own 6 x (4x3) = 288 (resident: a parameter). The samples' operand
// is not broadcast: it is saved as it is (2 x 6 x 3x1 floats = 144 bytes).
// CHECK-LABEL: memory-model @broadcast_weight
// CHECK: saved aten::matmul 720
func.func @broadcast_weight(%u: tensor<2x6x3x1xf32>) -> tensor<2x6x4x1xf32> {
  %w = memopt.param "routing.weight" : tensor<1x6x4x3xf32>
  %s = memopt.param "routing.scale" : tensor<1xf32>
  %v = memopt.op "aten::mul"(%u, %s) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<2x6x3x1xf32>, tensor<1xf32>) -> tensor<2x6x3x1xf32>
  %y = memopt.op "aten::matmul"(%w, %v) [#memopt.arg<0>, #memopt.arg<1>]
      : (tensor<1x6x4x3xf32>, tensor<2x6x3x1xf32>) -> tensor<2x6x4x1xf32>
  return %y : tensor<2x6x4x1xf32>
}

// Same batch on both sides: nothing is broadcast, nothing copied; the
// weight is saved as it is, resident.
// CHECK-LABEL: memory-model @same_batch
// CHECK: saved aten::matmul 144
func.func @same_batch(%u: tensor<2x6x3x1xf32>) -> tensor<2x6x4x1xf32> {
  %w = memopt.param "routing.weight" : tensor<2x6x4x3xf32>
  %s = memopt.param "routing.scale" : tensor<1xf32>
  %v = memopt.op "aten::mul"(%u, %s) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<2x6x3x1xf32>, tensor<1xf32>) -> tensor<2x6x3x1xf32>
  %y = memopt.op "aten::matmul"(%w, %v) [#memopt.arg<0>, #memopt.arg<1>]
      : (tensor<2x6x4x3xf32>, tensor<2x6x3x1xf32>) -> tensor<2x6x4x1xf32>
  return %y : tensor<2x6x4x1xf32>
}
