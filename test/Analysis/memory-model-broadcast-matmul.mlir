// RUN: memopt-opt %s -memopt-test-memory-model="kernel-workspaces=0" -verify-diagnostics -o /dev/null | FileCheck %s

// ATen's batched matmul expands both operands to the common batch and
// reshapes each to one bmm batch; an operand the batch dims broadcast (a
// weight shared by every sample, capsule routing's W @ u) is copied, and
// bmm saves the copy: 2 x 6 x (4x3) floats = 576 bytes for the weight, not
// its own 6 x (4x3) = 288 (resident: a parameter). The samples' operand
// is not broadcast: it is saved as it is (2 x 6 x 3x1 floats = 144 bytes).
// Backward: the product's node makes the weight's gradient at the common
// batch (576 bytes, beside the saved copy) and the samples' (144); the
// expand's node sums the first to the weight's shape (288) once the copy
// is freed. From 1104 live (saved 720, result 192, its gradient 192):
// 1104 + 576 + 144 = 1824, as a training step measures (eager, PyTorch
// 1.13, the counting allocator). Before, the copy-sized gradient was not
// counted (1536, 16 % under).
// CHECK-LABEL: memory-model @broadcast_weight
// CHECK: saved aten::matmul 720
// CHECK: backward aten::matmul live 1824
// CHECK: peak 1824 at backward aten::matmul
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
