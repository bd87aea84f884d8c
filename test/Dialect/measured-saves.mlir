// RUN: memopt-opt %s | FileCheck %s
// RUN: memopt-opt %s | memopt-opt | FileCheck %s
// What the kernel probe measured an op to keep round-trips: kept operands,
// elements of list operands as (operand, element) pairs, kept results.

// CHECK-LABEL: func.func @saves
// CHECK: measured_saves = #memopt.saves<bytes = 0>
// CHECK: measured_saves = #memopt.saves<bytes = 8, operands = [0]>
// CHECK: measured_saves = #memopt.saves<bytes = 4608, elements = [0, 1]>
// CHECK: measured_saves = #memopt.saves<bytes = 0, operands = [0], results = [0]>
func.func @saves(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = memopt.op "aten::triu"(%x) [#memopt.arg<0>, 0] {measured_saves = #memopt.saves<bytes = 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = memopt.op "aten::relu"(%a) [#memopt.arg<0>] {measured_saves = #memopt.saves<bytes = 8, operands = [0]>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %l = memopt.op "prim::ListConstruct"(%b, %y) [#memopt.arg<0>, #memopt.arg<1>] : (tensor<2x3xf32>, tensor<2x3xf32>) -> !memopt.list<tensor<*xf32>>
  %c = memopt.op "aten::einsum"(%l) ["ij,ij->ij", #memopt.arg<0>, #memopt.none] {measured_saves = #memopt.saves<bytes = 4608, elements = [0, 1]>} : (!memopt.list<tensor<*xf32>>) -> tensor<2x3xf32>
  %d = memopt.op "aten::logcumsumexp"(%c) [#memopt.arg<0>, 1] {measured_saves = #memopt.saves<bytes = 0, operands = [0], results = [0]>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %d : tensor<2x3xf32>
}

// The layout the probe measured for the first result round-trips.
// CHECK-LABEL: func.func @dense_order
// CHECK: dense_order = array<i64: 0, 2, 1, 3>
func.func @dense_order(%x: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %a = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {dense_order = array<i64: 0, 2, 1, 3>} : (tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %a : tensor<2x4x8x16xf32>
}
