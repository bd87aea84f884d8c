// Submodule calls are inlined; the module hierarchy survives in parameter
// names and in op locations (module path + Python source line).
// RUN: memopt-translate --import-torchscript %S/../Inputs/nested.pt --input-shape x:1x3x4x4 --method forward -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s

// CHECK: func.func @forward(%[[X:.*]]: tensor<1x3x4x4xf32> {{.*}}) -> tensor<1x2xf32>
// CHECK-NOT: memopt.assumes
// CHECK: memopt.param "features.0.weight" : tensor<4x3x1x1xf32> loc("features.0.weight")
// CHECK: %[[C0:.*]] = memopt.op "aten::conv2d"(%[[X]], {{.*}} loc("features.0"("{{.*}}conv.py":{{[0-9]+}}:{{[0-9]+}}))
// CHECK: memopt.param "features.1.conv.weight" : tensor<4x4x3x3xf32>
// CHECK: %[[C1:.*]] = memopt.op "aten::conv2d"(%[[C0]], {{.*}} loc("features.1.conv"("{{.*}}conv.py":{{[0-9]+}}:{{[0-9]+}}))
// CHECK: %[[R:.*]] = memopt.op "aten::relu"(%[[C1]]) {{.*}} loc("features.1.act"("{{.*}}functional.py":{{[0-9]+}}:{{[0-9]+}}))
// Block.forward, line 91 of make_models.py: `self.act(self.conv(x)) + x`.
// CHECK: memopt.op "aten::add"(%[[R]], %[[C0]]) {{.*}} loc("features.1"("{{.*}}make_models.py":91:{{[0-9]+}}))
// Root module code has a plain file location.
// CHECK: memopt.op "aten::mean"{{.*}} loc("{{.*}}make_models.py":105:{{[0-9]+}})
// requires_grad=False on head.bias: frozen.
// CHECK: memopt.param "head.bias" frozen : tensor<2xf32>
// CHECK: memopt.op "aten::linear"{{.*}} loc("head"(
