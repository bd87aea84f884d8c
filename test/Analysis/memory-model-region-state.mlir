// RUN: memopt-opt %s -memopt-test-memory-model -o /dev/null | FileCheck %s

// A region that updates module state in place (batch-norm running
// statistics, the num_batches_tracked counter) must not update it twice:
// the runtime's memopt::checkpoint copies that state before the forward,
// keeps the copy until the region's backward and recomputes on a second
// copy. Here: running_mean and running_var (64 floats, 256 bytes each) and
// the counter (8 bytes) = 520 bytes, next to the kept input h (4x64xf32 =
// 1024 bytes).
// CHECK-LABEL: memory-model @state
// CHECK: saved checkpoint "bn" 1544
// CHECK: forward checkpoint "bn" live 2568
// Backward holds h, the kept copy, the returned value and its gradient
// (1024 + 520 + 1024 + 1024) and recomputes on a second copy (+ 520).
// CHECK: recompute aten::add_ live 4112
// CHECK: end-of-forward 2568
func.func @state(%x: tensor<4x16xf32>) -> tensor<4x64xf32> {
  %w = memopt.param "fc.weight" : tensor<64x16xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<4x16xf32>, tensor<64x16xf32>) -> tensor<4x64xf32>
  %c = memopt.checkpoint "bn" (%h) policies [#memopt.keep]
      : (tensor<4x64xf32>) -> tensor<4x64xf32> {
  ^bb0(%a: tensor<4x64xf32>):
    %n = memopt.buffer "bn.num_batches_tracked" : tensor<i64>
    %n1 = memopt.op "aten::add_"(%n) [#memopt.arg<0>, 1, 1] {mutates = array<i64: 0>, overload = "Scalar", views = array<i64: 0>} : (tensor<i64>) -> tensor<i64>
    %g = memopt.param "bn.weight" : tensor<64xf32>
    %b = memopt.param "bn.bias" : tensor<64xf32>
    %m = memopt.buffer "bn.running_mean" : tensor<64xf32>
    %v = memopt.buffer "bn.running_var" : tensor<64xf32>
    %y = memopt.op "aten::batch_norm"(%a, %g, %b, %m, %v) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, true, 1.000000e-01, 1.000000e-05, true] {mutates = array<i64: 3, 4>, overload = ""} : (tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
    memopt.yield %y : tensor<4x64xf32>
  }
  return %c : tensor<4x64xf32>
}

// Read-only state (a buffer only read) is not copied. A buffer written by a
// region and again by a region nested in it is one copy for the outer
// region (64 floats: 1024 + 256); the inner one, run with grad in the
// outer's recompute, copies it again.
// CHECK-LABEL: memory-model @read_only
// CHECK: saved checkpoint "ro" 1024
// CHECK-LABEL: memory-model @nested
// CHECK: saved checkpoint "outer" 1280
// CHECK: recompute checkpoint "inner" live 4864
func.func @read_only(%x: tensor<4x16xf32>) -> tensor<4x64xf32> {
  %w = memopt.param "fc.weight" : tensor<64x16xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<4x16xf32>, tensor<64x16xf32>) -> tensor<4x64xf32>
  %c = memopt.checkpoint "ro" (%h) policies [#memopt.keep]
      : (tensor<4x64xf32>) -> tensor<4x64xf32> {
  ^bb0(%a: tensor<4x64xf32>):
    %m = memopt.buffer "scale" : tensor<64xf32>
    %y = memopt.op "aten::mul"(%a, %m) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} : (tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
    memopt.yield %y : tensor<4x64xf32>
  }
  return %c : tensor<4x64xf32>
}
func.func @nested(%x: tensor<4x16xf32>) -> tensor<4x64xf32> {
  %w = memopt.param "fc.weight" : tensor<64x16xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<4x16xf32>, tensor<64x16xf32>) -> tensor<4x64xf32>
  %c = memopt.checkpoint "outer" (%h) policies [#memopt.keep]
      : (tensor<4x64xf32>) -> tensor<4x64xf32> {
  ^bb0(%a: tensor<4x64xf32>):
    %m = memopt.buffer "acc" : tensor<64xf32>
    %s = memopt.op "aten::sum"(%a) [#memopt.arg<0>, [0], false, #memopt.none] {overload = "dim_IntList"} : (tensor<4x64xf32>) -> tensor<64xf32>
    %m1 = memopt.op "aten::add_"(%m, %s) [#memopt.arg<0>, #memopt.arg<1>, 1] {mutates = array<i64: 0>, overload = "Tensor", views = array<i64: 0>} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %i = memopt.checkpoint "inner" (%a) policies [#memopt.keep]
        : (tensor<4x64xf32>) -> tensor<4x64xf32> {
    ^bb0(%b: tensor<4x64xf32>):
      %m2 = memopt.buffer "acc" : tensor<64xf32>
      %s2 = memopt.op "aten::sum"(%b) [#memopt.arg<0>, [0], false, #memopt.none] {overload = "dim_IntList"} : (tensor<4x64xf32>) -> tensor<64xf32>
      %m3 = memopt.op "aten::add_"(%m2, %s2) [#memopt.arg<0>, #memopt.arg<1>, 1] {mutates = array<i64: 0>, overload = "Tensor", views = array<i64: 0>} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
      %r = memopt.op "aten::relu"(%b) [#memopt.arg<0>] : (tensor<4x64xf32>) -> tensor<4x64xf32>
      memopt.yield %r : tensor<4x64xf32>
    }
    memopt.yield %i : tensor<4x64xf32>
  }
  return %c : tensor<4x64xf32>
}
