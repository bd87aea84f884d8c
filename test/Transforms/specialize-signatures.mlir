// RUN: memopt-opt %s --memopt-specialize-signatures | FileCheck %s
// RUN: memopt-opt %s --memopt-specialize-signatures=fallback=original | FileCheck %s --check-prefix=ORIGINAL
// RUN: memopt-opt %s --memopt-specialize-signatures=fallback=none | FileCheck %s --check-prefix=STRICT

// Cases guard the exact input types, most frequent first (ties: signature
// order); the entry's types cover every case and the fallback.
// CHECK-LABEL: func.func @forward(%{{.*}}: tensor<?x?x?x?xf32>) -> tensor<?x?xf32> {
// CHECK-NEXT: %[[R:.*]] = memopt.dispatch(%{{.*}}) cases [
// CHECK-SAME: #memopt.case<[tensor<64x3x32x32xf32>] -> @forward_s1, count = 90>,
// CHECK-SAME: #memopt.case<[tensor<8x3x32x32xf32>] -> @forward_s0, count = 10>,
// CHECK-SAME: #memopt.case<[tensor<16x3x32x32xf32>] -> @forward_s2, count = 10>,
// CHECK-SAME: #memopt.case<[tensor<8x3x64x64xf32>] -> @forward_s3>]
// CHECK-SAME: fallback @forward_generic : (tensor<?x?x?x?xf32>) -> tensor<?x?xf32>
// CHECK-NEXT: return %[[R]] : tensor<?x?xf32>
// The signature functions stay as they are.
// CHECK: func.func @forward_s0(%{{.*}}: tensor<8x3x32x32xf32>) -> tensor<8x10xf32> attributes {memopt.assumes = {bn.training = true}, memopt.signature = #memopt.signature<index = 0, count = 10>}
// CHECK: func.func @forward_s3(
// The generic fallback copies the function with the largest inputs (s1)
// with `?` sizes wherever the inputs flow; state and constants keep theirs,
// packing (which needs static shapes) becomes a plain save.
// CHECK: func.func @forward_generic(%[[X:.*]]: tensor<?x?x?x?xf32>) -> tensor<?x?xf32> attributes {memopt.assumes = {bn.training = true}, memopt.budget = "1GiB", memopt.generic_of = @forward_s1} {
// CHECK-NEXT: memopt.param "conv.weight" : tensor<16x3x3x3xf32>
// CHECK-NEXT: memopt.op "aten::conv2d"(%[[X]], {{.*}} {overload = ""} : (tensor<?x?x?x?xf32>, tensor<16x3x3x3xf32>) -> tensor<?x?x?x?xf32>
// CHECK-NEXT: memopt.checkpoint "block"(%{{.*}}, %{{.*}}) policies [#memopt.keep, #memopt.keep] : (tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32> {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<?x?x?x?xf32>, %{{.*}}: tensor<?x?x?x?xf32>):
// CHECK-NEXT: memopt.op "aten::relu"({{.*}} : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
// CHECK-NEXT: memopt.yield {{.*}} : tensor<?x?x?x?xf32>
// CHECK: memopt.op "prim::Constant"() {{.*}} : () -> tensor<2xf32>
// CHECK: memopt.op "aten::linear"{{.*}} -> tensor<?x?xf32>
// CHECK-NOT: memopt.signature

// ORIGINAL-LABEL: func.func @forward(%{{.*}}: tensor<*xf32>) -> tensor<*xf32> {
// ORIGINAL: fallback @forward_original : (tensor<*xf32>) -> tensor<*xf32>
// ORIGINAL: func.func private @forward_original(tensor<*xf32>) -> tensor<*xf32> attributes {memopt.original_method = "forward"}
// ORIGINAL-NOT: @forward_generic

// STRICT-LABEL: func.func @forward(%{{.*}}: tensor<?x3x?x?xf32>) -> tensor<?x10xf32> {
// STRICT: #memopt.case<[tensor<8x3x64x64xf32>] -> @forward_s3>] strict : (tensor<?x3x?x?xf32>) -> tensor<?x10xf32>
// STRICT-NOT: @forward_generic
// STRICT-NOT: @forward_original

module attributes {memopt.source = "/nonexistent/model.pt"} {
  func.func @forward_s0(%x: tensor<8x3x32x32xf32>) -> tensor<8x10xf32> attributes {memopt.assumes = {bn.training = true}, memopt.signature = #memopt.signature<index = 0, count = 10>} {
    %w = memopt.param "fc.weight" : tensor<10x3xf32>
    %m = memopt.op "aten::mean"(%x) [#memopt.arg<0>, [2, 3], false, #memopt.none] {overload = "dim"} : (tensor<8x3x32x32xf32>) -> tensor<8x3xf32>
    %y = memopt.op "aten::linear"(%m, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<8x3xf32>, tensor<10x3xf32>) -> tensor<8x10xf32>
    return %y : tensor<8x10xf32>
  }
  func.func @forward_s1(%x: tensor<64x3x32x32xf32>) -> tensor<64x10xf32> attributes {memopt.assumes = {bn.training = true}, memopt.budget = "1GiB", memopt.signature = #memopt.signature<index = 1, count = 90>} {
    %w = memopt.param "conv.weight" : tensor<16x3x3x3xf32>
    %c = memopt.op "aten::conv2d"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, [1, 1], [1, 1], [1, 1], 1] {overload = "", saved_input = #memopt.compress<bit>} : (tensor<64x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<64x16x32x32xf32>
    %r = memopt.checkpoint "block" (%c, %c) policies [#memopt.compress<bit>, #memopt.keep] : (tensor<64x16x32x32xf32>, tensor<64x16x32x32xf32>) -> tensor<64x16x32x32xf32> {
    ^bb0(%a: tensor<64x16x32x32xf32>, %b: tensor<64x16x32x32xf32>):
      %t = memopt.op "aten::relu"(%a) [#memopt.arg<0>] {overload = ""} : (tensor<64x16x32x32xf32>) -> tensor<64x16x32x32xf32>
      memopt.yield %t : tensor<64x16x32x32xf32>
    }
    %k = memopt.op "prim::Constant"() [[1.0, 2.0]] : () -> tensor<2xf32>
    %m = memopt.op "aten::mean"(%r) [#memopt.arg<0>, [2, 3], false, #memopt.none] {overload = "dim"} : (tensor<64x16x32x32xf32>) -> tensor<64x16xf32>
    %w2 = memopt.param "fc2.weight" : tensor<10x16xf32>
    %y = memopt.op "aten::linear"(%m, %w2) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<64x16xf32>, tensor<10x16xf32>) -> tensor<64x10xf32>
    return %y : tensor<64x10xf32>
  }
  func.func @forward_s2(%x: tensor<16x3x32x32xf32>) -> tensor<16x10xf32> attributes {memopt.signature = #memopt.signature<index = 2, count = 10>} {
    %w = memopt.param "fc.weight" : tensor<10x3xf32>
    %m = memopt.op "aten::mean"(%x) [#memopt.arg<0>, [2, 3], false, #memopt.none] {overload = "dim"} : (tensor<16x3x32x32xf32>) -> tensor<16x3xf32>
    %y = memopt.op "aten::linear"(%m, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<16x3xf32>, tensor<10x3xf32>) -> tensor<16x10xf32>
    return %y : tensor<16x10xf32>
  }
  func.func @forward_s3(%x: tensor<8x3x64x64xf32>) -> tensor<8x10xf32> attributes {memopt.signature = #memopt.signature<index = 3, count = 0>} {
    %w = memopt.param "fc.weight" : tensor<10x3xf32>
    %m = memopt.op "aten::mean"(%x) [#memopt.arg<0>, [2, 3], false, #memopt.none] {overload = "dim"} : (tensor<8x3x64x64xf32>) -> tensor<8x3xf32>
    %y = memopt.op "aten::linear"(%m, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<8x3xf32>, tensor<10x3xf32>) -> tensor<8x10xf32>
    return %y : tensor<8x10xf32>
  }
}
