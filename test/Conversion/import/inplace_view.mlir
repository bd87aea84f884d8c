// In-place updates through views keep their order and say what they alias.
// RUN: memopt-translate --import-torchscript %S/../Inputs/inplace_view.pt --input-shape x:3x4 | FileCheck %s

// CHECK: func.func @forward(%[[X:.*]]: tensor<3x4xf32>) -> tensor<4x3xf32>
// A size read from the input stays an op: the view works for any batch.
// CHECK-NEXT: %[[N:.*]] = memopt.op "aten::size"(%[[X]]) [#memopt.arg<0>, 0] {overload = "int"} : (tensor<3x4xf32>) -> i64
// CHECK-NEXT: %[[SHAPE:.*]] = memopt.op "prim::ListConstruct"(%[[N]]) [#memopt.arg<0>, -1] : (i64) -> !memopt.list<i64>
// CHECK-NEXT: %[[Y:.*]] = memopt.op "aten::view"(%[[X]], %[[SHAPE]]) [#memopt.arg<0>, #memopt.arg<1>] {overload = "", views = array<i64: 0>} : (tensor<3x4xf32>, !memopt.list<i64>) -> tensor<3x4xf32>
// CHECK-NEXT: memopt.op "aten::add_"(%[[Y]]) [#memopt.arg<0>, 1.000000e+00, 1] {mutates = array<i64: 0>, overload = "Scalar", views = array<i64: 0>}
// CHECK-NEXT: %[[S0:.*]] = memopt.op "aten::slice"(%[[Y]]) [#memopt.arg<0>, 0, #memopt.none, #memopt.none, 1] {overload = "Tensor", views = array<i64: 0>}
// CHECK-NEXT: %[[S1:.*]] = memopt.op "aten::slice"(%[[S0]]) [#memopt.arg<0>, 1, 1, 3, 1] {overload = "Tensor", views = array<i64: 0>} : (tensor<3x4xf32>) -> tensor<3x2xf32>
// CHECK-NEXT: memopt.op "aten::mul_"(%[[S1]]) [#memopt.arg<0>, 2.000000e+00] {mutates = array<i64: 0>, overload = "Scalar", views = array<i64: 0>}
// CHECK-NEXT: %[[T:.*]] = memopt.op "aten::t"(%[[X]]) [#memopt.arg<0>] {overload = "", views = array<i64: 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %[[R:.*]] = memopt.op "aten::add"(%[[T]]) [#memopt.arg<0>, 1.000000e+00, 1] {overload = "Scalar"}
// CHECK-NEXT: return %[[R]]
