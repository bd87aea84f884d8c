// RUN: memopt-opt %s -memopt-test-memory-model -verify-diagnostics -o /dev/null | FileCheck %s

// A region that draws random numbers (a dropout in training) must draw the
// same ones in its recompute: the runtime keeps the CPU generator's state
// from the region's forward to its backward (torch.get_rng_state(): 5056
// bytes on PyTorch 1.13 and 2.6, the table's `cpuGeneratorStateBytes`),
// and in backward keeps the state it replaces until the recompute is done
// (then sets it back). Here beside the kept input h (4x64xf32 = 1024
// bytes): the recompute holds both states, h, the result and its gradient
// and the recomputed result with its noise (15232); the region's backward
// no longer holds the replaced state (10176).
// CHECK-LABEL: memory-model @draws
// CHECK: saved checkpoint "drop" 6080
// CHECK: forward checkpoint "drop" live 7104
// CHECK: recompute aten::dropout live 15232
// CHECK: backward aten::dropout live 10176
// CHECK: end-of-forward 7104
func.func @draws(%x: tensor<4x16xf32>) -> tensor<4x64xf32> {
  %w = memopt.param "fc.weight" : tensor<64x16xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<4x16xf32>, tensor<64x16xf32>) -> tensor<4x64xf32>
  %c = memopt.checkpoint "drop" (%h) policies [#memopt.keep]
      : (tensor<4x64xf32>) -> tensor<4x64xf32> {
  ^bb0(%a: tensor<4x64xf32>):
    %d = memopt.op "aten::dropout"(%a) [#memopt.arg<0>, 5.000000e-01, true] {nondeterministic}
        : (tensor<4x64xf32>) -> tensor<4x64xf32>
    memopt.yield %d : tensor<4x64xf32>
  }
  return %c : tensor<4x64xf32>
}

// A dropout with p = 0 returns its input without drawing (what
// nn.TransformerEncoderLayer(dropout=0.0) runs): nothing is kept of the
// generator. Before, the runtime kept it for every region with a dropout,
// and the model did not count it: an encoder's plan was 13 % over its
// prediction.
// CHECK-LABEL: memory-model @identity
// CHECK: saved checkpoint "drop" 1024
// CHECK: end-of-forward 2048
func.func @identity(%x: tensor<4x16xf32>) -> tensor<4x64xf32> {
  %w = memopt.param "fc.weight" : tensor<64x16xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<4x16xf32>, tensor<64x16xf32>) -> tensor<4x64xf32>
  %c = memopt.checkpoint "drop" (%h) policies [#memopt.keep]
      : (tensor<4x64xf32>) -> tensor<4x64xf32> {
  ^bb0(%a: tensor<4x64xf32>):
    %d = memopt.op "aten::dropout"(%a) [#memopt.arg<0>, 0.000000e+00, true] {nondeterministic}
        : (tensor<4x64xf32>) -> tensor<4x64xf32>
    %r = memopt.op "aten::relu"(%d) [#memopt.arg<0>] : (tensor<4x64xf32>) -> tensor<4x64xf32>
    memopt.yield %r : tensor<4x64xf32>
  }
  return %c : tensor<4x64xf32>
}
