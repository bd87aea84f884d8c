// A `with torch.no_grad():` block is the same ops on detached inputs: the
// input and the teacher's parameters read inside go through aten::detach,
// so nothing inside is saved for backward and its result has no gradient;
// the student outside reads the input itself.
// RUN: memopt-translate --import-torchscript %S/../Inputs/no_grad.pt --input-shape x:2x3 | FileCheck %s
// CHECK-LABEL: func.func @forward(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: %[[X:.*]] = memopt.op "aten::detach"(%arg0)
// CHECK: %[[TW:.*]] = memopt.param "teacher.weight"
// CHECK: %[[DTW:.*]] = memopt.op "aten::detach"(%[[TW]])
// CHECK: %[[TB:.*]] = memopt.param "teacher.bias"
// CHECK: %[[DTB:.*]] = memopt.op "aten::detach"(%[[TB]])
// CHECK: %[[TARGET:.*]] = memopt.op "aten::linear"(%[[X]], %[[DTW]], %[[DTB]])
// CHECK: %[[SW:.*]] = memopt.param "student.weight"
// CHECK: %[[SB:.*]] = memopt.param "student.bias"
// CHECK: %[[OUT:.*]] = memopt.op "aten::linear"(%arg0, %[[SW]], %[[SB]])
// CHECK: memopt.op "aten::sub"(%[[OUT]], %[[TARGET]])
// CHECK-NOT: prim::Enter
// CHECK-NOT: prim::Exit
