// RUN: memopt-opt %s --split-input-file --memopt-insert-compression | FileCheck %s
// RUN: memopt-opt %s --split-input-file --memopt-insert-compression="saved-forms=false" | FileCheck %s --check-prefix=OFF
// RUN: memopt-opt %s --split-input-file --memopt-insert-compression -memopt-test-memory-model -o /dev/null | FileCheck %s --check-prefix=MODEL
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
