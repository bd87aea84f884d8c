// RUN: memopt-opt %s --memopt-pipeline="budget=60%" | FileCheck %s
// RUN: memopt-opt %s --memopt-pipeline="prefer=speed compress=false" | FileCheck %s --check-prefix=NOPACK
// RUN: not memopt-opt %s --memopt-pipeline="budget=1%" 2>&1 | FileCheck %s --check-prefix=INFEASIBLE
// RUN: memopt-opt %s --memopt-pipeline="prefer=memory device=cuda" | FileCheck %s --check-prefix=CUDA
// RUN: memopt-opt %s --memopt-pipeline="prefer=memory" | FileCheck %s --check-prefix=CPU
// RUN: memopt-opt %s --memopt-pipeline="prefer=memory device=cuda offload-bandwidth=0.01" | FileCheck %s --check-prefix=SLOWLINK
// RUN: not memopt-opt %s --memopt-pipeline="prefer=memory device=cuda offload-bandwidth=0" 2>&1 | FileCheck %s --check-prefix=NOLINK
// RUN: memopt-opt %s --memopt-pipeline="budget=50% device=cuda offload-policy=unified offload-d2h-bandwidth=10" | FileCheck %s --check-prefix=UNIFIED
// RUN: not memopt-opt %s --memopt-pipeline="device=cuda offload-policy=disk" 2>&1 | FileCheck %s --check-prefix=NOPOLICY

// The whole pipeline: lists rebuilt, binary conv inputs packed, regions
// planned for the budget.

// CHECK-LABEL: func.func @chain
// CHECK-SAME: memopt.plan
// CHECK: memopt.checkpoint "blocks.0..blocks.{{[0-9]+}}"
// CHECK-LABEL: func.func @spiking
// CHECK-NOT: aten::append
// CHECK: memopt.op "aten::conv2d"(%{{.*}}) {{.*}}saved_input = #memopt.compress<bit>
// CHECK: prim::ListConstruct
// CHECK: aten::stack

// For CUDA the planner offloads region inputs and the pipeline ends with
// memopt-schedule-prefetch; on CPU (the other runs) nothing is offloaded.
// (How many regions it offloads follows the cost model's prices.)
// CUDA-LABEL: func.func @chain
// CUDA-SAME: memopt.prefetch_schedule = #memopt.prefetch<bandwidth_gbps = 5.500000e+01, offloaded_regions = {{[1-9][0-9]*}},
// CUDA: memopt.checkpoint "blocks.{{[0-9]+}}..blocks.{{[0-9]+}}"(%{{.*}}) policies [#memopt.offload<host>]
// CPU-NOT: offload
// CPU-NOT: prefetch

// The managed-memory policy and a device-to-host bandwidth of its own: the
// same plan offloads to unified memory, and the schedule times the copies
// out at 10 GB/s.
// UNIFIED-LABEL: func.func @chain
// UNIFIED-SAME: d2h_bandwidth_gbps = 1.000000e+01
// UNIFIED: memopt.checkpoint "blocks.0..blocks.{{[0-9]+}}"(%{{.*}}) policies [#memopt.offload<unified>]
// UNIFIED-NOT: #memopt.offload<host>
// NOPOLICY: unknown --offload-policy 'disk' (expected host or unified)

// The copy bandwidth is a parameter (default 55 GB/s each way, an H100
// over PCIe Gen5): over a 10 MB/s link every copy would stall the step, so
// the same CUDA plan recomputes and keeps its region inputs instead (and
// there is nothing to schedule). Zero is refused.
// SLOWLINK-LABEL: func.func @chain
// SLOWLINK-NOT: prefetch_schedule
// SLOWLINK: memopt.checkpoint "blocks.{{[0-9]+}}..blocks.{{[0-9]+}}"(%{{.*}}) policies [#memopt.keep]
// SLOWLINK-NOT: offload<host>
// NOLINK: error: --offload-bandwidth must be a positive number of GB/s, got 0

// NOPACK-NOT: saved_input
// INFEASIBLE: error: budget {{.*}} is infeasible for @chain: the smallest reachable peak is

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

// Its own budget overrides the pipeline's. Spikes carry no gradient (no
// surrogate here), so the first convolution gets none and keeps nothing;
// the second and third, whose results are returned, keep their binary
// inputs (packed) for their weights' gradients.
func.func @spiking(%x: tensor<8x4x16x16xf32>) -> (tensor<2x8x4x16x16xf32>, tensor<8x4x16x16xf32>, tensor<8x4x16x16xf32>) attributes {memopt.budget = "100%"} {
  %w0 = memopt.param "conv0.weight" : tensor<4x4x3x3xf32>
  %c0 = memopt.op "aten::conv2d"(%x, %w0) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, [1, 1], [1, 1], [1, 1], 1] {overload = ""} : (tensor<8x4x16x16xf32>, tensor<4x4x3x3xf32>) -> tensor<8x4x16x16xf32>
  %l = memopt.op "prim::ListConstruct"() [] : () -> !memopt.list<tensor<*xf32>>
  %b = memopt.op "aten::ge"(%c0) [#memopt.arg<0>, 1.0] : (tensor<8x4x16x16xf32>) -> tensor<8x4x16x16xi1>
  %s = memopt.op "aten::to"(%b) [#memopt.arg<0>, 6, false, false, #memopt.none] : (tensor<8x4x16x16xi1>) -> tensor<8x4x16x16xf32>
  %0 = memopt.op "aten::append"(%l, %s) [#memopt.arg<0>, #memopt.arg<1>] {mutates = array<i64: 0>, views = array<i64: 0>} : (!memopt.list<tensor<*xf32>>, tensor<8x4x16x16xf32>) -> !memopt.list<tensor<*xf32>>
  %w1 = memopt.param "conv1.weight" : tensor<4x4x3x3xf32>
  %c1 = memopt.op "aten::conv2d"(%s, %w1) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, [1, 1], [1, 1], [1, 1], 1] {overload = ""} : (tensor<8x4x16x16xf32>, tensor<4x4x3x3xf32>) -> tensor<8x4x16x16xf32>
  %b1 = memopt.op "aten::ge"(%c1) [#memopt.arg<0>, 1.0] : (tensor<8x4x16x16xf32>) -> tensor<8x4x16x16xi1>
  %s1 = memopt.op "aten::to"(%b1) [#memopt.arg<0>, 6, false, false, #memopt.none] : (tensor<8x4x16x16xi1>) -> tensor<8x4x16x16xf32>
  %1 = memopt.op "aten::append"(%l, %s1) [#memopt.arg<0>, #memopt.arg<1>] {mutates = array<i64: 0>, views = array<i64: 0>} : (!memopt.list<tensor<*xf32>>, tensor<8x4x16x16xf32>) -> !memopt.list<tensor<*xf32>>
  %st = memopt.op "aten::stack"(%l) [#memopt.arg<0>, 0] : (!memopt.list<tensor<*xf32>>) -> tensor<2x8x4x16x16xf32>
  %w2 = memopt.param "conv2.weight" : tensor<4x4x3x3xf32>
  %c2 = memopt.op "aten::conv2d"(%s1, %w2) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, [1, 1], [1, 1], [1, 1], 1] {overload = ""} : (tensor<8x4x16x16xf32>, tensor<4x4x3x3xf32>) -> tensor<8x4x16x16xf32>
  return %st, %c1, %c2 : tensor<2x8x4x16x16xf32>, tensor<8x4x16x16xf32>, tensor<8x4x16x16xf32>
}
