// RUN: memopt-opt %s -memopt-test-memory-model -verify-diagnostics -o /dev/null | FileCheck %s

// Complex tensors carry gradients: a complex weight built from two real
// parameters (torch.complex, as Fourier layers do), read back as real and
// summed, scales an activation. mul then saves the activation for the
// scalar's gradient, and backward runs through the complex ops (their
// rows in the saved-tensor table: complex saves both parts, real is a
// view). Before complex element types counted as differentiable, the model
// stopped the gradient at aten::complex: no saved activation and no
// backward, 8196 B predicted for a step that peaks at 24580 B (the same
// ops in a PyTorch 1.13 module measure as predicted, test_user_models.py's
// fourier_layer).
// CHECK-LABEL: memory-model @complex_weights
// CHECK-NOT: unknown
// CHECK: forward aten::mul live 8196
// CHECK-NEXT: backward aten::mul live 24580
// CHECK-NEXT: backward aten::sum live 16388
// CHECK-NEXT: backward aten::real live 16516
// CHECK-NEXT: backward aten::complex live 16512
// CHECK: peak 24580 at backward aten::mul
func.func @complex_weights(%x: tensor<2x1024xf32>) -> tensor<2x1024xf32> {
  %wr = memopt.param "wr" : tensor<16xf32>
  %wi = memopt.param "wi" : tensor<16xf32>
  %c = memopt.op "aten::complex"(%wr, %wi) [#memopt.arg<0>, #memopt.arg<1>] {overload = ""}
      : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xcomplex<f32>>
  %r = memopt.op "aten::real"(%c) [#memopt.arg<0>] {overload = ""}
      : (tensor<16xcomplex<f32>>) -> tensor<16xf32>
  %s = memopt.op "aten::sum"(%r) [#memopt.arg<0>, #memopt.none]
      : (tensor<16xf32>) -> tensor<f32>
  %y = memopt.op "aten::mul"(%x, %s) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<2x1024xf32>, tensor<f32>) -> tensor<2x1024xf32>
  return %y : tensor<2x1024xf32>
}
