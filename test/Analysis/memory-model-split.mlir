// RUN: memopt-opt %s -memopt-test-memory-model="kernel-workspaces=0" -verify-diagnostics -o /dev/null | FileCheck %s
// RUN: memopt-opt %s -memopt-test-memory-model -verify-diagnostics -o /dev/null | FileCheck %s --check-prefix=WS

// aten::split (GPT-style attention splits its fused q/k/v projection) has
// a catalog row and a saved-tensor row, like aten::chunk: its parts are
// views of its input and it saves nothing, so it is not an unknown op (no
// warning). The 8x48 projection (1536 bytes) stays alive while its three
// 8x16 parts are used; their product is a new 8x16 tensor (512 bytes) that
// the mul saves its operands for (both are views of the projection).
// CHECK-LABEL: memory-model @split
// CHECK: saved aten::mul 1536
// CHECK: forward aten::linear live 1536
// CHECK: forward aten::split live 1536
// CHECK: forward aten::mul live 2048
// CHECK-NOT: unknown
func.func @split(%x: tensor<8x4xf32>) -> tensor<8x16xf32> {
  %w = memopt.param "qkv.weight" : tensor<48x4xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<8x4xf32>, tensor<48x4xf32>) -> tensor<8x48xf32>
  %parts = memopt.op "aten::split"(%h) [#memopt.arg<0>, 16, 1] {overload = "Tensor"}
      : (tensor<8x48xf32>) -> !memopt.list<tensor<*xf32>>
  %q, %k, %v = memopt.op "prim::ListUnpack"(%parts) [#memopt.arg<0>]
      : (!memopt.list<tensor<*xf32>>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
  %qk = memopt.op "aten::mul"(%q, %k) [#memopt.arg<0>, #memopt.arg<1>]
      : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %qk : tensor<8x16xf32>
}

// Its parts are contiguous when it splits the first dim (dim is argument 2,
// as for chunk): layer_norm then copies nothing; along dim 1 each part is
// strided and layer_norm works on a contiguous copy (4x4xf32 = 64 bytes
// while it runs).
// WS-LABEL: memory-model @split_rows
// WS: forward aten::layer_norm live 192
// WS-LABEL: memory-model @split_columns
// WS: forward aten::layer_norm live 256
func.func @split_rows(%x: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %h = memopt.op "aten::clone"(%x) [#memopt.arg<0>, #memopt.none] : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %parts = memopt.op "aten::split"(%h) [#memopt.arg<0>, 4, 0] {overload = "Tensor"}
      : (tensor<8x4xf32>) -> !memopt.list<tensor<*xf32>>
  %a, %b = memopt.op "prim::ListUnpack"(%parts) [#memopt.arg<0>]
      : (!memopt.list<tensor<*xf32>>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
  %n = memopt.op "aten::layer_norm"(%a) [#memopt.arg<0>, [4], #memopt.none, #memopt.none, 1.000000e-05, true]
      : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %n : tensor<4x4xf32>
}
func.func @split_columns(%x: tensor<4x8xf32>) -> tensor<4x4xf32> {
  %h = memopt.op "aten::clone"(%x) [#memopt.arg<0>, #memopt.none] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %parts = memopt.op "aten::split"(%h) [#memopt.arg<0>, 4, 1] {overload = "Tensor"}
      : (tensor<4x8xf32>) -> !memopt.list<tensor<*xf32>>
  %a, %b = memopt.op "prim::ListUnpack"(%parts) [#memopt.arg<0>]
      : (!memopt.list<tensor<*xf32>>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
  %n = memopt.op "aten::layer_norm"(%a) [#memopt.arg<0>, [4], #memopt.none, #memopt.none, 1.000000e-05, true]
      : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %n : tensor<4x4xf32>
}
