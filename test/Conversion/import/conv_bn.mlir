// Conv -> batch norm -> relu in training mode: parameters and buffers by
// state_dict key, batch norm's hidden writes
// to its running statistics, control flow folded on `bn.training`.
// RUN: memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --input-shape x:2x3x8x8 -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s

// CHECK: module attributes {memopt.source = "{{.*}}conv_bn.pt"}
// CHECK: func.func @forward(%[[X:.*]]: tensor<2x3x8x8xf32> {{.*}}) -> tensor<2x4x8x8xf32>
// CHECK-SAME: attributes {memopt.assumes = {bn.training = true}}
// CHECK: %[[W:.*]] = memopt.param "conv.weight" : tensor<4x3x3x3xf32> loc("conv.weight")
// CHECK: %[[B:.*]] = memopt.get_attr "conv.bias" : !memopt.script<"Tensor?">
// CHECK: %[[C:.*]] = memopt.op "aten::conv2d"(%[[X]], %[[W]], %[[B]]) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1] {overload = ""}
// CHECK-SAME: -> tensor<2x4x8x8xf32> loc("conv"("{{.*}}conv.py":{{[0-9]+}}:{{[0-9]+}}))
// The `if self.training` branch of BatchNorm: num_batches_tracked += 1.
// CHECK: %[[N:.*]] = memopt.buffer "bn.num_batches_tracked" : tensor<i64>
// CHECK: memopt.op "aten::add_"(%[[N]]) [#memopt.arg<0>, 1, 1] {mutates = array<i64: 0>, overload = "Scalar", views = array<i64: 0>}
// CHECK-SAME: loc("bn"("{{.*}}batchnorm.py":{{[0-9]+}}:{{[0-9]+}}))
// CHECK: %[[M:.*]] = memopt.buffer "bn.running_mean" : tensor<4xf32>
// CHECK: %[[V:.*]] = memopt.buffer "bn.running_var" : tensor<4xf32>
// CHECK: memopt.param "bn.weight" : tensor<4xf32>
// CHECK: memopt.param "bn.bias" : tensor<4xf32>
// `bn_training = True if self.training else ...` was folded on bn.training:
// CHECK: %[[Y:.*]] = memopt.op "aten::batch_norm"(%[[C]], %{{.*}}, %{{.*}}, %[[M]], %[[V]]) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, true, 1.000000e-01, 1.000000e-05, true] {mutates = array<i64: 3, 4>, overload = ""}
// CHECK-SAME: -> tensor<2x4x8x8xf32>
// F.relu(inplace=False) is called in the root module: no module path.
// CHECK: %[[R:.*]] = memopt.op "aten::relu"(%[[Y]]) [#memopt.arg<0>] {overload = ""} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32> loc("{{.*}}functional.py":{{[0-9]+}}:{{[0-9]+}})
// CHECK: return %[[R]] : tensor<2x4x8x8xf32>
// The input-shape guards of BatchNorm were folded away.
// CHECK-NOT: RaiseException
