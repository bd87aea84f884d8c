// Linear layers marked backward = #memopt.backward<weight_rows> (one with
// its binary input saved packed too) export as the runtime's
// memopt::linear_weight_rows and train bit for bit like eager while `.grad`
// stays allocated between steps (their weight gradients then go straight
// into the zeroed `.grad`) and when it is set to None (the whole gradient, as eager).
// The model and its IR are made by the script; this file has no IR.
// RUN: %python %s.py %t memopt-translate | FileCheck %s
// CHECK: ops.memopt.linear_weight_rows({{.*}}, "keep")
// CHECK: ops.memopt.linear_weight_rows({{.*}}, "bit")
// CHECK: resident step 0: bitwise
// CHECK-NEXT: resident step 1: bitwise
// CHECK-NEXT: resident step 2: bitwise
// CHECK-NEXT: allocated step 0: bitwise
// CHECK-NEXT: allocated step 1: bitwise
