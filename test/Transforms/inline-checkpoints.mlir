// RUN: memopt-opt %s -memopt-inline-checkpoints | FileCheck %s --check-prefix=ALL
// RUN: memopt-opt %s -memopt-inline-checkpoints=labels=b | FileCheck %s --check-prefix=ONLY-B

// ALL-LABEL: func.func @two_regions
// ALL-NOT: memopt.checkpoint
// ALL: %[[A:.*]] = memopt.op "aten::relu"(%arg0)
// ALL: %[[B:.*]] = memopt.op "aten::mul"(%[[A]], %arg1)
// ALL: %[[C:.*]] = memopt.op "aten::sigmoid"(%[[B]])
// ALL: return %[[C]], %[[A]]

// ONLY-B-LABEL: func.func @two_regions
// ONLY-B: %[[R:.*]]:2 = memopt.checkpoint "a"
// ONLY-B: %[[B:.*]] = memopt.op "aten::mul"(%[[R]]#0, %arg1)
// ONLY-B: memopt.op "aten::sigmoid"(%[[B]])
// ONLY-B-NOT: memopt.checkpoint "b"
func.func @two_regions(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r:2 = memopt.checkpoint "a" (%x) policies [#memopt.keep] : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %0 = memopt.op "aten::relu"(%a) [#memopt.arg<0>] : (tensor<4xf32>) -> tensor<4xf32>
    memopt.yield %0, %0 : tensor<4xf32>, tensor<4xf32>
  }
  %s = memopt.checkpoint "b" (%r#0, %y) policies [#memopt.compress<bit>, #memopt.offload<host>] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %0 = memopt.op "aten::mul"(%a, %b) [#memopt.arg<0>, #memopt.arg<1>] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %1 = memopt.op "aten::sigmoid"(%0) [#memopt.arg<0>] : (tensor<4xf32>) -> tensor<4xf32>
    memopt.yield %1 : tensor<4xf32>
  }
  return %s, %r#1 : tensor<4xf32>, tensor<4xf32>
}

// A region whose result is one of its inputs leaves the input in its place.
// ALL-LABEL: func.func @passthrough
// ALL-NEXT: return %arg0
func.func @passthrough(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = memopt.checkpoint "p" (%x) policies [#memopt.keep] : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    memopt.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// Nested regions are inlined from the outside in.
// ALL-LABEL: func.func @nested
// ALL-NOT: memopt.checkpoint
// ALL: memopt.op "aten::neg"(%arg0)
func.func @nested(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = memopt.checkpoint "outer" (%x) policies [#memopt.keep] : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %i = memopt.checkpoint "inner" (%a) policies [#memopt.keep] : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%b: tensor<4xf32>):
      %n = memopt.op "aten::neg"(%b) [#memopt.arg<0>] : (tensor<4xf32>) -> tensor<4xf32>
      memopt.yield %n : tensor<4xf32>
    }
    memopt.yield %i : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
