// RUN: memopt-opt %s --memopt-insert-checkpoints="budget=60%" --mlir-print-debuginfo | FileCheck %s --check-prefix=BUDGET
// RUN: memopt-opt %s --memopt-insert-checkpoints="prefer=memory" | FileCheck %s --check-prefix=MEMORY
// RUN: memopt-opt %s --memopt-insert-checkpoints="budget=100%" | FileCheck %s --check-prefix=ROOMY
// RUN: memopt-opt %s --memopt-insert-checkpoints="prefer=speed checkpoint=blocks.7" | FileCheck %s --check-prefix=FORCED
// RUN: memopt-opt %s --memopt-insert-checkpoints="prefer=memory no-checkpoint=blocks" | FileCheck %s --check-prefix=FORBIDDEN
// RUN: memopt-opt %s --memopt-insert-checkpoints="budget=10% allow-over-budget" | FileCheck %s --check-prefix=OVER

// A chain of sixteen linear+tanh blocks: each saves a 1 MiB activation.

// BUDGET-LABEL: func.func @chain
// BUDGET-SAME: memopt.plan = #memopt.plan<baseline_peak_bytes = [[BASE:[0-9]+]], planned_peak_bytes = {{[0-9]+}}, budget_bytes = [[BUDGET:[0-9]+]], feasible = true
// BUDGET: memopt.checkpoint "blocks.0..blocks.{{[0-9]+}}"(%arg0) policies [#memopt.keep] {memopt.lowers_peak_by = {{[1-9][0-9]*}} : i64, memopt.reason = "recomputing {{.*}} ms in backward frees {{.*}} MiB, with its input kept", memopt.saved_bytes_avoided = {{[0-9]+}} : i64}
// BUDGET: memopt.param "blocks.0.fc.weight"
// BUDGET: memopt.op "aten::linear"
// BUDGET: memopt.yield
// BUDGET: memopt.checkpoint "blocks.{{[0-9]+}}..blocks.{{[0-9]+}}"
// BUDGET: return

// The least peak within a quarter of the step time.
// MEMORY: preference = memory
// MEMORY: memopt.checkpoint "blocks.{{[0-9]+}}..blocks.{{[0-9]+}}"

// A budget above the baseline needs no recomputation.
// ROOMY: planned_peak_bytes = [[P:[0-9]+]]
// ROOMY-NOT: memopt.checkpoint

// FORCED: memopt.checkpoint "{{.*}}blocks.7"
// FORCED-NOT: memopt.checkpoint

// FORBIDDEN-NOT: memopt.checkpoint

// OVER: feasible = false
// OVER: memopt.checkpoint

func.func @chain(%x: tensor<4096x64xf32>) -> tensor<4096x64xf32> {
  %w0 = memopt.param "blocks.0.fc.weight" : tensor<64x64xf32> loc("blocks.0.fc"("model.py":10:5))
  %h0 = memopt.op "aten::linear"(%x, %w0) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<4096x64xf32>, tensor<64x64xf32>) -> tensor<4096x64xf32> loc("blocks.0.fc"("model.py":10:9))
  %r0 = memopt.op "aten::tanh"(%h0) [#memopt.arg<0>] {overload = ""} : (tensor<4096x64xf32>) -> tensor<4096x64xf32> loc("blocks.0.act"("model.py":10:20))
  %w1 = memopt.param "blocks.1.fc.weight" : tensor<64x64xf32> loc("blocks.1.fc"("model.py":11:5))
  %h1 = memopt.op "aten::linear"(%r0, %w1) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<4096x64xf32>, tensor<64x64xf32>) -> tensor<4096x64xf32> loc("blocks.1.fc"("model.py":11:9))
  %r1 = memopt.op "aten::tanh"(%h1) [#memopt.arg<0>] {overload = ""} : (tensor<4096x64xf32>) -> tensor<4096x64xf32> loc("blocks.1.act"("model.py":11:20))
  %w2 = memopt.param "blocks.2.fc.weight" : tensor<64x64xf32> loc("blocks.2.fc"("model.py":12:5))
  %h2 = memopt.op "aten::linear"(%r1, %w2) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<4096x64xf32>, tensor<64x64xf32>) -> tensor<4096x64xf32> loc("blocks.2.fc"("model.py":12:9))
  %r2 = memopt.op "aten::tanh"(%h2) [#memopt.arg<0>] {overload = ""} : (tensor<4096x64xf32>) -> tensor<4096x64xf32> loc("blocks.2.act"("model.py":12:20))
  %w3 = memopt.param "blocks.3.fc.weight" : tensor<64x64xf32> loc("blocks.3.fc"("model.py":13:5))
  %h3 = memopt.op "aten::linear"(%r2, %w3) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<4096x64xf32>, tensor<64x64xf32>) -> tensor<4096x64xf32> loc("blocks.3.fc"("model.py":13:9))
  %r3 = memopt.op "aten::tanh"(%h3) [#memopt.arg<0>] {overload = ""} : (tensor<4096x64xf32>) -> tensor<4096x64xf32> loc("blocks.3.act"("model.py":13:20))
  %w4 = memopt.param "blocks.4.fc.weight" : tensor<64x64xf32> loc("blocks.4.fc"("model.py":14:5))
  %h4 = memopt.op "aten::linear"(%r3, %w4) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<4096x64xf32>, tensor<64x64xf32>) -> tensor<4096x64xf32> loc("blocks.4.fc"("model.py":14:9))
  %r4 = memopt.op "aten::tanh"(%h4) [#memopt.arg<0>] {overload = ""} : (tensor<4096x64xf32>) -> tensor<4096x64xf32> loc("blocks.4.act"("model.py":14:20))
  %w5 = memopt.param "blocks.5.fc.weight" : tensor<64x64xf32> loc("blocks.5.fc"("model.py":15:5))
  %h5 = memopt.op "aten::linear"(%r4, %w5) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<4096x64xf32>, tensor<64x64xf32>) -> tensor<4096x64xf32> loc("blocks.5.fc"("model.py":15:9))
  %r5 = memopt.op "aten::tanh"(%h5) [#memopt.arg<0>] {overload = ""} : (tensor<4096x64xf32>) -> tensor<4096x64xf32> loc("blocks.5.act"("model.py":15:20))
  %w6 = memopt.param "blocks.6.fc.weight" : tensor<64x64xf32> loc("blocks.6.fc"("model.py":16:5))
  %h6 = memopt.op "aten::linear"(%r5, %w6) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<4096x64xf32>, tensor<64x64xf32>) -> tensor<4096x64xf32> loc("blocks.6.fc"("model.py":16:9))
  %r6 = memopt.op "aten::tanh"(%h6) [#memopt.arg<0>] {overload = ""} : (tensor<4096x64xf32>) -> tensor<4096x64xf32> loc("blocks.6.act"("model.py":16:20))
  %w7 = memopt.param "blocks.7.fc.weight" : tensor<64x64xf32> loc("blocks.7.fc"("model.py":17:5))
  %h7 = memopt.op "aten::linear"(%r6, %w7) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<4096x64xf32>, tensor<64x64xf32>) -> tensor<4096x64xf32> loc("blocks.7.fc"("model.py":17:9))
  %r7 = memopt.op "aten::tanh"(%h7) [#memopt.arg<0>] {overload = ""} : (tensor<4096x64xf32>) -> tensor<4096x64xf32> loc("blocks.7.act"("model.py":17:20))
  %w8 = memopt.param "blocks.8.fc.weight" : tensor<64x64xf32> loc("blocks.8.fc"("model.py":18:5))
  %h8 = memopt.op "aten::linear"(%r7, %w8) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<4096x64xf32>, tensor<64x64xf32>) -> tensor<4096x64xf32> loc("blocks.8.fc"("model.py":18:9))
  %r8 = memopt.op "aten::tanh"(%h8) [#memopt.arg<0>] {overload = ""} : (tensor<4096x64xf32>) -> tensor<4096x64xf32> loc("blocks.8.act"("model.py":18:20))
  %w9 = memopt.param "blocks.9.fc.weight" : tensor<64x64xf32> loc("blocks.9.fc"("model.py":19:5))
  %h9 = memopt.op "aten::linear"(%r8, %w9) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<4096x64xf32>, tensor<64x64xf32>) -> tensor<4096x64xf32> loc("blocks.9.fc"("model.py":19:9))
  %r9 = memopt.op "aten::tanh"(%h9) [#memopt.arg<0>] {overload = ""} : (tensor<4096x64xf32>) -> tensor<4096x64xf32> loc("blocks.9.act"("model.py":19:20))
  %w10 = memopt.param "blocks.10.fc.weight" : tensor<64x64xf32> loc("blocks.10.fc"("model.py":20:5))
  %h10 = memopt.op "aten::linear"(%r9, %w10) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<4096x64xf32>, tensor<64x64xf32>) -> tensor<4096x64xf32> loc("blocks.10.fc"("model.py":20:9))
  %r10 = memopt.op "aten::tanh"(%h10) [#memopt.arg<0>] {overload = ""} : (tensor<4096x64xf32>) -> tensor<4096x64xf32> loc("blocks.10.act"("model.py":20:20))
  %w11 = memopt.param "blocks.11.fc.weight" : tensor<64x64xf32> loc("blocks.11.fc"("model.py":21:5))
  %h11 = memopt.op "aten::linear"(%r10, %w11) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<4096x64xf32>, tensor<64x64xf32>) -> tensor<4096x64xf32> loc("blocks.11.fc"("model.py":21:9))
  %r11 = memopt.op "aten::tanh"(%h11) [#memopt.arg<0>] {overload = ""} : (tensor<4096x64xf32>) -> tensor<4096x64xf32> loc("blocks.11.act"("model.py":21:20))
  %w12 = memopt.param "blocks.12.fc.weight" : tensor<64x64xf32> loc("blocks.12.fc"("model.py":22:5))
  %h12 = memopt.op "aten::linear"(%r11, %w12) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<4096x64xf32>, tensor<64x64xf32>) -> tensor<4096x64xf32> loc("blocks.12.fc"("model.py":22:9))
  %r12 = memopt.op "aten::tanh"(%h12) [#memopt.arg<0>] {overload = ""} : (tensor<4096x64xf32>) -> tensor<4096x64xf32> loc("blocks.12.act"("model.py":22:20))
  %w13 = memopt.param "blocks.13.fc.weight" : tensor<64x64xf32> loc("blocks.13.fc"("model.py":23:5))
  %h13 = memopt.op "aten::linear"(%r12, %w13) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<4096x64xf32>, tensor<64x64xf32>) -> tensor<4096x64xf32> loc("blocks.13.fc"("model.py":23:9))
  %r13 = memopt.op "aten::tanh"(%h13) [#memopt.arg<0>] {overload = ""} : (tensor<4096x64xf32>) -> tensor<4096x64xf32> loc("blocks.13.act"("model.py":23:20))
  %w14 = memopt.param "blocks.14.fc.weight" : tensor<64x64xf32> loc("blocks.14.fc"("model.py":24:5))
  %h14 = memopt.op "aten::linear"(%r13, %w14) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<4096x64xf32>, tensor<64x64xf32>) -> tensor<4096x64xf32> loc("blocks.14.fc"("model.py":24:9))
  %r14 = memopt.op "aten::tanh"(%h14) [#memopt.arg<0>] {overload = ""} : (tensor<4096x64xf32>) -> tensor<4096x64xf32> loc("blocks.14.act"("model.py":24:20))
  %w15 = memopt.param "blocks.15.fc.weight" : tensor<64x64xf32> loc("blocks.15.fc"("model.py":25:5))
  %h15 = memopt.op "aten::linear"(%r14, %w15) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<4096x64xf32>, tensor<64x64xf32>) -> tensor<4096x64xf32> loc("blocks.15.fc"("model.py":25:9))
  %r15 = memopt.op "aten::tanh"(%h15) [#memopt.arg<0>] {overload = ""} : (tensor<4096x64xf32>) -> tensor<4096x64xf32> loc("blocks.15.act"("model.py":25:20))
  return %r15 : tensor<4096x64xf32>
}
