// A torch.jit.trace'd model imports like a scripted one; the traced ops
// (aten::_convolution) are kept as recorded.
// RUN: memopt-translate --import-torchscript %S/../Inputs/traced.pt --input-shape x:2x3x4x4 -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s

// CHECK-LABEL: func.func @forward(%{{.*}}: tensor<2x3x4x4xf32> {{.*}}) -> tensor<2x2xf32>
// CHECK: memopt.op "aten::_convolution"{{.*}} -> tensor<2x4x4x4xf32> loc("features.0"(
// CHECK: memopt.op "aten::_convolution"{{.*}} -> tensor<2x4x4x4xf32> loc("features.1.conv"(
// CHECK: memopt.param "head.bias" frozen : tensor<2xf32>
// CHECK: memopt.op "aten::linear"{{.*}} -> tensor<2x2xf32>
