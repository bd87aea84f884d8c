// RUN: memopt-opt %s --split-input-file --memopt-chunk-batch-norm-backward | FileCheck %s
// RUN: memopt-opt %s --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: memopt-opt %s --split-input-file --memopt-pipeline="device=cuda" | FileCheck %s --check-prefix=OFF
// RUN: memopt-opt %s --split-input-file --memopt-pipeline="device=cpu" | FileCheck %s --check-prefix=PIPE
// RUN: memopt-opt %s --split-input-file --memopt-chunk-batch-norm-backward -memopt-test-memory-model -o /dev/null | FileCheck %s --check-prefix=MODEL
// RUN: memopt-opt %s --split-input-file -memopt-test-memory-model -o /dev/null | FileCheck %s --check-prefix=BASE

// A training-mode batch-norm on 8x16x128x128 floats (8 MiB, 512 KiB per
// channel): its CPU backward runs a sixteenth of it, one channel, at a time.
// CHECK-LABEL: func.func @large
// CHECK: memopt.op "aten::batch_norm"{{.*}}backward = #memopt.backward<by_channel>
// Planned, it stays: its backward is the step's peak.
// PIPE-LABEL: func.func @large
// PIPE: memopt.op "aten::batch_norm"{{.*}}backward = #memopt.backward<by_channel>
// OFF-LABEL: func.func @large
// OFF-NOT: backward =
// Its input needs a gradient (for the parameter `scale`). When its backward
// starts, its saved input and the output gradient (8 MiB each) are live.
// ATen adds the input gradient and a buffer of the same size (8 + 8 MiB), by
// channel the input gradient and 4 chunks of 512 KiB: 6 MiB less.
// BASE-LABEL: memory-model @large
// BASE: backward aten::batch_norm live 41943168
// BASE: peak 41943168 at backward aten::batch_norm
// MODEL-LABEL: memory-model @large
// MODEL: backward aten::batch_norm live 35651712
// MODEL: peak 35651712 at backward aten::batch_norm
func.func @large(%x: tensor<8x16x128x128xf32>) -> tensor<8x16x128x128xf32> {
  %w = memopt.param "bn.weight" : tensor<16xf32>
  %b = memopt.param "bn.bias" : tensor<16xf32>
  %m = memopt.buffer "bn.running_mean" : tensor<16xf32>
  %v = memopt.buffer "bn.running_var" : tensor<16xf32>
  %s = memopt.param "scale" : tensor<8x16x128x128xf32>
  %y = memopt.op "aten::mul"(%x, %s) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} : (tensor<8x16x128x128xf32>, tensor<8x16x128x128xf32>) -> tensor<8x16x128x128xf32>
  %n = memopt.op "aten::batch_norm"(%y, %w, %b, %m, %v) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, true, 0.1, 1.0e-05, true] {mutates = array<i64: 3, 4>, overload = ""} : (tensor<8x16x128x128xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x16x128x128xf32>
  return %n : tensor<8x16x128x128xf32>
}

// -----

// In eval mode, or when one chunk would be most of the input (2x16x8x8,
// 8 KiB in all: a chunk is at least 64 KiB), ATen's kernel runs whole.
// CHECK-LABEL: func.func @eval_and_small
// CHECK-NOT: backward =
// CHECK: return
// PIPE-LABEL: func.func @eval_and_small
// PIPE-NOT: backward =
// PIPE: return
func.func @eval_and_small(%x: tensor<8x16x128x128xf32>, %s: tensor<2x16x8x8xf32>) -> (tensor<8x16x128x128xf32>, tensor<2x16x8x8xf32>) {
  %w = memopt.param "bn.weight" : tensor<16xf32>
  %b = memopt.param "bn.bias" : tensor<16xf32>
  %m = memopt.buffer "bn.running_mean" : tensor<16xf32>
  %v = memopt.buffer "bn.running_var" : tensor<16xf32>
  %e = memopt.op "aten::batch_norm"(%x, %w, %b, %m, %v) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, false, 0.1, 1.0e-05, true] {overload = ""} : (tensor<8x16x128x128xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x16x128x128xf32>
  %n = memopt.op "aten::batch_norm"(%s, %w, %b, %m, %v) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, true, 0.1, 1.0e-05, true] {mutates = array<i64: 3, 4>, overload = ""} : (tensor<2x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x16x8x8xf32>
  return %e, %n : tensor<8x16x128x128xf32>, tensor<2x16x8x8xf32>
}

// -----

// The same batch-norm before a convolution to 64 channels, whose backward
// holds the step's peak: the planner takes the by-channel kernel off again
// (its copies would cost time and lower nothing).
// CHECK-LABEL: func.func @peak_elsewhere
// CHECK: backward = #memopt.backward<by_channel>
// PIPE-LABEL: func.func @peak_elsewhere
// PIPE-NOT: backward =
// PIPE: return
func.func @peak_elsewhere(%x: tensor<8x16x128x128xf32>) -> tensor<8x64x128x128xf32> {
  %w = memopt.param "bn.weight" : tensor<16xf32>
  %b = memopt.param "bn.bias" : tensor<16xf32>
  %m = memopt.buffer "bn.running_mean" : tensor<16xf32>
  %v = memopt.buffer "bn.running_var" : tensor<16xf32>
  %s = memopt.param "scale" : tensor<8x16x128x128xf32>
  %y = memopt.op "aten::mul"(%x, %s) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} : (tensor<8x16x128x128xf32>, tensor<8x16x128x128xf32>) -> tensor<8x16x128x128xf32>
  %n = memopt.op "aten::batch_norm"(%y, %w, %b, %m, %v) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, true, 0.1, 1.0e-05, true] {mutates = array<i64: 3, 4>, overload = ""} : (tensor<8x16x128x128xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x16x128x128xf32>
  %cw = memopt.param "conv.weight" : tensor<64x16x3x3xf32>
  %c = memopt.op "aten::conv2d"(%n, %cw) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, [1, 1], [1, 1], [1, 1], 1] {overload = ""} : (tensor<8x16x128x128xf32>, tensor<64x16x3x3xf32>) -> tensor<8x64x128x128xf32>
  return %c : tensor<8x64x128x128xf32>
}
