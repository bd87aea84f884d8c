// RUN: memopt-opt %s --split-input-file --memopt-pack-saved-inputs | FileCheck %s
// RUN: memopt-opt %s --split-input-file --memopt-pack-region-inputs | FileCheck %s --check-prefix=NOSAVED

// Spikes (a threshold cast to float) feed a convolution: autograd keeps
// them packed. A negation feeding another one is left alone unless the
// user asserts that its module (`act`) outputs binary values
// (pack-saved-inputs-assumed.mlir).

// CHECK-LABEL: func.func @spiking_convs
// CHECK: %[[S:.*]] = memopt.op "aten::to"
// CHECK: memopt.op "aten::conv2d"(%[[S]], {{.*}}) {{.*}}saved_input = #memopt.compress<bit>
// CHECK: %[[G:.*]] = memopt.op "aten::neg"
// CHECK: memopt.op "aten::conv2d"(%[[G]], {{.*}}) [{{.*}}] {overload = ""} :
// Packing saved inputs is this pass's alone (not the region pass's).
// NOSAVED-LABEL: func.func @spiking_convs
// NOSAVED-NOT: saved_input
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

// -----

// Packing one copy frees nothing while another op keeps the full tensor
// (here the product keeps the spikes for its own backward).
// CHECK-LABEL: func.func @kept_elsewhere
// CHECK-NOT: saved_input
func.func @kept_elsewhere(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %b = memopt.op "aten::ge"(%x) [#memopt.arg<0>, 1.0] : (tensor<8x4xf32>) -> tensor<8x4xi1>
  %s = memopt.op "aten::to"(%b) [#memopt.arg<0>, 6, false, false, #memopt.none] : (tensor<8x4xi1>) -> tensor<8x4xf32>
  %p = memopt.param "fc.weight" : tensor<4x4xf32>
  %l = memopt.op "aten::linear"(%s, %p) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %m = memopt.op "aten::mul"(%s, %l) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %m : tensor<8x4xf32>
}

// -----

// A LIF neuron's hard reset v * (1 - s): the product keeps both factors, and
// 1 - s (TorchScript: 1 + (-s)) is binary, so it moves to operand 0 and is
// kept packed (the peak is the wider head's backward, where it waits). A
// product whose factors broadcast has no packed form.
// CHECK-LABEL: func.func @lif_reset
// CHECK: %[[R:.*]] = memopt.op "aten::add"(%{{.*}}) [#memopt.arg<0>, 1.000000e+00, 1]
// CHECK: memopt.op "aten::mul"(%[[R]], %[[V:.*]]) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor", saved_input = #memopt.compress<bit>}
// CHECK: memopt.op "aten::mul"(%[[V]], %{{.*}}) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} :
// NOSAVED-LABEL: func.func @lif_reset
// NOSAVED-NOT: saved_input
func.func @lif_reset(%x: tensor<8x4xf32>, %row: tensor<4xf32>) -> (tensor<8x64xf32>, tensor<8x4xf32>) {
  %w = memopt.param "fc.weight" : tensor<4x4xf32>
  %v = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %t = memopt.op "aten::tanh"(%v) [#memopt.arg<0>] : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %b = memopt.op "aten::ge"(%t) [#memopt.arg<0>, 1.0] : (tensor<8x4xf32>) -> tensor<8x4xi1>
  %s = memopt.op "aten::to"(%b) [#memopt.arg<0>, 6, false, false, #memopt.none] : (tensor<8x4xi1>) -> tensor<8x4xf32>
  %n = memopt.op "aten::neg"(%s) [#memopt.arg<0>] {overload = ""} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %r = memopt.op "aten::add"(%n) [#memopt.arg<0>, 1.000000e+00, 1] {overload = "Scalar"} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %m = memopt.op "aten::mul"(%v, %r) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %b2 = memopt.op "aten::ge"(%row) [#memopt.arg<0>, 1.0] : (tensor<4xf32>) -> tensor<4xi1>
  %s2 = memopt.op "aten::to"(%b2) [#memopt.arg<0>, 6, false, false, #memopt.none] : (tensor<4xi1>) -> tensor<4xf32>
  %m2 = memopt.op "aten::mul"(%v, %s2) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %wh = memopt.param "head.weight" : tensor<64x4xf32>
  %h = memopt.op "aten::linear"(%m, %wh) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<8x4xf32>, tensor<64x4xf32>) -> tensor<8x64xf32>
  return %h, %m2 : tensor<8x64xf32>, tensor<8x4xf32>
}

// -----

// Where the peak is the packing op's own backward, its input is unpacked
// there beside the packed copy: packing would raise the peak, so the input
// is kept as it is.
// CHECK-LABEL: func.func @peak_at_its_own_backward
// CHECK-NOT: saved_input
func.func @peak_at_its_own_backward(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %w = memopt.param "fc.weight" : tensor<4x4xf32>
  %v = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %b = memopt.op "aten::ge"(%x) [#memopt.arg<0>, 1.0] : (tensor<8x4xf32>) -> tensor<8x4xi1>
  %s = memopt.op "aten::to"(%b) [#memopt.arg<0>, 6, false, false, #memopt.none] : (tensor<8x4xi1>) -> tensor<8x4xf32>
  %m = memopt.op "aten::mul"(%s, %v) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %m : tensor<8x4xf32>
}
