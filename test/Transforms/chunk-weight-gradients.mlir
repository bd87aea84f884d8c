// RUN: memopt-opt %s --split-input-file --memopt-chunk-weight-gradients | FileCheck %s
// RUN: memopt-opt %s --split-input-file --memopt-pipeline="device=cpu" | FileCheck %s --check-prefix=PIPE
// RUN: memopt-opt %s --split-input-file --memopt-pipeline="device=cuda" | FileCheck %s --check-prefix=CUDA
// RUN: memopt-opt %s --split-input-file -memopt-test-memory-model -o /dev/null | FileCheck %s --check-prefix=BASE
// RUN: memopt-opt %s --split-input-file --memopt-chunk-weight-gradients -memopt-test-memory-model -o /dev/null | FileCheck %s --check-prefix=MODEL

// A classifier whose weight is 1024 x 8192 floats (32 KiB a row, 32 MiB):
// its gradient is written straight into `.grad` (over four 4 MiB blocks of
// rows).
// CHECK-LABEL: func.func @large
// CHECK: memopt.op "aten::linear"{{.*}}backward = #memopt.backward<weight_rows>
// Planned, it stays: that gradient is the step's peak.
// PIPE-LABEL: func.func @large
// PIPE: memopt.op "aten::linear"{{.*}}backward = #memopt.backward<weight_rows>
// CUDA-LABEL: func.func @large
// CUDA-NOT: backward =
// CUDA: return
// When the backward starts, the output and its gradient (32 KiB each) are
// live; eager adds the 32 MiB weight gradient and the 4 KiB bias gradient;
// written into `.grad`, only the bias gradient: 32 MiB less.
// BASE-LABEL: memory-model @large
// BASE: backward aten::linear live 33624064
// BASE: peak 33624064 at backward aten::linear
// MODEL-LABEL: memory-model @large
// MODEL: backward aten::linear live 69632
// MODEL: peak 69632 at backward aten::linear
func.func @large(%x: tensor<8x8192xf32>) -> tensor<8x1024xf32> {
  %w = memopt.param "fc.weight" : tensor<1024x8192xf32>
  %b = memopt.param "fc.bias" : tensor<1024xf32>
  %y = memopt.op "aten::linear"(%x, %w, %b) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>] {overload = ""} : (tensor<8x8192xf32>, tensor<1024x8192xf32>, tensor<1024xf32>) -> tensor<8x1024xf32>
  return %y : tensor<8x1024xf32>
}

// -----

// With `.grad` set to None between steps the gradient becomes `.grad`
// itself: there is no temporary, and no mark.
// CHECK-LABEL: func.func @allocated
// CHECK-NOT: backward =
// CHECK: return
// MODEL-LABEL: memory-model @allocated
// MODEL: peak 33624064 at backward aten::linear
module attributes {memopt.grad_buffers = "allocated"} {
  func.func @allocated(%x: tensor<8x8192xf32>) -> tensor<8x1024xf32> {
    %w = memopt.param "fc.weight" : tensor<1024x8192xf32>
    %b = memopt.param "fc.bias" : tensor<1024xf32>
    %y = memopt.op "aten::linear"(%x, %w, %b) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>] {overload = ""} : (tensor<8x8192xf32>, tensor<1024x8192xf32>, tensor<1024xf32>) -> tensor<8x1024xf32>
    return %y : tensor<8x1024xf32>
  }
}

// -----

// Under DistributedDataParallel the reducer holds the weight's accumulator:
// the runtime would return the whole gradient, so no mark, and a mark
// left there is modelled as the whole gradient.
// CHECK-LABEL: func.func @data_parallel
// CHECK-NOT: backward =
// CHECK: return
// BASE-LABEL: memory-model @data_parallel_marked
// BASE: backward aten::linear live 33624064
module attributes {memopt.world_size = 2 : i64} {
  func.func @data_parallel(%x: tensor<8x8192xf32>) -> tensor<8x1024xf32> {
    %w = memopt.param "fc.weight" : tensor<1024x8192xf32>
    %y = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<8x8192xf32>, tensor<1024x8192xf32>) -> tensor<8x1024xf32>
    return %y : tensor<8x1024xf32>
  }
  func.func @data_parallel_marked(%x: tensor<8x8192xf32>) -> tensor<8x1024xf32> {
    %w = memopt.param "fc.weight" : tensor<1024x8192xf32>
    %b = memopt.param "fc.bias" : tensor<1024xf32>
    %y = memopt.op "aten::linear"(%x, %w, %b) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>] {backward = #memopt.backward<weight_rows>, overload = ""} : (tensor<8x8192xf32>, tensor<1024x8192xf32>, tensor<1024xf32>) -> tensor<8x1024xf32>
    return %y : tensor<8x1024xf32>
  }
}

// -----

// Left alone: a weight two linears use directly (the runtime writes only
// one gradient into `.grad`), even through two reads of the parameter; a weight
// used three times; a frozen weight; one of exactly four blocks (1024 x
// 4096 floats) and a small one; a weight that is not a parameter.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: backward =
// CHECK: return
func.func @left_alone(%x: tensor<8x8192xf32>, %i: tensor<8x1024xf32>, %s: tensor<8x4096xf32>, %wx: tensor<2048x8192xf32>) -> (tensor<8x1024xf32>, tensor<8x8192xf32>, tensor<8x1024xf32>, tensor<8x1024xf32>, tensor<8x16xf32>, tensor<8x2048xf32>, tensor<8x1024xf32>, tensor<8x1024xf32>, tensor<1024x8192xf32>) {
  %tied = memopt.param "head.weight" : tensor<1024x8192xf32>
  %tied2 = memopt.param "head.weight" : tensor<1024x8192xf32>
  %frozen = memopt.param "frozen.weight" frozen : tensor<1024x8192xf32>
  %four = memopt.param "four.weight" : tensor<1024x4096xf32>
  %small = memopt.param "small.weight" : tensor<16x8192xf32>
  %thrice = memopt.param "thrice.weight" : tensor<1024x8192xf32>
  %a = memopt.op "aten::linear"(%x, %tied) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<8x8192xf32>, tensor<1024x8192xf32>) -> tensor<8x1024xf32>
  %a2 = memopt.op "aten::linear"(%x, %tied2) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<8x8192xf32>, tensor<1024x8192xf32>) -> tensor<8x1024xf32>
  %h = memopt.op "aten::linear"(%x, %thrice) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<8x8192xf32>, tensor<1024x8192xf32>) -> tensor<8x1024xf32>
  %t = memopt.op "aten::t"(%thrice) [#memopt.arg<0>] {views = array<i64: 0>} : (tensor<1024x8192xf32>) -> tensor<8192x1024xf32>
  %c = memopt.op "aten::linear"(%i, %t) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<8x1024xf32>, tensor<8192x1024xf32>) -> tensor<8x8192xf32>
  %u = memopt.op "aten::mul"(%thrice, %thrice) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} : (tensor<1024x8192xf32>, tensor<1024x8192xf32>) -> tensor<1024x8192xf32>
  %d = memopt.op "aten::linear"(%x, %frozen) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<8x8192xf32>, tensor<1024x8192xf32>) -> tensor<8x1024xf32>
  %e = memopt.op "aten::linear"(%s, %four) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<8x4096xf32>, tensor<1024x4096xf32>) -> tensor<8x1024xf32>
  %f = memopt.op "aten::linear"(%x, %small) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<8x8192xf32>, tensor<16x8192xf32>) -> tensor<8x16xf32>
  %g = memopt.op "aten::linear"(%x, %wx) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<8x8192xf32>, tensor<2048x8192xf32>) -> tensor<8x2048xf32>
  return %a, %c, %d, %e, %f, %g, %a2, %h, %u : tensor<8x1024xf32>, tensor<8x8192xf32>, tensor<8x1024xf32>, tensor<8x1024xf32>, tensor<8x16xf32>, tensor<8x2048xf32>, tensor<8x1024xf32>, tensor<8x1024xf32>, tensor<1024x8192xf32>
}

// -----

// The plan removes the mark when the peak is elsewhere (a 256 MiB product
// with a parameter of the same size) and holds without it.
// CHECK-LABEL: func.func @not_at_peak
// CHECK: backward = #memopt.backward<weight_rows>
// PIPE-LABEL: func.func @not_at_peak
// PIPE-NOT: backward =
// PIPE: return
func.func @not_at_peak(%x: tensor<8x8192xf32>, %big: tensor<64x1024x1024xf32>) -> (tensor<8x1024xf32>, tensor<64x1024x1024xf32>) {
  %w = memopt.param "fc.weight" : tensor<1024x8192xf32>
  %s = memopt.param "scale" : tensor<64x1024x1024xf32>
  %y = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<8x8192xf32>, tensor<1024x8192xf32>) -> tensor<8x1024xf32>
  %z = memopt.op "aten::mul"(%big, %s) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} : (tensor<64x1024x1024xf32>, tensor<64x1024x1024xf32>) -> tensor<64x1024x1024xf32>
  return %y, %z : tensor<8x1024xf32>, tensor<64x1024x1024xf32>
}


// -----

// An LM head tied to its token embedding (1024 x 8192 floats, 32 MiB):
// autograd would hold the head's whole gradient from the head's backward
// to the embedding's, at the end, then add their sum into `.grad`. The
// head is marked; the runtime writes its gradient into a `.grad` of zeros
// and the embedding's is added after it (the same bits). Modelled: the
// head's backward holds nothing of its 32 MiB, and nothing is held
// through the backward in between (the tanh's); the embedding's own dense
// gradient stays.
// CHECK-LABEL: func.func @tied_head
// CHECK: memopt.op "aten::linear"{{.*}}backward = #memopt.backward<weight_rows>
// Eager: the held 32 MiB through the tanh's backward, then the embedding's
// 32 MiB and their 32 MiB sum: 96 MiB. Into `.grad`: 32 MiB, the embedding's.
// BASE-LABEL: memory-model @tied_head
// BASE: backward aten::linear live 34144256
// BASE-NEXT: backward aten::tanh live 34406400
// BASE: peak 100728832 at backward aten::embedding
// MODEL-LABEL: memory-model @tied_head
// MODEL: backward aten::linear live 589824
// MODEL-NEXT: backward aten::tanh live 851968
// MODEL: peak 33882112 at backward aten::embedding
func.func @tied_head(%idx: tensor<8xi64>) -> tensor<8x1024xf32> {
  %table = memopt.param "wte.weight" : tensor<1024x8192xf32>
  %head = memopt.param "wte.weight" : tensor<1024x8192xf32>
  %e = memopt.op "aten::embedding"(%table, %idx) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, #memopt.none, #memopt.none] {overload = ""} : (tensor<1024x8192xf32>, tensor<8xi64>) -> tensor<8x8192xf32>
  %h = memopt.op "aten::tanh"(%e) [#memopt.arg<0>] : (tensor<8x8192xf32>) -> tensor<8x8192xf32>
  %y = memopt.op "aten::linear"(%h, %head) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<8x8192xf32>, tensor<1024x8192xf32>) -> tensor<8x1024xf32>
  return %y : tensor<8x1024xf32>
}
