// Control flow on tensor data is kept whole: one memopt.op carrying the
// TorchScript graph that runs it, whose operands are the values it reads
// (the condition first) and whose results keep the static shapes both
// branches give. Before: "prim::If condition depends on tensor data".
// RUN: memopt-translate --import-torchscript %S/../Inputs/data_dependent_if.pt --input-shape x:2x3 | FileCheck %s
// CHECK-LABEL: func.func @forward(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: %[[SUM:.*]] = memopt.op "aten::sum"(%arg0)
// CHECK: %[[GT:.*]] = memopt.op "aten::gt"(%[[SUM]])
// CHECK: %[[COND:.*]] = memopt.op "aten::Bool"(%[[GT]])
// CHECK: %[[IF:.*]] = memopt.op "prim::If"(%[[COND]], %arg0) [#memopt.arg<0>, #memopt.arg<1>]
// CHECK-SAME: script = "graph(%0 : bool,\0A      %1 : Tensor):
// CHECK-SAME: prim::If(%0)\0A    block0():
// CHECK-SAME: aten::mul(%1, %{{[0-9]+}})
// CHECK-SAME: block1():\0A      -> (%1)
// CHECK-NOT: make_models.py
// CHECK-SAME: (i1, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: return %[[IF]]

// A while loop on data: the parameters its body reads become state reads
// before it (operands of the op), the loop-carried tensor keeps its shape.
// RUN: memopt-translate --import-torchscript %S/../Inputs/data_dependent_loop.pt --input-shape x:2x3 | FileCheck %s --check-prefix=LOOP
// LOOP: %[[COND:.*]] = memopt.op "aten::Bool"
// LOOP: %[[W:.*]] = memopt.param "layer.weight" : tensor<3x3xf32>
// LOOP: %[[B:.*]] = memopt.param "layer.bias" : tensor<3xf32>
// LOOP: %[[OUT:.*]] = memopt.op "prim::Loop"(%[[COND]], %arg0, %[[W]], %[[B]])
// LOOP-SAME: prim::Loop(
// LOOP-SAME: aten::linear(
// LOOP-SAME: (i1, tensor<2x3xf32>, tensor<3x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// LOOP-NEXT: return %[[OUT]]

// The export inlines the graph: the decision is made when the model runs.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memopt-translate --import-torchscript %S/../Inputs/data_dependent_loop.pt --input-shape x:2x3 \
// RUN:   | memopt-translate --export-torchscript -o %t/loop.pt
// RUN: %python -c "import torch, sys; m = torch.jit.load(sys.argv[1]); torch.manual_seed(0); x = torch.randn(2, 3) * 100; print(m.code); print('norm', bool(m(x).norm() <= 1.0))" %t/loop.pt | FileCheck %s --check-prefix=EXPORT
// EXPORT: def forward(
// EXPORT: while
// EXPORT: torch.linear(
// EXPORT: norm True
