// RUN: memopt-opt %s -memopt-test-binary-values -verify-diagnostics -o /dev/null
// RUN: memopt-opt %s -memopt-test-binary-values="assume-binary=features.3" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ASSUME

// A LIF neuron: v = v + (x - v) / tau; spike = (v >= 1).to(float).
func.func @lif_cast(%x: tensor<2x8xf32>, %v0: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %d = memopt.op "aten::sub"(%x, %v0) [#memopt.arg<0>, #memopt.arg<1>, 1] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %q = memopt.op "aten::div"(%d) [#memopt.arg<0>, 2.0] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %sg0 = memopt.op "aten::neg"(%q) [#memopt.arg<0>] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %v = memopt.op "aten::add"(%v0, %q) [#memopt.arg<0>, #memopt.arg<1>, 1] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // expected-remark @below {{result #0 is binary}}
  %b = memopt.op "aten::ge"(%v) [#memopt.arg<0>, 1.0] : (tensor<2x8xf32>) -> tensor<2x8xi1>
  // expected-remark @below {{result #0 is binary}}
  %s = memopt.op "aten::to"(%b) [#memopt.arg<0>, 6, false, false, #memopt.none] : (tensor<2x8xi1>) -> tensor<2x8xf32>
  // Views, pooling, products, cat and 1 - s keep spikes binary.
  // expected-remark @below {{result #0 is binary}}
  %r = memopt.op "aten::view"(%s) [#memopt.arg<0>, [16]] : (tensor<2x8xf32>) -> tensor<16xf32>
  // expected-remark @below {{result #0 is binary}}
  %p = memopt.op "aten::mul"(%s, %s) [#memopt.arg<0>, #memopt.arg<1>] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // expected-remark @below {{result #0 is binary}}
  %n = memopt.op "aten::rsub"(%s) [#memopt.arg<0>, 1, 1] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // 1 + (-s), TorchScript's spelling of 1.0 - s; -s itself is not binary.
  %ng = memopt.op "aten::neg"(%s) [#memopt.arg<0>] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // expected-remark @below {{result #0 is binary}}
  %n1 = memopt.op "aten::add"(%ng) [#memopt.arg<0>, 1.000000e+00, 1] {overload = "Scalar"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n2 = memopt.op "aten::add"(%ng) [#memopt.arg<0>, 2.000000e+00, 1] {overload = "Scalar"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n3 = memopt.op "aten::add"(%sg0) [#memopt.arg<0>, 1.000000e+00, 1] {overload = "Scalar"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // expected-remark @below {{result #0 is binary}}
  %l = memopt.op "prim::ListConstruct"(%s, %n) [#memopt.arg<0>, #memopt.arg<1>] : (tensor<2x8xf32>, tensor<2x8xf32>) -> !memopt.list<tensor<2x8xf32>>
  // expected-remark @below {{result #0 is binary}}
  %c = memopt.op "aten::cat"(%l) [#memopt.arg<0>, 0] : (!memopt.list<tensor<2x8xf32>>) -> tensor<4x8xf32>
  // expected-remark @below {{result #0 is binary}}
  %s4 = memopt.op "aten::view"(%c) [#memopt.arg<0>, [1, 1, 4, 8]] : (tensor<4x8xf32>) -> tensor<1x1x4x8xf32>
  // expected-remark @below {{result #0 is binary}}
  %mp = memopt.op "aten::max_pool2d"(%s4) [#memopt.arg<0>, [2, 2], [2, 2], [0, 0], [1, 1], false] : (tensor<1x1x4x8xf32>) -> tensor<1x1x2x4xf32>
  // expected-remark @below {{result #0 is binary}}
  %h = memopt.op "aten::heaviside"(%v, %s) [#memopt.arg<0>, #memopt.arg<1>] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // Look-alikes that are not binary.
  %sg = memopt.op "aten::sigmoid"(%v) [#memopt.arg<0>] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %half = memopt.op "aten::mul"(%s) [#memopt.arg<0>, 5.000000e-01] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %drop = memopt.op "aten::dropout"(%s) [#memopt.arg<0>, 5.000000e-01, true] {nondeterministic} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %sum = memopt.op "aten::add"(%s, %p) [#memopt.arg<0>, #memopt.arg<1>, 1] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %avg = memopt.op "aten::avg_pool2d"(%s4) [#memopt.arg<0>, [2, 2], [2, 2], [0, 0], false, true, #memopt.none] : (tensor<1x1x4x8xf32>) -> tensor<1x1x2x4xf32>
  return %s : tensor<2x8xf32>
}

// The straight-through surrogate: spike = hard + (soft - soft.detach()).
func.func @straight_through(%v: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-remark @below {{result #0 is binary}}
  %b = memopt.op "aten::ge"(%v) [#memopt.arg<0>, 0.0] : (tensor<2x8xf32>) -> tensor<2x8xi1>
  // expected-remark @below {{result #0 is binary}}
  %hard = memopt.op "aten::type_as"(%b, %v) [#memopt.arg<0>, #memopt.arg<1>] : (tensor<2x8xi1>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %soft = memopt.op "aten::sigmoid"(%v) [#memopt.arg<0>] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %det = memopt.op "aten::detach"(%soft) [#memopt.arg<0>] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %zero = memopt.op "aten::sub"(%soft, %det) [#memopt.arg<0>, #memopt.arg<1>, 1] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // expected-remark @below {{result #0 is binary}}
  %spike = memopt.op "aten::add"(%hard, %zero) [#memopt.arg<0>, #memopt.arg<1>, 1] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // (hard - soft).detach() + soft is not exactly hard in floating point.
  %diff = memopt.op "aten::sub"(%hard, %soft) [#memopt.arg<0>, #memopt.arg<1>, 1] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %dd = memopt.op "aten::detach"(%diff) [#memopt.arg<0>] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %other = memopt.op "aten::add"(%dd, %soft) [#memopt.arg<0>, #memopt.arg<1>, 1] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // soft - detach(something else) is not zero.
  %det2 = memopt.op "aten::detach"(%v) [#memopt.arg<0>] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %nz = memopt.op "aten::sub"(%soft, %det2) [#memopt.arg<0>, #memopt.arg<1>, 1] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %bad = memopt.op "aten::add"(%hard, %nz) [#memopt.arg<0>, #memopt.arg<1>, 1] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %spike : tensor<2x8xf32>
}

// An in-place write of non-binary values makes every alias non-binary.
func.func @mutation(%v: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-remark @below {{result #0 is binary}}
  %b = memopt.op "aten::gt"(%v) [#memopt.arg<0>, 0.0] : (tensor<2x8xf32>) -> tensor<2x8xi1>
  %s = memopt.op "aten::to"(%b) [#memopt.arg<0>, 6, false, false, #memopt.none] : (tensor<2x8xi1>) -> tensor<2x8xf32>
  %w = memopt.op "aten::view"(%s) [#memopt.arg<0>, [16]] {views = array<i64: 0>} : (tensor<2x8xf32>) -> tensor<16xf32>
  %m = memopt.op "aten::mul_"(%s) [#memopt.arg<0>, 5.000000e-01] {mutates = array<i64: 0>, views = array<i64: 0>} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %s : tensor<2x8xf32>
}

// A module path asserted binary: its outputs (used outside of it) are
// assumed, not proven, and so are views of them. Without the assertion
// (first RUN line) nothing here is binary.
// ASSUME: remark: loc("features.3"): result #0 is assumed binary
// ASSUME: remark: loc("features.4"): result #0 is assumed binary
func.func @assumed(%v: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %m = memopt.op "aten::clamp"(%v) [#memopt.arg<0>, 0.0, 1.0] : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("features.3")
  %r = memopt.op "aten::view"(%m) [#memopt.arg<0>, [16]] : (tensor<2x8xf32>) -> tensor<16xf32> loc("features.4")
  return %m : tensor<2x8xf32>
}
