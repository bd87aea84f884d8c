// RUN: memopt-opt %s -memopt-test-memory-model="kernel-workspaces=0" -verify-diagnostics -o /dev/null | FileCheck %s

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
