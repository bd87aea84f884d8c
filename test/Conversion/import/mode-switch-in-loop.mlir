// A charge rule picked by a module attribute (kind = "lif") inside a
// method with early returns, called in a time-step loop: each unrolled
// step folds its prim::If to the LIF branch and the next step starts from
// that branch's result. Both used to fail: the loop kept a pointer to the
// folded If's output (the next step read a freed value: "Schema not found
// for node"), and the step's value, consumed by `append` in the same step,
// had its computed tensor released before the next step read it (shapes
// lost, stack of 1 instead of 3).
// RUN: memopt-translate --import-torchscript %S/../Inputs/mode_switch.pt --input-shape x_seq:3x2x4 | FileCheck %s
// CHECK-LABEL: func.func @forward(%arg0: tensor<3x2x4xf32>) -> tensor<3x2x4xf32>
// CHECK-SAME: memopt.assumes = {kind = "lif"}
// CHECK: %[[V0:.*]] = memopt.op "aten::zeros_like"
// CHECK: %[[X0:.*]] = memopt.op "aten::select"(%arg0) [#memopt.arg<0>, 0, 0]
// CHECK: %[[M0:.*]] = memopt.op "aten::mul"(%[[V0]])
// CHECK: %[[S0:.*]] = memopt.op "aten::sub"(%[[V0]], %[[M0]])
// CHECK: %[[V1:.*]] = memopt.op "aten::add"(%[[S0]], %[[X0]]) {{.*}} -> tensor<2x4xf32>
// CHECK: %[[X1:.*]] = memopt.op "aten::select"(%arg0) [#memopt.arg<0>, 0, 1]
// CHECK: %[[M1:.*]] = memopt.op "aten::mul"(%[[V1]]) {{.*}} -> tensor<2x4xf32>
// CHECK: %[[S1:.*]] = memopt.op "aten::sub"(%[[V1]], %[[M1]])
// CHECK: %[[V2:.*]] = memopt.op "aten::add"(%[[S1]], %[[X1]]) {{.*}} -> tensor<2x4xf32>
// CHECK: memopt.op "aten::mul"(%[[V2]]) {{.*}} -> tensor<2x4xf32>
// CHECK-NOT: tensor<*xf32>)
// CHECK: memopt.op "aten::stack"{{.*}} -> tensor<3x2x4xf32>
