// Dropout draws random numbers: nondeterministic, with `training` as an SSA
// attribute read (the function stays valid in both modes).
// RUN: memopt-translate --import-torchscript %S/../Inputs/dropout.pt --input-shape x:2x8 | FileCheck %s
// Without input shapes every tensor is unranked (parameters keep their shape).
// RUN: memopt-translate --import-torchscript %S/../Inputs/dropout.pt | FileCheck %s --check-prefix=UNRANKED

// CHECK-LABEL: func.func @forward(%{{.*}}: tensor<2x8xf32>) -> tensor<2x8xf32> {
// CHECK: %[[L:.*]] = memopt.op "aten::linear"
// CHECK: %[[T:.*]] = memopt.get_attr "drop.training" : i1
// CHECK: memopt.op "aten::dropout"(%[[L]], %[[T]]) [#memopt.arg<0>, 2.500000e-01, #memopt.arg<1>] {nondeterministic, overload = ""} : (tensor<2x8xf32>, i1) -> tensor<2x8xf32>

// UNRANKED-LABEL: func.func @forward(%{{.*}}: tensor<*xf32>) -> tensor<*xf32> {
// UNRANKED: memopt.param "fc.weight" : tensor<8x8xf32>
// UNRANKED: memopt.op "aten::linear"{{.*}} -> tensor<*xf32>
// UNRANKED: memopt.op "aten::dropout"{{.*}} {nondeterministic, overload = ""} : (tensor<*xf32>, i1) -> tensor<*xf32>
