// RUN: memopt-opt %s -memopt-test-memory-model="kernel-workspaces=0" -o /dev/null | FileCheck %s

// A result the kernel probe measured as a dense tensor with its dims
// permuted (`dense_order`: CPU flash attention returns its (B, T, H, D)
// output as (B, H, T, D)) is contiguous again once transposed back:
// `y.transpose(1, 2).contiguous()` returns it as it is (4096 live), where
// a contiguous operand's transpose is copied (8192). A transpose undone by
// another is contiguous too. PyTorch's contiguous() copies only a tensor
// that is not.
// CHECK-LABEL: memory-model @measured_transposed
// CHECK: forward aten::contiguous live 4096
// CHECK-LABEL: memory-model @contiguous_operand
// CHECK: forward aten::contiguous live 8192
// CHECK-LABEL: memory-model @transposed_twice
// CHECK: forward aten::contiguous live 4096
func.func @measured_transposed(%x: tensor<2x4x8x16xf32>) -> tensor<2x8x64xf32> {
  %w = memopt.param "scale" : tensor<1xf32>
  %a = memopt.op "aten::mul"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor", dense_order = array<i64: 0, 2, 1, 3>} : (tensor<2x4x8x16xf32>, tensor<1xf32>) -> tensor<2x4x8x16xf32>
  %t = memopt.op "aten::transpose"(%a) [#memopt.arg<0>, 1, 2] {overload = "int"} : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  %c = memopt.op "aten::contiguous"(%t) [#memopt.arg<0>, 0] : (tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
  %v = memopt.op "aten::view"(%c) [#memopt.arg<0>, [2, 8, 64]] : (tensor<2x8x4x16xf32>) -> tensor<2x8x64xf32>
  %r = memopt.op "aten::relu"(%v) [#memopt.arg<0>] : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return %r : tensor<2x8x64xf32>
}
func.func @contiguous_operand(%x: tensor<2x4x8x16xf32>) -> tensor<2x8x64xf32> {
  %w = memopt.param "scale" : tensor<1xf32>
  %a = memopt.op "aten::mul"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} : (tensor<2x4x8x16xf32>, tensor<1xf32>) -> tensor<2x4x8x16xf32>
  %t = memopt.op "aten::transpose"(%a) [#memopt.arg<0>, 1, 2] {overload = "int"} : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  %c = memopt.op "aten::contiguous"(%t) [#memopt.arg<0>, 0] : (tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
  %v = memopt.op "aten::view"(%c) [#memopt.arg<0>, [2, 8, 64]] : (tensor<2x8x4x16xf32>) -> tensor<2x8x64xf32>
  %r = memopt.op "aten::relu"(%v) [#memopt.arg<0>] : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return %r : tensor<2x8x64xf32>
}
func.func @transposed_twice(%x: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %w = memopt.param "scale" : tensor<1xf32>
  %a = memopt.op "aten::mul"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} : (tensor<2x4x8x16xf32>, tensor<1xf32>) -> tensor<2x4x8x16xf32>
  %t = memopt.op "aten::transpose"(%a) [#memopt.arg<0>, 1, 2] {overload = "int"} : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  %u = memopt.op "aten::transpose"(%t) [#memopt.arg<0>, 2, 1] {overload = "int"} : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %c = memopt.op "aten::contiguous"(%u) [#memopt.arg<0>, 0] : (tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %r = memopt.op "aten::relu"(%c) [#memopt.arg<0>] : (tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %r : tensor<2x4x8x16xf32>
}
