// RUN: memopt-opt %s -memopt-inline-checkpoints=labels=layer9 -verify-diagnostics

// expected-error @+1 {{memopt-inline-checkpoints: no checkpoint region is labelled 'layer9'}}
module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = memopt.checkpoint "layer1" (%x) policies [#memopt.keep] : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%a: tensor<4xf32>):
      memopt.yield %a : tensor<4xf32>
    }
    return %r : tensor<4xf32>
  }
}
