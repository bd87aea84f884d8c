// Export errors print as one line, in the importer's format, and exit non-zero.
// RUN: %python -c "import torch; torch.jit.script(torch.nn.Linear(4, 3)).save('%t.pt')"
// RUN: sed -e 's|@SOURCE@|%t.pt|g' %s > %t.mlir
// RUN: not memopt-translate --export-torchscript %t.mlir -o %t.out 2>&1 | FileCheck %s -DFILE=%t.mlir

// CHECK: memopt: error: parameter 'wieght' does not exist in '{{.*}}.pt': the model has no attribute 'wieght', at layer1 (model.py:42)
// CHECK-NOT: {{.}}

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<3x4xf32> {
    %w = memopt.param "wieght" : tensor<3x4xf32> loc(#site)
    return %w : tensor<3x4xf32>
  }
}
#site = loc("layer1"("model.py":42:7))
