// RUN: memopt-opt %s --split-input-file --memopt-specialize-signatures --verify-diagnostics
// RUN: not memopt-opt %s --split-input-file --memopt-specialize-signatures=fallback=fastest 2>&1 | FileCheck %s --check-prefix=OPTION
// OPTION: memopt-specialize-signatures: fallback must be generic, original or none, not 'fastest'

// expected-error@+1 {{memopt-specialize-signatures: no signature functions @forward_s<N> (with memopt.signature) in the module; import with several input signatures first}}
module {
  func.func @forward(%x: tensor<8x3xf32>) -> tensor<8x3xf32> {
    return %x : tensor<8x3xf32>
  }
}

// -----

module {
  func.func @forward_s0(%x: tensor<8x3xf32>) -> tensor<8x3xf32> attributes {memopt.signature = #memopt.signature<index = 0, count = 1>} {
    return %x : tensor<8x3xf32>
  }
  // expected-error@+1 {{@forward_s1 takes 2 arguments but @forward_s0 takes 1; signatures of one method must have the same inputs}}
  func.func @forward_s1(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {memopt.signature = #memopt.signature<index = 1, count = 1>} {
    return %x : tensor<2x3xf32>
  }
}

// -----

func.func private @f8(tensor<8x3xf32>) -> tensor<8x3xf32>
func.func private @g(tensor<?x3xf32>) -> tensor<?x3xf32>
func.func @forward_s0(%x: tensor<8x3xf32>) -> tensor<8x3xf32> attributes {memopt.signature = #memopt.signature<index = 0, count = 1>} {
  // expected-error@+1 {{signature function @forward_s0 already dispatches; memopt-specialize-signatures runs once, on the functions the importer made}}
  %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<8x3xf32>] -> @f8>] fallback @g : (tensor<8x3xf32>) -> tensor<8x3xf32>
  return %r : tensor<8x3xf32>
}

// -----

// expected-error@+1 {{memopt-specialize-signatures: @forward already exists; it would be the dispatching entry of the signature functions}}
func.func @forward(%x: tensor<8x3xf32>) -> tensor<8x3xf32> {
  return %x : tensor<8x3xf32>
}
func.func @forward_s0(%x: tensor<8x3xf32>) -> tensor<8x3xf32> attributes {memopt.signature = #memopt.signature<index = 0, count = 1>} {
  return %x : tensor<8x3xf32>
}

// -----

// expected-error@+1 {{memopt-specialize-signatures: @forward_generic already exists; it would be the fallback of the signature functions}}
func.func private @forward_generic(tensor<?x3xf32>) -> tensor<?x3xf32>
func.func @forward_s0(%x: tensor<8x3xf32>) -> tensor<8x3xf32> attributes {memopt.signature = #memopt.signature<index = 0, count = 1>} {
  return %x : tensor<8x3xf32>
}

// -----

// expected-error@+1 {{signature index and count must not be negative}}
func.func @forward_s0(%x: tensor<8x3xf32>) -> tensor<8x3xf32> attributes {memopt.signature = #memopt.signature<index = 0, count = -2>} {
  return %x : tensor<8x3xf32>
}

// -----

// expected-error@+1 {{signature function @forward_s0 needs memopt.signature = #memopt.signature<index = <i>, count = <n>>}}
func.func @forward_s0(%x: tensor<8x3xf32>) -> tensor<8x3xf32> {
  return %x : tensor<8x3xf32>
}

// -----

// expected-error@+1 {{signature function @forward_s0 has no body}}
func.func private @forward_s0(tensor<8x3xf32>) -> tensor<8x3xf32> attributes {memopt.signature = #memopt.signature<index = 0, count = 1>}

// -----

// expected-error@+1 {{argument #0 of @forward_s0 has type 'tensor<?x3xf32>'; dispatch guards need statically shaped tensors}}
func.func @forward_s0(%x: tensor<?x3xf32>) -> tensor<?x3xf32> attributes {memopt.signature = #memopt.signature<index = 0, count = 1>} {
  return %x : tensor<?x3xf32>
}

// -----

func.func @forward_s0(%x: tensor<8x3xf32>) -> tensor<8x3xf32> attributes {memopt.signature = #memopt.signature<index = 0, count = 1>} {
  return %x : tensor<8x3xf32>
}
// expected-error@+1 {{argument #0 of @forward_s1 is 'tensor<8x3xf16>' but 'tensor<8x3xf32>' in @forward_s0; one dispatch needs one element type per input}}
func.func @forward_s1(%x: tensor<8x3xf16>) -> tensor<8x3xf32> attributes {memopt.signature = #memopt.signature<index = 1, count = 1>} {
  %y = memopt.op "aten::float"(%x) [#memopt.arg<0>] : (tensor<8x3xf16>) -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}

// -----

func.func @forward_s0(%x: tensor<8x3xf32>) -> tensor<8x3xf32> attributes {memopt.signature = #memopt.signature<index = 0, count = 1>} {
  return %x : tensor<8x3xf32>
}
// expected-error@+1 {{result #0 of @forward_s1 is 'i64' but 'tensor<8x3xf32>' in @forward_s0}}
func.func @forward_s1(%x: tensor<2x3xf32>) -> i64 attributes {memopt.signature = #memopt.signature<index = 1, count = 1>} {
  %n = memopt.op "aten::dim"(%x) [#memopt.arg<0>] : (tensor<2x3xf32>) -> i64
  return %n : i64
}

// -----

func.func @forward_s0(%x: tensor<8x3xf32>) -> tensor<8x3xf32> attributes {memopt.signature = #memopt.signature<index = 0, count = 1>} {
  return %x : tensor<8x3xf32>
}
// expected-error@+1 {{@forward_s1 has the input types of @forward_s0; each signature needs its own}}
func.func @forward_s1(%x: tensor<8x3xf32>) -> tensor<8x3xf32> attributes {memopt.signature = #memopt.signature<index = 1, count = 3>} {
  return %x : tensor<8x3xf32>
}
