// RUN: memopt-opt %s -memopt-test-memory-model="accumulate-in-place=1" -o /dev/null 2>&1 | FileCheck %s
// RUN: memopt-opt %s -memopt-test-memory-model="accumulate-in-place=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=V113
// A fresh buffer written in place after it was made, through a slice
// (`out[:, :4] = h[:, :4] * 2`) and directly (`b.copy_(h); b.add_(1)`):
// the IR reads the buffer's SSA value afterwards, and autograd gives those
// reads the writes' gradients. Each write's backward runs (before, none
// did, and the gradient of `h` through them was missed). The slice write
// (CopySlices) copies the base-sized incoming gradient and hands its
// source a clone of the slice (+192 B); the slice path's fresh gradient
// of `h` takes the sum with the loss gradient passed on by copy_ in place
// (no third buffer; PyTorch 1.13 adds out of place, +128 B at the slice).
// The same structure as a training step of this model
// measures at 64x8 (every figure 16 times these); peak 672 B measured at
// 4x8 (PyTorch 1.13).
// CHECK-LABEL: memory-model @forward
// CHECK:      backward aten::add_ live 384
// CHECK-NEXT: backward aten::copy_ live 384
// CHECK-NEXT: backward aten::copy_ live 576
// CHECK-NEXT: backward aten::mul live 384
// CHECK-NEXT: backward aten::slice live 448
// CHECK-NEXT: backward aten::slice live 512
// CHECK:      peak 672 at backward aten::linear
// V113:      backward aten::slice live 448
// V113-NEXT: backward aten::slice live 640
// V113:      peak 672 at backward aten::linear
module {
  func.func @forward(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %0 = memopt.param "c.weight" : tensor<8x8xf32>
    %1 = memopt.param "c.bias" : tensor<8xf32>
    %2 = memopt.op "aten::linear"(%arg0, %0, %1) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>] {overload = ""} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %3 = memopt.op "aten::zeros_like"(%2) [#memopt.arg<0>, #memopt.none, #memopt.none, #memopt.none, #memopt.none, #memopt.none] {overload = ""} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %4 = memopt.op "aten::slice"(%2) [#memopt.arg<0>, 0, #memopt.none, #memopt.none, 1] {overload = "Tensor", views = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %5 = memopt.op "aten::slice"(%4) [#memopt.arg<0>, 1, #memopt.none, 4, 1] {overload = "Tensor", views = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<4x4xf32>
    %6 = memopt.op "aten::mul"(%5) [#memopt.arg<0>, 2] {overload = "Scalar"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %7 = memopt.op "aten::slice"(%3) [#memopt.arg<0>, 0, #memopt.none, #memopt.none, 1] {overload = "Tensor", views = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %8 = memopt.op "aten::slice"(%7) [#memopt.arg<0>, 1, #memopt.none, 4, 1] {overload = "Tensor", views = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<4x4xf32>
    %9 = memopt.op "aten::copy_"(%8, %6) [#memopt.arg<0>, #memopt.arg<1>, false] {mutates = array<i64: 0>, overload = "", views = array<i64: 0>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %10 = memopt.op "aten::zeros_like"(%2) [#memopt.arg<0>, #memopt.none, #memopt.none, #memopt.none, #memopt.none, #memopt.none] {overload = ""} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %11 = memopt.op "aten::copy_"(%10, %2) [#memopt.arg<0>, #memopt.arg<1>, false] {mutates = array<i64: 0>, overload = "", views = array<i64: 0>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %12 = memopt.op "aten::add_"(%10) [#memopt.arg<0>, 1, 1] {mutates = array<i64: 0>, overload = "Scalar", views = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %13 = memopt.op "aten::mul"(%3) [#memopt.arg<0>, 3] {overload = "Scalar"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %14 = memopt.op "aten::add"(%13, %10) [#memopt.arg<0>, #memopt.arg<1>, 1] {overload = "Tensor"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    return %14 : tensor<4x8xf32>
  }
}
