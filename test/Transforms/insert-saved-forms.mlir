// RUN: memopt-opt %s --split-input-file --memopt-insert-saved-forms | FileCheck %s
// RUN: memopt-opt %s --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: memopt-opt %s --split-input-file --memopt-insert-saved-forms -memopt-test-memory-model -o /dev/null | FileCheck %s --check-prefix=MODEL
// RUN: memopt-opt %s --split-input-file -memopt-test-memory-model -o /dev/null | FileCheck %s --check-prefix=BASE

// A ResNet stem: batch-norm, in-place ReLU, max-pool. The max-pool stops
// keeping its input (only the indices), after which only the ReLU keeps its
// result: it keeps a bit per value instead.
// CHECK-LABEL: func.func @stem
// CHECK: memopt.op "aten::relu_"{{.*}}saved_form = #memopt.saved<mask>
// CHECK: memopt.op "aten::max_pool2d"{{.*}}saved_form = #memopt.saved<indices>
// OFF-LABEL: func.func @stem
// OFF-NOT: saved_form
// Saved without the forms: ReLU its result (8x4x16x16xf32, 32 KiB), the
// max-pool the same tensor (counted for each op) and its indices
// (8x4x8x8xi64, 16 KiB); batch-norm its statistics (its input is the
// function's).
// BASE-LABEL: memory-model @stem
// BASE: saved aten::relu_ 32768
// BASE: saved aten::max_pool2d 49152
// With the forms: 8192 values -> 1024 bytes of mask; the max-pool keeps
// only its indices.
// MODEL-LABEL: memory-model @stem
// MODEL: saved aten::relu_ 1024
// MODEL: saved aten::max_pool2d 16384
func.func @stem(%x: tensor<8x4x16x16xf32>) -> tensor<8x4x8x8xf32> {
  %w = memopt.param "bn1.weight" : tensor<4xf32>
  %b = memopt.param "bn1.bias" : tensor<4xf32>
  %m = memopt.buffer "bn1.running_mean" : tensor<4xf32>
  %v = memopt.buffer "bn1.running_var" : tensor<4xf32>
  %n = memopt.op "aten::batch_norm"(%x, %w, %b, %m, %v) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, true, 0.1, 1.0e-05, true] {mutates = array<i64: 3, 4>, overload = ""} : (tensor<8x4x16x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8x4x16x16xf32>
  %r = memopt.op "aten::relu_"(%n) [#memopt.arg<0>] {mutates = array<i64: 0>, overload = "", views = array<i64: 0>} : (tensor<8x4x16x16xf32>) -> tensor<8x4x16x16xf32>
  %p = memopt.op "aten::max_pool2d"(%r) [#memopt.arg<0>, [2, 2], [2, 2], [0, 0], [1, 1], false] {overload = ""} : (tensor<8x4x16x16xf32>) -> tensor<8x4x8x8xf32>
  return %p : tensor<8x4x8x8xf32>
}

// -----

// A ReLU feeding a convolution: the convolution keeps the same tensor, so a
// mask would free nothing. The ReLU after it keeps its own result alone; a
// ReLU of the input needs no gradient and keeps nothing.
// CHECK-LABEL: func.func @relu_then_conv
// CHECK: memopt.op "aten::relu"(%{{.*}}) [#memopt.arg<0>] {overload = ""} :
// CHECK: memopt.op "aten::relu"(%{{.*}}) {{.*}}saved_form = #memopt.saved<mask>
// CHECK: memopt.op "aten::relu"(%arg0) [#memopt.arg<0>] {overload = ""} :
func.func @relu_then_conv(%x: tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32> {
  %w = memopt.param "conv.weight" : tensor<4x4x3x3xf32>
  %y = memopt.op "aten::conv2d"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, [1, 1], [1, 1], [1, 1], 1] {overload = ""} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32>
  %r = memopt.op "aten::relu"(%y) [#memopt.arg<0>] {overload = ""} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %c = memopt.op "aten::conv2d"(%r, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, [1, 1], [1, 1], [1, 1], 1] {overload = ""} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32>
  %o = memopt.op "aten::relu"(%c) [#memopt.arg<0>] {overload = ""} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %q = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {overload = ""} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %s = memopt.op "aten::add"(%o, %q) [#memopt.arg<0>, #memopt.arg<1>, 1] {overload = "Tensor"} : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %s : tensor<2x4x8x8xf32>
}

// -----

// Dropouts: eager's CPU kernel keeps an input-sized noise tensor
// (16x64xf32: 4 KiB); the masked form keeps 1024 bits (128 bytes). A
// dropout whose p is only known at run time is masked too (the runtime falls
// back to ATen outside training); p = 0 (returns its input), training off
// and an input without gradient keep nothing (the first two return their
// input itself, which the memory model knows), and stay. Prefix DROP has the option
// off, prefix CUDA the pipeline for device=cuda (ATen's CUDA dropout keeps a byte
// mask of its own).
// RUN: memopt-opt %s --split-input-file --memopt-insert-saved-forms="dropout-masks=false" | FileCheck %s --check-prefix=DROP
// RUN: memopt-opt %s --split-input-file --memopt-pipeline="device=cuda" | FileCheck %s --check-prefix=CUDA
// CHECK-LABEL: func.func @dropouts
// CHECK: %[[A:.*]] = memopt.op "aten::dropout"(%{{.*}}) [#memopt.arg<0>, 1.000000e-01, true] {nondeterministic, overload = "", saved_form = #memopt.saved<mask>}
// CHECK: memopt.op "aten::dropout"(%[[A]], %{{.*}}, %{{.*}}) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>] {nondeterministic, overload = "", saved_form = #memopt.saved<mask>}
// CHECK: memopt.op "aten::dropout"(%{{.*}}) [#memopt.arg<0>, 0.000000e+00, true] {nondeterministic, overload = ""} :
// CHECK: memopt.op "aten::dropout"(%{{.*}}) [#memopt.arg<0>, 5.000000e-01, false] {nondeterministic, overload = ""} :
// CHECK: memopt.op "aten::dropout"(%arg0) [#memopt.arg<0>, 5.000000e-01, true] {nondeterministic, overload = ""} :
// DROP-LABEL: func.func @dropouts
// DROP-NOT: saved_form
// CUDA-LABEL: func.func @dropouts
// CUDA-NOT: saved_form
// BASE-LABEL: memory-model @dropouts
// BASE: saved aten::dropout 4096
// BASE: saved aten::dropout 4096
// BASE-NOT: saved aten::dropout
// BASE: peak
// MODEL-LABEL: memory-model @dropouts
// MODEL: saved aten::dropout 128
// MODEL: saved aten::dropout 128
// MODEL-NOT: saved aten::dropout
// MODEL: peak
func.func @dropouts(%x: tensor<16x64xf32>, %p: f64, %train: i1) -> tensor<16x64xf32> {
  %w = memopt.param "fc.weight" : tensor<64x64xf32>
  %y = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  %a = memopt.op "aten::dropout"(%y) [#memopt.arg<0>, 0.1, true] {nondeterministic, overload = ""} : (tensor<16x64xf32>) -> tensor<16x64xf32>
  %b = memopt.op "aten::dropout"(%a, %p, %train) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>] {nondeterministic, overload = ""} : (tensor<16x64xf32>, f64, i1) -> tensor<16x64xf32>
  %c = memopt.op "aten::dropout"(%b) [#memopt.arg<0>, 0.0, true] {nondeterministic, overload = ""} : (tensor<16x64xf32>) -> tensor<16x64xf32>
  %d = memopt.op "aten::dropout"(%c) [#memopt.arg<0>, 0.5, false] {nondeterministic, overload = ""} : (tensor<16x64xf32>) -> tensor<16x64xf32>
  %e = memopt.op "aten::dropout"(%x) [#memopt.arg<0>, 0.5, true] {nondeterministic, overload = ""} : (tensor<16x64xf32>) -> tensor<16x64xf32>
  %s = memopt.op "aten::add"(%d, %e) [#memopt.arg<0>, #memopt.arg<1>, 1] {overload = "Tensor"} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  return %s : tensor<16x64xf32>
}

// -----

// A dropout of a transposed tensor (multi-head attention's output) stays:
// the runtime leaves a strided input to at::dropout, whose noise PyTorch
// 1.13 lays out contiguously and later versions like the input.
// CHECK-LABEL: func.func @dropout_of_transpose
// CHECK: memopt.op "aten::dropout"(%{{.*}}) [#memopt.arg<0>, 1.000000e-01, true] {nondeterministic, overload = ""} :
// MODEL-LABEL: memory-model @dropout_of_transpose
// MODEL: saved aten::dropout 4096
func.func @dropout_of_transpose(%x: tensor<16x64xf32>) -> tensor<64x16xf32> {
  %w = memopt.param "fc.weight" : tensor<64x64xf32>
  %y = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  %t = memopt.op "aten::transpose"(%y) [#memopt.arg<0>, 0, 1] {overload = "int", views = array<i64: 0>} : (tensor<16x64xf32>) -> tensor<64x16xf32>
  %d = memopt.op "aten::dropout"(%t) [#memopt.arg<0>, 0.1, true] {nondeterministic, overload = ""} : (tensor<64x16xf32>) -> tensor<64x16xf32>
  return %d : tensor<64x16xf32>
}
