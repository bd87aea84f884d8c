// RUN: memopt-opt %s --memopt-pack-saved-inputs="assume-binary=act" | FileCheck %s
// RUN: memopt-opt %s --verify-diagnostics --memopt-pack-saved-inputs="assume-binary=acts"
// RUN: memopt-opt %s --verify-diagnostics --memopt-pack-region-inputs="assume-binary=conv9"

// The user asserts that module `act` outputs binary values: the
// convolution reading its negation keeps that input packed too (the runtime
// checks the values when it packs them). A path that names no op is a typo:
// an error, not an assertion that silently asserts nothing.
// CHECK-LABEL: func.func @spiking_convs
// CHECK: memopt.op "aten::conv2d"(%{{.*}}) {{.*}}saved_input = #memopt.compress<bit>
// CHECK: memopt.op "aten::conv2d"(%{{.*}}) {{.*}}saved_input = #memopt.compress<bit>
// expected-error @+1 {{names no operation of @spiking_convs (--assume-binary)}}
func.func @spiking_convs(%x: tensor<8x4x16x16xf32>) -> tensor<8x4x16x16xf32> {
  %w0 = memopt.param "conv0.weight" : tensor<4x4x3x3xf32>
  %c0 = memopt.op "aten::conv2d"(%x, %w0) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, [1, 1], [1, 1], [1, 1], 1] {overload = ""} : (tensor<8x4x16x16xf32>, tensor<4x4x3x3xf32>) -> tensor<8x4x16x16xf32>
  %b = memopt.op "aten::ge"(%c0) [#memopt.arg<0>, 1.0] : (tensor<8x4x16x16xf32>) -> tensor<8x4x16x16xi1>
  %s = memopt.op "aten::to"(%b) [#memopt.arg<0>, 6, false, false, #memopt.none] : (tensor<8x4x16x16xi1>) -> tensor<8x4x16x16xf32>
  %w1 = memopt.param "conv1.weight" : tensor<4x4x3x3xf32>
  %c1 = memopt.op "aten::conv2d"(%s, %w1) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, [1, 1], [1, 1], [1, 1], 1] {overload = ""} : (tensor<8x4x16x16xf32>, tensor<4x4x3x3xf32>) -> tensor<8x4x16x16xf32>
  %g = memopt.op "aten::neg"(%c1) [#memopt.arg<0>] {overload = ""} : (tensor<8x4x16x16xf32>) -> tensor<8x4x16x16xf32> loc("act"("model.py":3:4))
  %w2 = memopt.param "conv2.weight" : tensor<4x4x3x3xf32>
  %c2 = memopt.op "aten::conv2d"(%g, %w2) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, [1, 1], [1, 1], [1, 1], 1] {overload = ""} : (tensor<8x4x16x16xf32>, tensor<4x4x3x3xf32>) -> tensor<8x4x16x16xf32>
  return %c2 : tensor<8x4x16x16xf32>
}
