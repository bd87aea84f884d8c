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

// -----

// A U-Net's skip connections read back in reverse: `skips[len(skips) - 1 -
// i]` unrolled. Each read becomes the element; the list, its length and the
// index arithmetic go.
// CHECK-LABEL: func.func @constant_reads
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-DAG: %[[A:.*]] = memopt.op "aten::relu"
// CHECK-DAG: %[[B:.*]] = memopt.op "aten::tanh"
// CHECK-DAG: %[[C:.*]] = memopt.op "aten::sigmoid"
// CHECK-NOT: prim::ListConstruct
// CHECK-NOT: aten::__getitem__
// CHECK-NOT: aten::len
// CHECK-NOT: aten::sub
// CHECK: return %[[C]], %[[B]], %[[A]], %[[C]]
func.func @constant_reads(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %l = memopt.op "prim::ListConstruct"() [] : () -> !memopt.list<tensor<*xf32>>
  %a = memopt.op "aten::relu"(%x) [#memopt.arg<0>] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %0 = memopt.op "aten::append"(%l, %a) [#memopt.arg<0>, #memopt.arg<1>] {mutates = array<i64: 0>, views = array<i64: 0>} : (!memopt.list<tensor<*xf32>>, tensor<2x3xf32>) -> !memopt.list<tensor<*xf32>>
  %b = memopt.op "aten::tanh"(%x) [#memopt.arg<0>] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = memopt.op "aten::append"(%l, %b) [#memopt.arg<0>, #memopt.arg<1>] {mutates = array<i64: 0>, views = array<i64: 0>} : (!memopt.list<tensor<*xf32>>, tensor<2x3xf32>) -> !memopt.list<tensor<*xf32>>
  %c = memopt.op "aten::sigmoid"(%x) [#memopt.arg<0>] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = memopt.op "aten::append"(%l, %c) [#memopt.arg<0>, #memopt.arg<1>] {mutates = array<i64: 0>, views = array<i64: 0>} : (!memopt.list<tensor<*xf32>>, tensor<2x3xf32>) -> !memopt.list<tensor<*xf32>>
  %n = memopt.op "aten::len"(%l) [#memopt.arg<0>] {overload = "t"} : (!memopt.list<tensor<*xf32>>) -> i64
  %i0 = memopt.op "aten::sub"(%n) [#memopt.arg<0>, 1] {overload = "int"} : (i64) -> i64
  %r0 = memopt.op "aten::__getitem__"(%l, %i0) [#memopt.arg<0>, #memopt.arg<1>] {overload = "t"} : (!memopt.list<tensor<*xf32>>, i64) -> tensor<2x3xf32>
  %i1 = memopt.op "aten::sub"(%i0) [#memopt.arg<0>, 1] {overload = "int"} : (i64) -> i64
  %r1 = memopt.op "aten::__getitem__"(%l, %i1) [#memopt.arg<0>, #memopt.arg<1>] {overload = "t"} : (!memopt.list<tensor<*xf32>>, i64) -> tensor<2x3xf32>
  %r2 = memopt.op "aten::__getitem__"(%l) [#memopt.arg<0>, -3] {overload = "t"} : (!memopt.list<tensor<*xf32>>) -> tensor<2x3xf32>
  %r3 = memopt.op "aten::__getitem__"(%l) [#memopt.arg<0>, -1] {overload = "t"} : (!memopt.list<tensor<*xf32>>) -> tensor<2x3xf32>
  return %r0, %r1, %r2, %r3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Reads stay where the index is not known (a function argument), out of
// range, or of another type than the element; the list stays while read.
// CHECK-LABEL: func.func @reads_kept
// CHECK: %[[L:.*]] = memopt.op "prim::ListConstruct"
// CHECK: memopt.op "aten::__getitem__"(%[[L]], %{{.*}}) [#memopt.arg<0>, #memopt.arg<1>]
// CHECK: memopt.op "aten::__getitem__"(%[[L]]) [#memopt.arg<0>, 2]
// CHECK: memopt.op "aten::__getitem__"(%[[L]]) [#memopt.arg<0>, 0]
func.func @reads_kept(%x: tensor<2x3xf32>, %k: i64) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<*xf32>) {
  %l = memopt.op "prim::ListConstruct"() [] : () -> !memopt.list<tensor<*xf32>>
  %0 = memopt.op "aten::append"(%l, %x) [#memopt.arg<0>, #memopt.arg<1>] {mutates = array<i64: 0>, views = array<i64: 0>} : (!memopt.list<tensor<*xf32>>, tensor<2x3xf32>) -> !memopt.list<tensor<*xf32>>
  %1 = memopt.op "aten::append"(%l, %x) [#memopt.arg<0>, #memopt.arg<1>] {mutates = array<i64: 0>, views = array<i64: 0>} : (!memopt.list<tensor<*xf32>>, tensor<2x3xf32>) -> !memopt.list<tensor<*xf32>>
  %r0 = memopt.op "aten::__getitem__"(%l, %k) [#memopt.arg<0>, #memopt.arg<1>] {overload = "t"} : (!memopt.list<tensor<*xf32>>, i64) -> tensor<2x3xf32>
  %r1 = memopt.op "aten::__getitem__"(%l) [#memopt.arg<0>, 2] {overload = "t"} : (!memopt.list<tensor<*xf32>>) -> tensor<2x3xf32>
  %r2 = memopt.op "aten::__getitem__"(%l) [#memopt.arg<0>, 0] {overload = "t"} : (!memopt.list<tensor<*xf32>>) -> tensor<*xf32>
  return %r0, %r1, %r2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<*xf32>
}

// -----

// A list an op other than append writes (`aten::_set_item`) is not read
// through: the element at an index may have changed.
// CHECK-LABEL: func.func @written_list
// CHECK: aten::_set_item
// CHECK: memopt.op "aten::__getitem__"
func.func @written_list(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %l = memopt.op "prim::ListConstruct"(%x) [#memopt.arg<0>] : (tensor<2x3xf32>) -> !memopt.list<tensor<*xf32>>
  %0 = memopt.op "aten::_set_item"(%l, %y) [#memopt.arg<0>, 0, #memopt.arg<1>] {mutates = array<i64: 0>, overload = "t"} : (!memopt.list<tensor<*xf32>>, tensor<2x3xf32>) -> !memopt.list<tensor<*xf32>>
  %r = memopt.op "aten::__getitem__"(%l) [#memopt.arg<0>, 0] {overload = "t"} : (!memopt.list<tensor<*xf32>>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
