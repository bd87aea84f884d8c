// RUN: memopt-opt %s -memopt-test-memory-model -verify-diagnostics -o /dev/null | FileCheck %s

// A condition computed from an activation (`if h.abs().max() > 4:`): abs
// and max require grad, but their results reach what forward returns only
// through a comparison's boolean mask, which carries no gradient. Autograd
// frees their graph, and the 8192 B abs result max saved, once the
// comparison has run: nothing of them waits for backward. The kept branch
// (its marks as the kernel probe measures them) keeps 8192 B new and its
// operand, and its backward peaks 12288 B above what is live before it.
// CHECK-LABEL: memory-model @condition_on_data
// CHECK-NEXT: saved prim::If 16384
// CHECK-NEXT: forward aten::mul live 8192
// CHECK-NEXT: forward aten::abs live 16384
// CHECK-NEXT: forward aten::max live 16388
// CHECK-NEXT: forward aten::gt live 8197
// CHECK-NEXT: forward prim::If live 24576
// CHECK-NEXT: backward prim::If live 45056
// CHECK-NEXT: backward aten::mul live 36864
// CHECK-NEXT: end-of-forward 24576
// CHECK-NOT: unknown
func.func @condition_on_data(%x: tensor<2x1024xf32>) -> tensor<2x1024xf32> {
  %w = memopt.param "w" : tensor<1024xf32>
  %h = memopt.op "aten::mul"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<2x1024xf32>, tensor<1024xf32>) -> tensor<2x1024xf32>
  %a = memopt.op "aten::abs"(%h) [#memopt.arg<0>] {overload = ""}
      : (tensor<2x1024xf32>) -> tensor<2x1024xf32>
  %m = memopt.op "aten::max"(%a) [#memopt.arg<0>] {overload = ""}
      : (tensor<2x1024xf32>) -> tensor<f32>
  %g = memopt.op "aten::gt"(%m) [#memopt.arg<0>, 4.0] {overload = "Scalar"}
      : (tensor<f32>) -> tensor<i1>
  %c = memopt.op "aten::Bool"(%g) [#memopt.arg<0>] {overload = "Tensor"}
      : (tensor<i1>) -> i1
  %y = memopt.op "prim::If"(%c, %h) [#memopt.arg<0>, #memopt.arg<1>]
      {high_water = #memopt.high_water<forward = 16384, backward = [-1, 12288, 12288, 12288]>,
       measured_saves = #memopt.saves<bytes = 8192, operands = [1]>,
       script = "graph(%0 : bool,\0A      %1 : Tensor):\0A  %2 : Tensor = prim::If(%0)\0A    block0():\0A      %3 : Tensor = aten::tanh(%1)\0A      %4 : Tensor = aten::mul(%3, %1)\0A      -> (%4)\0A    block1():\0A      -> (%1)\0A  return (%2)\0A"}
      : (i1, tensor<2x1024xf32>) -> tensor<2x1024xf32>
  return %y : tensor<2x1024xf32>
}
