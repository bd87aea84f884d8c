// RUN: memopt-opt %s -memopt-test-memory-model -o /dev/null | FileCheck %s

// A parameter passed from an enclosing region's body into a nested region
// (how nesting in a recompute passes them) and also used outside: the
// nested region's backward hands its gradient to the enclosing region,
// which returns it with its own when its backward ends. Until then
// AccumulateGrad holds the gradient of the use outside (16384 bytes) and
// the enclosing region holds the nested one's (16384 more), through the
// ops before the nested region (sigmoid). Both are summed into .grad at the
// enclosing region's end. Handed on with the nested region's (empty) set
// of parameters to collect, the nested gradient was summed at once and the
// sigmoid's backward modelled 32 KiB low (seq2seq_attn's nested plan:
// predicted 417648 bytes, measured 540192; now 540192).
// CHECK-LABEL: memory-model @nested_param_input
// CHECK: backward aten::linear live 38912
// CHECK-NEXT: backward checkpoint "outer.inner" live 38912
// CHECK-NEXT: backward aten::sigmoid live 39936
// CHECK-NEXT: backward checkpoint "outer" live 37888
// CHECK-NEXT: backward checkpoint "outer" live 52224
// CHECK-NEXT: backward aten::linear live 19456
// CHECK: peak 52224 at backward checkpoint "outer"
func.func @nested_param_input(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %w0 = memopt.param "pre.weight" : tensor<64x64xf32>
  %p = memopt.op "aten::linear"(%x, %w0) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
  %c = memopt.checkpoint "outer" (%p) policies [#memopt.keep]
      : (tensor<4x64xf32>) -> tensor<4x64xf32> {
  ^bb0(%a: tensor<4x64xf32>):
    %s = memopt.op "aten::sigmoid"(%a) [#memopt.arg<0>] : (tensor<4x64xf32>) -> tensor<4x64xf32>
    %w = memopt.param "fc.weight" : tensor<64x64xf32>
    %i = memopt.checkpoint "outer.inner" (%s, %w) policies [#memopt.keep, #memopt.keep]
        : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32> {
    ^bb0(%b: tensor<4x64xf32>, %v: tensor<64x64xf32>):
      %h = memopt.op "aten::linear"(%b, %v) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
          : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
      memopt.yield %h : tensor<4x64xf32>
    }
    memopt.yield %i : tensor<4x64xf32>
  }
  %w2 = memopt.param "fc.weight" : tensor<64x64xf32>
  %o = memopt.op "aten::linear"(%c, %w2) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
  return %o : tensor<4x64xf32>
}
