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

// A select whose boolean condition is its first argument: its backward
// holds its two gradients only (`where|tgg` 2xlike.a0, priced as the float
// result's size: 2 x 512 bytes, no more than the gradients). Until
// 2026-12-06 the rule was counted in the condition's bytes (8xlike.a0)
// and priced 8 float buffers.
// CHECK-LABEL: memory-model @select
// CHECK: backward aten::where live 2176
// OFF-LABEL: memory-model @select
// OFF: backward aten::where live 2176
func.func @select(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %a = memopt.param "a" : tensor<16xf32>
  %b = memopt.param "b" : tensor<16xf32>
  %n = memopt.op "aten::mul"(%x, %a) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %d = memopt.op "aten::mul"(%x, %b) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %c = memopt.op "aten::gt"(%x, %x) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
  %q = memopt.op "aten::where"(%c, %n, %d) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>] {overload = "self"}
      : (tensor<8x16xi1>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %q : tensor<8x16xf32>
}

// Sixteen bags of 12 tokens from a 200x32 table: the backward sorts the
// 192 indices, four int64 buffers of them beside the table's 25,600-byte
// gradient (`embedding_bag|gtt` +8xlike.a1: 8 x 192 x 4 = 6144 bytes
// above what is live with the gradient).
// CHECK-LABEL: memory-model @bags
// CHECK: backward aten::embedding_bag live 37632
// OFF-LABEL: memory-model @bags
// OFF: backward aten::embedding_bag live 31488
func.func @bags(%idx: tensor<192xi64>, %off: tensor<16xi64>) -> tensor<16x32xf32> {
  %t = memopt.param "table" : tensor<200x32xf32>
  %r:4 = memopt.op "aten::embedding_bag"(%t, %idx, %off) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, false, 0, false, #memopt.none, false, #memopt.none] {overload = "padding_idx"}
      : (tensor<200x32xf32>, tensor<192xi64>, tensor<16xi64>) -> (tensor<16x32xf32>, tensor<192xi64>, tensor<16xi64>, tensor<16xi64>)
  return %r#0 : tensor<16x32xf32>
}
