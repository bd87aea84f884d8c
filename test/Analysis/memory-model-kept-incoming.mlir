// RUN: memopt-opt %s -memopt-test-memory-model -verify-diagnostics -o /dev/null | FileCheck %s

// A kept `if` has two backward marks: `backward`, with the incoming
// gradient freed once the branch's first node has consumed it (the engine's
// buffer, as in eager), and `backward_held`, with it live throughout (a
// region holds its output's gradient until the region's backward returns).
// The functions have the same marks; they differ by which one the If's
// backward takes.

// The If's result feeds a mul, whose backward makes its incoming gradient
// (8192 B) as a new buffer: the If's backward peaks `backward` above it.
// CHECK-LABEL: memory-model @incoming_freed
// CHECK:      backward aten::mul live 61440
// CHECK-NEXT: backward prim::If live 57344
func.func @incoming_freed(%x: tensor<2x1024xf32>, %c: i1) -> tensor<2x1024xf32> {
  %w = memopt.param "w" : tensor<1024xf32>
  %h = memopt.op "aten::mul"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<2x1024xf32>, tensor<1024xf32>) -> tensor<2x1024xf32>
  %y = memopt.op "prim::If"(%c, %h) [#memopt.arg<0>, #memopt.arg<1>]
      {high_water = #memopt.high_water<forward = 16384, backward = [-1, 12288, 12288, 12288], backward_held = 20480>,
       measured_saves = #memopt.saves<bytes = 8192, operands = [1]>,
       script = "graph(%0 : bool,\0A      %1 : Tensor):\0A  %2 : Tensor = prim::If(%0)\0A    block0():\0A      %3 : Tensor = aten::tanh(%1)\0A      %4 : Tensor = aten::mul(%3, %1)\0A      -> (%4)\0A    block1():\0A      -> (%1)\0A  return (%2)\0A"}
      : (i1, tensor<2x1024xf32>) -> tensor<2x1024xf32>
  %z = memopt.op "aten::mul"(%y, %w) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<2x1024xf32>, tensor<1024xf32>) -> tensor<2x1024xf32>
  return %z : tensor<2x1024xf32>
}

func.func @incoming_held(%x: tensor<2x1024xf32>, %c: i1) -> tensor<2x1024xf32> {

// Recomputed as a region's output: the region holds the gradient of its
// output, so the If's backward peaks `backward_held` above the same live
// bytes (45056).
// CHECK-LABEL: memory-model @incoming_held
// CHECK:      recompute prim::If live 53248
// CHECK-NEXT: backward prim::If live 65536
// CHECK-NEXT: backward checkpoint "gate" live 45056
  %w = memopt.param "w" : tensor<1024xf32>
  %h = memopt.op "aten::mul"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<2x1024xf32>, tensor<1024xf32>) -> tensor<2x1024xf32>
  %y = memopt.checkpoint "gate"(%c, %h) policies [#memopt.keep, #memopt.keep] : (i1, tensor<2x1024xf32>) -> tensor<2x1024xf32> {
  ^bb0(%cc: i1, %hh: tensor<2x1024xf32>):
    %r = memopt.op "prim::If"(%cc, %hh) [#memopt.arg<0>, #memopt.arg<1>]
        {high_water = #memopt.high_water<forward = 16384, backward = [-1, 12288, 12288, 12288], backward_held = 20480>,
         measured_saves = #memopt.saves<bytes = 8192, operands = [1]>,
         script = "graph(%0 : bool,\0A      %1 : Tensor):\0A  %2 : Tensor = prim::If(%0)\0A    block0():\0A      %3 : Tensor = aten::tanh(%1)\0A      %4 : Tensor = aten::mul(%3, %1)\0A      -> (%4)\0A    block1():\0A      -> (%1)\0A  return (%2)\0A"}
        : (i1, tensor<2x1024xf32>) -> tensor<2x1024xf32>
    memopt.yield %r : tensor<2x1024xf32>
  }
  %z = memopt.op "aten::mul"(%y, %w) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<2x1024xf32>, tensor<1024xf32>) -> tensor<2x1024xf32>
  return %z : tensor<2x1024xf32>
}

// Returned: the caller holds the loss gradient it passes to backward, so
// the If's backward takes `backward_held` above the 32768 B live then.
// CHECK-LABEL: memory-model @returned
// CHECK:      backward prim::If live 53248
func.func @returned(%x: tensor<2x1024xf32>, %c: i1) -> tensor<2x1024xf32> {
  %w = memopt.param "w" : tensor<1024xf32>
  %h = memopt.op "aten::mul"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<2x1024xf32>, tensor<1024xf32>) -> tensor<2x1024xf32>
  %y = memopt.op "prim::If"(%c, %h) [#memopt.arg<0>, #memopt.arg<1>]
      {high_water = #memopt.high_water<forward = 16384, backward = [-1, 12288, 12288, 12288], backward_held = 20480>,
       measured_saves = #memopt.saves<bytes = 8192, operands = [1]>,
       script = "graph(%0 : bool,\0A      %1 : Tensor):\0A  %2 : Tensor = prim::If(%0)\0A    block0():\0A      %3 : Tensor = aten::tanh(%1)\0A      %4 : Tensor = aten::mul(%3, %1)\0A      -> (%4)\0A    block1():\0A      -> (%1)\0A  return (%2)\0A"}
      : (i1, tensor<2x1024xf32>) -> tensor<2x1024xf32>
  return %y : tensor<2x1024xf32>
}
