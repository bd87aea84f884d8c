// A multi-step LIF neuron: the loop over T = 4 time steps is unrolled, the
// membrane state written in forward is an explicit memopt.set_attr.
// RUN: memopt-translate --import-torchscript %S/../Inputs/lif.pt --input-shape x:4x2x8 -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s
// Without input shapes the loop still unrolls (T is a constant).
// RUN: memopt-translate --import-torchscript %S/../Inputs/lif.pt | FileCheck %s --check-prefix=UNRANKED

// CHECK-LABEL: func.func @forward(%{{.*}}: tensor<4x2x8xf32>{{.*}}) -> tensor<4x2x6xf32>
// CHECK: %[[FC:.*]] = memopt.op "aten::linear"{{.*}} -> tensor<4x2x6xf32> loc("fc"(
// CHECK: %[[SPIKES:.*]] = memopt.op "prim::ListConstruct"() [] : () -> !memopt.list<tensor<*xf32>>
// Step t = 0 selects x_seq[0] (line 47 of make_models.py: `v = v + ...`).
// CHECK: memopt.op "aten::select"(%[[FC]]) [#memopt.arg<0>, 0, 0] {overload = "int", views = array<i64: 0>} : (tensor<4x2x6xf32>) -> tensor<2x6xf32> loc("lif"("{{.*}}make_models.py":47:{{[0-9]+}}))
// CHECK: memopt.get_attr "lif.tau" : f64
// CHECK: memopt.op "aten::append"(%[[SPIKES]], %{{.*}}) [#memopt.arg<0>, #memopt.arg<1>] {mutates = array<i64: 0>, overload = "t", views = array<i64: 0>}
// CHECK: memopt.op "aten::select"(%[[FC]]) [#memopt.arg<0>, 0, 1]
// CHECK: memopt.op "aten::append"(%[[SPIKES]]
// CHECK: memopt.op "aten::select"(%[[FC]]) [#memopt.arg<0>, 0, 2]
// CHECK: memopt.op "aten::append"(%[[SPIKES]]
// CHECK: memopt.op "aten::select"(%[[FC]]) [#memopt.arg<0>, 0, 3]
// CHECK: %[[V:.*]] = memopt.op "aten::mul"
// CHECK: memopt.op "aten::append"(%[[SPIKES]]
// CHECK-NOT: aten::append
// CHECK: memopt.set_attr "lif.v_last" = %[[V]] : tensor<2x6xf32> loc("lif"
// CHECK: %[[OUT:.*]] = memopt.op "aten::stack"(%[[SPIKES]]) [#memopt.arg<0>, 0] {overload = ""} : (!memopt.list<tensor<*xf32>>) -> tensor<4x2x6xf32>
// CHECK: return %[[OUT]]

// UNRANKED-LABEL: func.func @forward(%{{.*}}: tensor<*xf32>) -> tensor<*xf32>
// UNRANKED: memopt.param "fc.weight" : tensor<6x8xf32>
// UNRANKED-COUNT-4: memopt.op "aten::append"
// UNRANKED: memopt.set_attr "lif.v_last"
