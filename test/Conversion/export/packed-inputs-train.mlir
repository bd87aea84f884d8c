// A binary conv and linear input saved packed (saved_input) train bit for
// bit like eager with the runtime's memopt::conv_packed / linear_packed.
// The model and its IR are made by the script; this file has no IR.
// RUN: %python %s.py %t memopt-translate | FileCheck %s
// CHECK: ops.memopt.conv_packed({{.*}}, "bit")
// CHECK: ops.memopt.linear_packed({{.*}}, "bool")
// CHECK: step 0: bitwise
// CHECK-NEXT: step 1: bitwise
