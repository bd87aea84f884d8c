// An -o path that cannot be written is one `memopt: error:` line, before any
// work (memopt-translate asks reportUnwritableExportOutput first).
// RUN: not memopt-translate --export-torchscript %s -o %t.missing-dir/out.pt 2>&1 | FileCheck %s -DDIR=%t.missing-dir
// RUN: mkdir -p %t.dir
// RUN: not memopt-translate --export-torchscript %s -o %t.dir 2>&1 | FileCheck %s --check-prefix=DIRECTORY -DDIR=%t.dir

// CHECK: memopt: error: cannot write '[[DIR]]/out.pt': directory '[[DIR]]' does not exist
// CHECK-NOT: {{.}}

// DIRECTORY: memopt: error: cannot write '[[DIR]]': it is a directory
// DIRECTORY-NOT: {{.}}

module attributes {memopt.source = "/nonexistent.pt"} {
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}
