// A generic copy is only valid when nothing was folded on tensor sizes: with
// memopt.shape_assumes (or packed / host tensor types) the pass warns and
// falls back to the original forward.
// RUN: memopt-opt %s --split-input-file --memopt-specialize-signatures --verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @forward(%{{.*}}: tensor<*xf32>) -> tensor<*xf32>
// CHECK: cases [#memopt.case<[tensor<2x3xf32>] -> @forward_s1, count = 5>, #memopt.case<[tensor<8x3xf32>] -> @forward_s0, count = 1>] fallback @forward_original
// CHECK: func.func private @forward_original(tensor<*xf32>) -> tensor<*xf32> attributes {memopt.original_method = "forward"}
module {
  // expected-warning@+1 {{memopt-specialize-signatures: no generic fallback: @forward_s0 folded control flow on tensor sizes (prim::If condition at m.py:16); unseen signatures run the original forward}}
  func.func @forward_s0(%x: tensor<8x3xf32>) -> tensor<8x3xf32> attributes {memopt.shape_assumes = ["prim::If condition at m.py:16"], memopt.signature = #memopt.signature<index = 0, count = 1>} {
    return %x : tensor<8x3xf32>
  }
  func.func @forward_s1(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {memopt.shape_assumes = ["prim::If condition at m.py:16"], memopt.signature = #memopt.signature<index = 1, count = 5>} {
    return %x : tensor<2x3xf32>
  }
}

// -----

// Only the copied function matters: the largest one here is clean.
// CHECK-LABEL: func.func @forward(%{{.*}}: tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK: fallback @forward_generic
// CHECK: func.func @forward_generic(%{{.*}}: tensor<?x?xf32>) -> tensor<?x?xf32>
module {
  func.func @forward_s0(%x: tensor<8x3xf32>) -> tensor<8x3xf32> attributes {memopt.signature = #memopt.signature<index = 0, count = 1>} {
    %y = memopt.op "aten::relu"(%x) [#memopt.arg<0>] : (tensor<8x3xf32>) -> tensor<8x3xf32>
    return %y : tensor<8x3xf32>
  }
  func.func @forward_s1(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {memopt.shape_assumes = ["prim::Loop trip count at m.py:3"], memopt.signature = #memopt.signature<index = 1, count = 5>} {
    return %x : tensor<2x3xf32>
  }
}

// -----

// CHECK-LABEL: func.func @forward(%{{.*}}: tensor<*xf32>) -> tensor<*xf32>
// CHECK: fallback @forward_original
module {
  // expected-warning@+1 {{no generic fallback: @forward_s0 holds 'memopt.compress' on a packed or host tensor, whose type needs a static shape}}
  func.func @forward_s0(%x: tensor<8x3xf32>) -> tensor<8x3xf32> attributes {memopt.signature = #memopt.signature<index = 0, count = 1>} {
    %p = memopt.compress %x : tensor<8x3xf32> -> !memopt.packed<8x3xf32, bit>
    %y = memopt.decompress %p : !memopt.packed<8x3xf32, bit> -> tensor<8x3xf32>
    return %y : tensor<8x3xf32>
  }
  func.func @forward_s1(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {memopt.signature = #memopt.signature<index = 1, count = 5>} {
    return %x : tensor<2x3xf32>
  }
}

// -----

// Signatures that differ in rank: the entry takes unranked tensors, the
// generic copy keeps the rank of its source. The entry's types cover the
// fallback's too.
// CHECK-LABEL: func.func @forward(%{{.*}}: tensor<*xf32>, %{{.*}}: tensor<?xi64>) -> (tensor<*xf32>, i64)
// CHECK: cases [#memopt.case<[tensor<8x3x2xf32>, tensor<4xi64>] -> @forward_s0, count = 1>, #memopt.case<[tensor<3x2xf32>, tensor<4xi64>] -> @forward_s1, count = 1>] fallback @forward_generic : (tensor<*xf32>, tensor<?xi64>) -> (tensor<*xf32>, i64)
// CHECK: func.func @forward_generic(%{{.*}}: tensor<?x?x?xf32>, %{{.*}}: tensor<?xi64>) -> (tensor<?x?x?xf32>, i64)
module {
  func.func @forward_s0(%x: tensor<8x3x2xf32>, %i: tensor<4xi64>) -> (tensor<8x3x2xf32>, i64) attributes {memopt.signature = #memopt.signature<index = 0, count = 1>} {
    %n = memopt.op "aten::dim"(%x) [#memopt.arg<0>] : (tensor<8x3x2xf32>) -> i64
    return %x, %n : tensor<8x3x2xf32>, i64
  }
  func.func @forward_s1(%x: tensor<3x2xf32>, %i: tensor<4xi64>) -> (tensor<3x2xf32>, i64) attributes {memopt.signature = #memopt.signature<index = 1, count = 1>} {
    %n = memopt.op "aten::dim"(%x) [#memopt.arg<0>] : (tensor<3x2xf32>) -> i64
    return %x, %n : tensor<3x2xf32>, i64
  }
}
