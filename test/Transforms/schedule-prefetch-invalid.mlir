// RUN: memopt-opt %s -memopt-schedule-prefetch="bandwidth=0" -split-input-file -verify-diagnostics

// expected-error @+1 {{memopt-schedule-prefetch: bandwidth must be positive, got 0 GB/s}}
func.func @zero_bandwidth(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = memopt.checkpoint "a" (%x) policies [#memopt.offload<host>] : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%i: tensor<4xf32>):
    memopt.yield %i : tensor<4xf32>
  }
  return %a : tensor<4xf32>
}
