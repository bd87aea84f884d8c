// RUN: memopt-opt %s -memopt-test-memory-model="kernel-workspaces=0" -verify-diagnostics -o /dev/null | FileCheck %s
// Reference counting only: the kernels' own transient buffers (oneDNN
// convolution reorders) are tested in memory-model-workspace.mlir.

// conv -> batch_norm -> relu_ on a 2x3x8x8 input. The input, parameters and
// buffers are resident (not counted). Every activation below is 2x4x8x8xf32
// = 512 floats = 2048 bytes; batch-norm's save_mean / save_invstd are 4
// floats = 16 bytes each.
//
// forward  conv:  + y (2048)                                   = 2048
//          bn:    + z (2048) + 2 * 16 statistics               = 4128
//          relu_: in place on z, saves its result (z)          = 4128
// end of forward: y (saved by bn), z (returned), statistics    = 4128
// backward: + loss gradient of the output (2048), held by the
//          caller until backward returns                      = 6176
//          relu_: + grad z (2048)                              = 8224
//          bn:    + grad y (2048) + grad gamma, beta (2 * 16)  = 10304 (peak)
//                 - param grads, grad z, y, statistics         = 6144
//          conv:  + grad w (432) + grad b (16)                 = 6592
// CHECK-LABEL: memory-model @conv_bn_relu
// CHECK-DAG: saved aten::batch_norm 2080
// CHECK-DAG: saved aten::relu_ 2048
// CHECK: forward aten::conv2d live 2048
// CHECK-NEXT: forward aten::batch_norm live 4128
// CHECK-NEXT: forward aten::relu_ live 4128
// CHECK-NEXT: backward aten::relu_ live 8224
// CHECK-NEXT: backward aten::batch_norm live 10304
// CHECK-NEXT: backward aten::conv2d live 6592
// CHECK: end-of-forward 4128
// CHECK: peak 10304 at backward aten::batch_norm
func.func @conv_bn_relu(%x: tensor<2x3x8x8xf32>) -> tensor<2x4x8x8xf32> {
  %w = memopt.param "conv.weight" : tensor<4x3x3x3xf32>
  %b = memopt.param "conv.bias" : tensor<4xf32>
  %g = memopt.param "bn.weight" : tensor<4xf32>
  %be = memopt.param "bn.bias" : tensor<4xf32>
  %m = memopt.buffer "bn.running_mean" : tensor<4xf32>
  %v = memopt.buffer "bn.running_var" : tensor<4xf32>
  %y = memopt.op "aten::conv2d"(%x, %w, %b)
      [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
      : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %z = memopt.op "aten::batch_norm"(%y, %g, %be, %m, %v)
      [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, true, 0.1, 1.0e-5, true]
      {mutates = array<i64: 3, 4>}
      : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %r = memopt.op "aten::relu_"(%z) [#memopt.arg<0>] {mutates = array<i64: 0>, views = array<i64: 0>}
      : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %r : tensor<2x4x8x8xf32>
}

// Dropout on CPU saves its float noise (the same size as its input), and
// relu saves its result (not its input).
//   linear:  + h (8x16xf32 = 512)                                 = 512
//   relu:    + a (512)                                            = 1024
//            - h (dead, not saved)                                = 512
//   dropout: + d (512) + noise (512)                              = 1536
// CHECK-LABEL: memory-model @dropout
// CHECK-DAG: saved aten::dropout 512
// CHECK-DAG: saved aten::relu 512
// CHECK: forward aten::linear live 512
// CHECK-NEXT: forward aten::relu live 1024
// CHECK-NEXT: forward aten::dropout live 1536
func.func @dropout(%x: tensor<8x4xf32>) -> tensor<8x16xf32> {
  %w = memopt.param "fc.weight" : tensor<16x4xf32>
  %b = memopt.param "fc.bias" : tensor<16xf32>
  %h = memopt.op "aten::linear"(%x, %w, %b) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>]
      : (tensor<8x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %a = memopt.op "aten::relu"(%h) [#memopt.arg<0>] : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %d = memopt.op "aten::dropout"(%a) [#memopt.arg<0>, 5.000000e-01, true] {nondeterministic}
      : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %d : tensor<8x16xf32>
}

// The probability read from a module attribute the function assumes (as
// Swin's `attn.attention_dropout = 0.0`; the exported module checks it):
// p = 0 returns the input itself, nothing saved and no noise; the same read
// with p = 0.5 assumed is an ordinary dropout. Without an assumed value the
// model cannot know p and charges a dropout.
// CHECK-LABEL: memory-model @assumed_zero_dropout
// CHECK-NOT: saved aten::dropout
// CHECK: forward aten::dropout live 512
func.func @assumed_zero_dropout(%x: tensor<8x4xf32>) -> tensor<8x16xf32>
    attributes {memopt.assumes = {"attn.p" = 0.000000e+00 : f64}} {
  %w = memopt.param "fc.weight" : tensor<16x4xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<8x4xf32>, tensor<16x4xf32>) -> tensor<8x16xf32>
  %a = memopt.op "aten::relu"(%h) [#memopt.arg<0>] : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %p = memopt.get_attr "attn.p" : f64
  %d = memopt.op "aten::dropout"(%a, %p) [#memopt.arg<0>, #memopt.arg<1>, true] {nondeterministic}
      : (tensor<8x16xf32>, f64) -> tensor<8x16xf32>
  return %d : tensor<8x16xf32>
}

// CHECK-LABEL: memory-model @assumed_half_dropout
// CHECK: saved aten::dropout 512
// CHECK: forward aten::dropout live 1536
func.func @assumed_half_dropout(%x: tensor<8x4xf32>) -> tensor<8x16xf32>
    attributes {memopt.assumes = {"attn.p" = 5.000000e-01 : f64}} {
  %w = memopt.param "fc.weight" : tensor<16x4xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<8x4xf32>, tensor<16x4xf32>) -> tensor<8x16xf32>
  %a = memopt.op "aten::relu"(%h) [#memopt.arg<0>] : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %p = memopt.get_attr "attn.p" : f64
  %d = memopt.op "aten::dropout"(%a, %p) [#memopt.arg<0>, #memopt.arg<1>, true] {nondeterministic}
      : (tensor<8x16xf32>, f64) -> tensor<8x16xf32>
  return %d : tensor<8x16xf32>
}

// A tensor returned inside a tuple (GoogLeNet's outputs with their
// auxiliary logits) gets its loss gradient like a tensor returned alone:
// backward starts from it (relu's gradient, linear's input gradient) and
// peaks at the same bytes as the same function returning the tensor.
// CHECK-LABEL: memory-model @tuple_output
// CHECK: forward aten::relu live 1024
// CHECK-NEXT: backward aten::relu live 1536
// CHECK-NEXT: backward aten::linear live 1792
// CHECK: peak 1792 at backward aten::linear
func.func @tuple_output(%x: tensor<8x4xf32>) -> !memopt.script<"(Tensor, Tensor?)"> {
  %w = memopt.param "fc.weight" : tensor<16x4xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<8x4xf32>, tensor<16x4xf32>) -> tensor<8x16xf32>
  %a = memopt.op "aten::relu"(%h) [#memopt.arg<0>] : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %t = memopt.op "prim::TupleConstruct"(%a) [#memopt.arg<0>, #memopt.none]
      : (tensor<8x16xf32>) -> !memopt.script<"(Tensor, Tensor?)">
  return %t : !memopt.script<"(Tensor, Tensor?)">
}

// An operator the table does not know is reported, and modelled as saving
// its operand and result rather than nothing.
// CHECK-LABEL: memory-model @unknown
// CHECK: saved aten::frobnicate 1024
// CHECK: unknown aten::frobnicate
func.func @unknown(%x: tensor<8x4xf32>) -> tensor<8x16xf32> {
  %w = memopt.param "fc.weight" : tensor<16x4xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<8x4xf32>, tensor<16x4xf32>) -> tensor<8x16xf32>
  // expected-warning @below {{no saved-tensor rule for 'aten::frobnicate'}}
  %f = memopt.op "aten::frobnicate"(%h) [#memopt.arg<0>] : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %f : tensor<8x16xf32>
}
