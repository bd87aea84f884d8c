// RUN: memopt-opt %s -memopt-test-memory-model="kernel-workspaces=0" -verify-diagnostics -o /dev/null | FileCheck %s

// TorchScript's generic list operations make no tensor: a concatenation
// (`[q] + k_v.chunk(2, -1)`, as nn.MultiheadAttention's packed input
// projection for cross-attention returns its q, k and v), a slice or a
// copy of a list holds the elements of its list operands. The 8x48
// projection (1536 bytes) stays alive while the parts read back from the
// concatenation are used, and a part's gradient reaches the chunk that
// made it.
// CHECK-LABEL: memory-model @concatenated
// CHECK: forward aten::clone live 512
// CHECK: forward aten::linear live 2048
// CHECK: forward aten::chunk live 2048
// CHECK: forward aten::mul live 2560
// CHECK: backward aten::chunk
// CHECK: backward aten::linear
// CHECK-NOT: unknown
func.func @concatenated(%x: tensor<8x4xf32>, %q: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %w = memopt.param "kv.weight" : tensor<48x4xf32>
  %q2 = memopt.op "aten::clone"(%q) [#memopt.arg<0>, #memopt.none] : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<8x4xf32>, tensor<48x4xf32>) -> tensor<8x48xf32>
  %parts = memopt.op "aten::chunk"(%h) [#memopt.arg<0>, 3, -1]
      : (tensor<8x48xf32>) -> !memopt.list<tensor<*xf32>>
  %first = memopt.op "prim::ListConstruct"(%q2) [#memopt.arg<0>]
      : (tensor<8x16xf32>) -> !memopt.list<tensor<*xf32>>
  %all = memopt.op "aten::add"(%first, %parts) [#memopt.arg<0>, #memopt.arg<1>] {overload = "t"}
      : (!memopt.list<tensor<*xf32>>, !memopt.list<tensor<*xf32>>) -> !memopt.list<tensor<*xf32>>
  %a, %b, %c, %d = memopt.op "prim::ListUnpack"(%all) [#memopt.arg<0>]
      : (!memopt.list<tensor<*xf32>>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
  %y = memopt.op "aten::mul"(%a, %c) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// A slice of the parts (`parts[1:]`) and a copy of it (`list(...)`): the
// element read is the projection's third part, so the projection stays
// alive through the mul as above.
// CHECK-LABEL: memory-model @sliced
// CHECK: forward aten::linear live 1536
// CHECK: forward aten::mul live 2048
// CHECK: backward aten::chunk
// CHECK-NOT: unknown
func.func @sliced(%x: tensor<8x4xf32>, %q: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %w = memopt.param "kv.weight" : tensor<48x4xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<8x4xf32>, tensor<48x4xf32>) -> tensor<8x48xf32>
  %parts = memopt.op "aten::chunk"(%h) [#memopt.arg<0>, 3, -1]
      : (tensor<8x48xf32>) -> !memopt.list<tensor<*xf32>>
  %tail = memopt.op "aten::slice"(%parts) [#memopt.arg<0>, 1, #memopt.none, 1] {overload = "t"}
      : (!memopt.list<tensor<*xf32>>) -> !memopt.list<tensor<*xf32>>
  %copy = memopt.op "aten::list"(%tail) [#memopt.arg<0>] {overload = "t"}
      : (!memopt.list<tensor<*xf32>>) -> !memopt.list<tensor<*xf32>>
  %v = memopt.op "aten::__getitem__"(%copy) [#memopt.arg<0>, 1] {overload = "t"}
      : (!memopt.list<tensor<*xf32>>) -> tensor<8x16xf32>
  %y = memopt.op "aten::mul"(%v, %q) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
