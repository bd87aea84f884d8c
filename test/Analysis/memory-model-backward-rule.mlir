// RUN: memopt-opt %s -memopt-test-memory-model -verify-diagnostics -o /dev/null | FileCheck %s
// RUN: memopt-opt %s -memopt-test-memory-model="kernel-workspaces=0" -verify-diagnostics -o /dev/null | FileCheck %s --check-prefix=OFF

// A division whose divisor needs a gradient: its backward holds
// -grad * self / (other * other) beside the two gradients, four buffers
// of 8x16 floats (512 bytes each) at its highest (the saved-tensor table's
// backward column, `div|gg` 4xlike.a0): 2048 bytes above the 2048 live
// when it starts (the two saved operands, the result, its gradient),
// where its two gradients alone reach 1024 above. Without kernel
// workspaces the model counts the gradients only.
// CHECK-LABEL: memory-model @divide
// CHECK: backward aten::div live 4096
// OFF-LABEL: memory-model @divide
// OFF: backward aten::div live 3072
func.func @divide(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %a = memopt.param "a" : tensor<16xf32>
  %b = memopt.param "b" : tensor<16xf32>
  %n = memopt.op "aten::mul"(%x, %a) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %d = memopt.op "aten::mul"(%x, %b) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %q = memopt.op "aten::div"(%n, %d) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %q : tensor<8x16xf32>
}

// A product: its gradients are all its backward allocates (no rule).
// CHECK-LABEL: memory-model @multiply
// CHECK: backward aten::mul live 3072
func.func @multiply(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %a = memopt.param "a" : tensor<16xf32>
  %b = memopt.param "b" : tensor<16xf32>
  %n = memopt.op "aten::mul"(%x, %a) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %d = memopt.op "aten::mul"(%x, %b) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %q = memopt.op "aten::mul"(%n, %d) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %q : tensor<8x16xf32>
}
