// RUN: memopt-opt %s --split-input-file --memopt-functionalize-lists | FileCheck %s

// An unrolled `spikes.append(s)` loop followed by `torch.stack(spikes)`.
// CHECK-LABEL: func.func @appended_then_stacked
// CHECK-NOT: aten::append
// CHECK: %[[A:.*]] = memopt.op "aten::relu"
// CHECK: %[[B:.*]] = memopt.op "aten::tanh"
// CHECK: %[[L:.*]] = memopt.op "prim::ListConstruct"(%[[A]], %[[B]]) [#memopt.arg<0>, #memopt.arg<1>]
// CHECK: memopt.op "aten::stack"(%[[L]])
func.func @appended_then_stacked(%x: tensor<2x3xf32>) -> tensor<2x2x3xf32> {
  %l = memopt.op "prim::ListConstruct"() [] : () -> !memopt.list<tensor<*xf32>>
  %a = memopt.op "aten::relu"(%x) [#memopt.arg<0>] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %0 = memopt.op "aten::append"(%l, %a) [#memopt.arg<0>, #memopt.arg<1>] {mutates = array<i64: 0>, views = array<i64: 0>} : (!memopt.list<tensor<*xf32>>, tensor<2x3xf32>) -> !memopt.list<tensor<*xf32>>
  %b = memopt.op "aten::tanh"(%x) [#memopt.arg<0>] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = memopt.op "aten::append"(%l, %b) [#memopt.arg<0>, #memopt.arg<1>] {mutates = array<i64: 0>, views = array<i64: 0>} : (!memopt.list<tensor<*xf32>>, tensor<2x3xf32>) -> !memopt.list<tensor<*xf32>>
  %s = memopt.op "aten::stack"(%l) [#memopt.arg<0>, 0] : (!memopt.list<tensor<*xf32>>) -> tensor<2x2x3xf32>
  return %s : tensor<2x2x3xf32>
}

// -----

// Read between two appends: the reader must see one element, so the list
// stays as it is.
// CHECK-LABEL: func.func @read_between_appends
// CHECK: memopt.op "prim::ListConstruct"() []
// CHECK-COUNT-2: aten::append
func.func @read_between_appends(%x: tensor<2x3xf32>) -> tensor<?x2x3xf32> {
  %l = memopt.op "prim::ListConstruct"() [] : () -> !memopt.list<tensor<*xf32>>
  %0 = memopt.op "aten::append"(%l, %x) [#memopt.arg<0>, #memopt.arg<1>] {mutates = array<i64: 0>, views = array<i64: 0>} : (!memopt.list<tensor<*xf32>>, tensor<2x3xf32>) -> !memopt.list<tensor<*xf32>>
  %n = memopt.op "aten::len"(%l) [#memopt.arg<0>] : (!memopt.list<tensor<*xf32>>) -> i64
  %1 = memopt.op "aten::append"(%l, %x) [#memopt.arg<0>, #memopt.arg<1>] {mutates = array<i64: 0>, views = array<i64: 0>} : (!memopt.list<tensor<*xf32>>, tensor<2x3xf32>) -> !memopt.list<tensor<*xf32>>
  %s = memopt.op "aten::stack"(%l) [#memopt.arg<0>, 0] : (!memopt.list<tensor<*xf32>>) -> tensor<?x2x3xf32>
  return %s : tensor<?x2x3xf32>
}

// -----

// A list another op writes (not an append) is not rebuilt either.
// CHECK-LABEL: func.func @other_writer
// CHECK: aten::append
// CHECK: aten::clear
func.func @other_writer(%x: tensor<2x3xf32>) {
  %l = memopt.op "prim::ListConstruct"() [] : () -> !memopt.list<tensor<*xf32>>
  %0 = memopt.op "aten::append"(%l, %x) [#memopt.arg<0>, #memopt.arg<1>] {mutates = array<i64: 0>, views = array<i64: 0>} : (!memopt.list<tensor<*xf32>>, tensor<2x3xf32>) -> !memopt.list<tensor<*xf32>>
  memopt.op "aten::clear"(%l) [#memopt.arg<0>] {mutates = array<i64: 0>} : (!memopt.list<tensor<*xf32>>) -> ()
  return
}
