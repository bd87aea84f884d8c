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
