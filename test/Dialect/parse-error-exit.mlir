// RUN: not memopt-opt %s 2>&1 | FileCheck %s
// MLIR 19's parser reports a stray character right after a dialect
// attribute and still returns the module; memopt-opt exits non-zero on any
// error it printed (found by the .mlir fuzzer, scripts/fuzz.sh mlir).

// CHECK: error: expected three consecutive dots for an ellipsis
func.func private @f8(tensor<8x3xf32>) -> tensor<8x3xf32>
func.func private @g(tensor<?x3xf32>) -> tensor<?x3xf32>
func.func @forward_s0(%x: tensor<8x3xf32>) -> tensor<8x3xf32> {
  %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<8x3xf32>] -> @f8>.] fallback @g : (tensor<8x3xf32>) -> tensor<8x3xf32>
  return %r : tensor<8x3xf32>
}
