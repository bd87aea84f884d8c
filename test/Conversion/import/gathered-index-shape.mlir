// A table gathered by a buffer of integer indices (Swin's relative position
// bias) has a static shape, the indices' shape: control flow on a shape
// computed from it folds. aten::index used to be counted as data-dependent
// whatever its indices were, which stopped every Swin. A boolean mask
// (errors.mlir, MASK) selects a data-dependent count and still does not.
// RUN: memopt-translate --import-torchscript %S/../Inputs/gathered_bias.pt --input-shape x:3x2x4 | FileCheck %s
// CHECK-LABEL: func.func @forward(%arg0: tensor<3x2x4xf32>) -> tensor<3x2x4xf32>
// CHECK-SAME: memopt.shape_assumes = ["prim::If condition at make_models.py:{{[0-9]+}}"]
// CHECK: %[[TABLE:.*]] = memopt.param "table" : tensor<5x4xf32>
// CHECK: %[[INDEX:.*]] = memopt.buffer "index" : tensor<3x2xi64>
// CHECK: %[[LIST:.*]] = memopt.op "prim::ListConstruct"(%[[INDEX]])
// CHECK: %[[BIAS:.*]] = memopt.op "aten::index"(%[[TABLE]], %[[LIST]]) {{.*}} -> tensor<3x2x4xf32>
// CHECK: %[[SUM:.*]] = memopt.op "aten::add"(%arg0, %[[BIAS]])
// CHECK: memopt.op "aten::mul"(%[[SUM]]) [#memopt.arg<0>, 2.000000e+00]
// CHECK-NOT: prim::If
