// RUN: memopt-opt %s | FileCheck %s
// Round trip: printing what was parsed and parsing it again gives the same IR.
// RUN: memopt-opt %s | memopt-opt | FileCheck %s
// Generic form round-trips too.
// RUN: memopt-opt -mlir-print-op-generic %s | memopt-opt | FileCheck %s

// CHECK-LABEL: func.func @graph
func.func @graph(%x: tensor<8x3x32x32xf32>) -> tensor<8x16x32x32xf32> {
  // CHECK: %[[W:.*]] = memopt.param "features.0.weight" : tensor<16x3x3x3xf32>
  %w = memopt.param "features.0.weight" : tensor<16x3x3x3xf32>
  // CHECK: memopt.param "features.0.bias" frozen : tensor<16xf32>
  %b = memopt.param "features.0.bias" frozen : tensor<16xf32>
  // CHECK: %[[M:.*]] = memopt.buffer "features.1.running_mean" : tensor<16xf32>
  %m = memopt.buffer "features.1.running_mean" : tensor<16xf32>
  // CHECK: memopt.buffer "features.1.scratch" transient : tensor<16xf32>
  %s = memopt.buffer "features.1.scratch" transient : tensor<16xf32>
  // CHECK: memopt.op "aten::conv2d"(%{{.*}}, %[[W]], %{{.*}}) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
  %y = memopt.op "aten::conv2d"(%x, %w, %b)
      [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
      : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<8x16x32x32xf32>
  // A convolution whose kernels' high-water marks were measured.
  // CHECK: memopt.op "aten::conv2d"(%{{.*}}) [{{.*}}] {high_water = #memopt.high_water<forward = 1024, backward = [-1, 2048, 512, 2560]>}
  %yh = memopt.op "aten::conv2d"(%x, %w, %b)
      [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1] {high_water = #memopt.high_water<forward = 1024, backward = [-1, 2048, 512, 2560]>}
      : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<8x16x32x32xf32>
  // Kept control flow's second backward mark: the incoming gradient held.
  // CHECK: memopt.op "aten::relu"(%{{.*}}) [{{.*}}] {high_water = #memopt.high_water<forward = 1024, backward = [-1, 2048, 2048, 2048], backward_held = 3072>}
  %yk = memopt.op "aten::relu"(%y) [#memopt.arg<0>] {high_water = #memopt.high_water<forward = 1024, backward = [-1, 2048, 2048, 2048], backward_held = 3072>}
      : (tensor<8x16x32x32xf32>) -> tensor<8x16x32x32xf32>
  // A convolution whose binary input autograd keeps packed.
  // CHECK: memopt.op "aten::conv2d"(%{{.*}}) [{{.*}}] {saved_input = #memopt.compress<bit>}
  %yp = memopt.op "aten::conv2d"(%x, %w, %b)
      [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1] {saved_input = #memopt.compress<bit>}
      : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<8x16x32x32xf32>
  // A training-mode batch-norm whose backward runs by channel.
  // CHECK: memopt.op "aten::batch_norm"(%{{.*}}, %[[M]], %[[M]]) [{{.*}}] {backward = #memopt.backward<by_channel>, mutates = array<i64: 1, 2>}
  %bn = memopt.op "aten::batch_norm"(%y, %m, %m)
      [#memopt.arg<0>, #memopt.none, #memopt.none, #memopt.arg<1>, #memopt.arg<2>, true, 0.1, 1.0e-05, true]
      {backward = #memopt.backward<by_channel>, mutates = array<i64: 1, 2>}
      : (tensor<8x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x16x32x32xf32>
  // A linear layer whose weight gradient goes into `.grad` by row blocks,
  // with and without its binary input packed.
  // CHECK: memopt.op "aten::linear"(%{{.*}}) [{{.*}}] {backward = #memopt.backward<weight_rows>}
  %flat = memopt.op "aten::flatten"(%y) [#memopt.arg<0>, 1, -1] {views = array<i64: 0>}
      : (tensor<8x16x32x32xf32>) -> tensor<8x16384xf32>
  %lw = memopt.param "fc.weight" : tensor<10x16384xf32>
  %lr = memopt.op "aten::linear"(%flat, %lw) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      {backward = #memopt.backward<weight_rows>}
      : (tensor<8x16384xf32>, tensor<10x16384xf32>) -> tensor<8x10xf32>
  // CHECK: memopt.op "aten::linear"(%{{.*}}) [{{.*}}] {backward = #memopt.backward<weight_rows>, saved_input = #memopt.compress<bit>}
  %lp = memopt.op "aten::linear"(%flat, %lw) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      {backward = #memopt.backward<weight_rows>, saved_input = #memopt.compress<bit>}
      : (tensor<8x16384xf32>, tensor<10x16384xf32>) -> tensor<8x10xf32>
  // Every kind of constant argument survives: float, bool, string, None.
  // CHECK: memopt.op "aten::dropout"(%{{.*}}) [#memopt.arg<0>, 5.000000e-01, true] {nondeterministic, overload = ""}
  %d = memopt.op "aten::dropout"(%y) [#memopt.arg<0>, 0.5, true] {nondeterministic, overload = ""}
      : (tensor<8x16x32x32xf32>) -> tensor<8x16x32x32xf32>
  // A dropout that keeps a bit per value for backward.
  // CHECK: memopt.op "aten::dropout"(%{{.*}}) [#memopt.arg<0>, 1.000000e-01, true] {nondeterministic, overload = "", saved_form = #memopt.saved<mask>}
  %dm = memopt.op "aten::dropout"(%d) [#memopt.arg<0>, 0.1, true] {nondeterministic, overload = "", saved_form = #memopt.saved<mask>}
      : (tensor<8x16x32x32xf32>) -> tensor<8x16x32x32xf32>
  // CHECK: memopt.op "aten::gelu"(%{{.*}}) [#memopt.arg<0>, "tanh"]
  %g = memopt.op "aten::gelu"(%dm) [#memopt.arg<0>, "tanh"]
      : (tensor<8x16x32x32xf32>) -> tensor<8x16x32x32xf32>
  // CHECK: memopt.op "aten::sum"(%{{.*}}) [#memopt.arg<0>, [0, [2, 3]], false, #memopt.none]
  %r = memopt.op "aten::sum"(%g) [#memopt.arg<0>, [0, [2, 3]], false, #memopt.none]
      : (tensor<8x16x32x32xf32>) -> tensor<16xf32>
  // In-place and view flags.
  // CHECK: memopt.op "aten::add_"(%{{.*}}, %{{.*}}) [#memopt.arg<0>, #memopt.arg<1>, 1] {mutates = array<i64: 0>, views = array<i64: 0>}
  %m2 = memopt.op "aten::add_"(%m, %r) [#memopt.arg<0>, #memopt.arg<1>, 1] {mutates = array<i64: 0>, views = array<i64: 0>}
      : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  // An operand laid out channels-last when the importer ran the model.
  // CHECK: memopt.op "aten::gelu"(%{{.*}}) [#memopt.arg<0>, "none"] {channels_last = array<i64: 0>}
  %gl = memopt.op "aten::gelu"(%dm) [#memopt.arg<0>, "none"] {channels_last = array<i64: 0>}
      : (tensor<8x16x32x32xf32>) -> tensor<8x16x32x32xf32>
  // CHECK: memopt.op "prim::Print"(%{{.*}}) [#memopt.arg<0>] {side_effects}
  memopt.op "prim::Print"(%m2) [#memopt.arg<0>] {side_effects} : (tensor<16xf32>) -> ()
  // Non-tensor TorchScript values.
  // CHECK: memopt.get_attr "features.1.training" : i1
  %t = memopt.get_attr "features.1.training" : i1
  // CHECK: memopt.set_attr "lif.v" = %{{.*}} : tensor<16xf32>
  memopt.set_attr "lif.v" = %m2 : tensor<16xf32>
  // CHECK: memopt.op "prim::ListConstruct"() [1, 2] : () -> !memopt.list<i64>
  %l = memopt.op "prim::ListConstruct"() [1, 2] : () -> !memopt.list<i64>
  // CHECK: memopt.op "prim::Constant"() [] : () -> !memopt.none
  %n = memopt.op "prim::Constant"() [] : () -> !memopt.none
  // CHECK: memopt.op "prim::Constant"() ["cpu"] : () -> !memopt.script<"Device">
  %dev = memopt.op "prim::Constant"() ["cpu"] : () -> !memopt.script<"Device">
  // CHECK: memopt.op "prim::Constant"() ["x"] : () -> !memopt.str
  %str = memopt.op "prim::Constant"() ["x"] : () -> !memopt.str
  return %y : tensor<8x16x32x32xf32>
}

// CHECK-LABEL: func.func @regions
func.func @regions(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %k: tensor<4xi64>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: %{{.*}}:2 = memopt.checkpoint "layer1"(%{{.*}}, %{{.*}}, %{{.*}}) policies [#memopt.compress<bit>, #memopt.offload<host>, #memopt.keep] : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4xi64>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK-NEXT: ^bb0(%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<8x8xf32>, %{{.*}}: tensor<4xi64>):
  // CHECK: memopt.yield %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>
  %r:2 = memopt.checkpoint "layer1" (%x, %w, %k) policies [#memopt.compress<bit>, #memopt.offload<host>, #memopt.keep]
      : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4xi64>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x8xf32>, %c: tensor<4xi64>):
    %y = memopt.op "aten::matmul"(%a, %b) [#memopt.arg<0>, #memopt.arg<1>]
        : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    memopt.yield %y, %a : tensor<4x8xf32>, tensor<4x8xf32>
  }
  // CHECK: memopt.checkpoint "layer2"(%{{.*}}) policies [#memopt.offload<unified>] {prefetch_at = "layer3"}
  // CHECK: memopt.checkpoint "layer3"(%{{.*}}) policies [#memopt.compress<uint8>]
  // CHECK: memopt.checkpoint "layer4"(%{{.*}}) policies [#memopt.compress<sparse>]
  // CHECK: memopt.checkpoint "layer5"(%{{.*}}) policies [#memopt.compress<bool>]
  %u = memopt.checkpoint "layer2" (%r#0) policies [#memopt.offload<unified>] {prefetch_at = "layer3"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    memopt.yield %a : tensor<4x8xf32>
  }
  %v = memopt.checkpoint "layer3" (%u) policies [#memopt.compress<uint8>] : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    memopt.yield %a : tensor<4x8xf32>
  }
  %v2 = memopt.checkpoint "layer4" (%v) policies [#memopt.compress<sparse>] : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    memopt.yield %a : tensor<4x8xf32>
  }
  %v3 = memopt.checkpoint "layer5" (%v2) policies [#memopt.compress<bool>] : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    memopt.yield %a : tensor<4x8xf32>
  }
  return %r#0, %v3 : tensor<4x8xf32>, tensor<4x8xf32>
}

// A region nested in another's body (recomputed within its recompute).
// CHECK-LABEL: func.func @nested_checkpoint
func.func @nested_checkpoint(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: memopt.checkpoint "block"(%{{.*}}) policies [#memopt.keep]
  // CHECK: memopt.checkpoint "block.conv"(%{{.*}}) policies [#memopt.keep]
  // CHECK: memopt.yield
  // CHECK: memopt.yield
  %r = memopt.checkpoint "block" (%x) policies [#memopt.keep] : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %i = memopt.checkpoint "block.conv" (%a) policies [#memopt.keep] : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%b: tensor<4x8xf32>):
      %t = memopt.op "aten::tanh"(%b) [#memopt.arg<0>] : (tensor<4x8xf32>) -> tensor<4x8xf32>
      memopt.yield %t : tensor<4x8xf32>
    }
    memopt.yield %i : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @compression
func.func @compression(%s: tensor<8x64xf32>, %h: tensor<3x5xf16>, %g: tensor<2xbf16>) -> tensor<8x64xf32> {
  // CHECK: %[[P:.*]] = memopt.compress %{{.*}} check : tensor<8x64xf32> -> !memopt.packed<8x64xf32, bit>
  %p = memopt.compress %s check : tensor<8x64xf32> -> !memopt.packed<8x64xf32, bit>
  // CHECK: memopt.decompress %[[P]] : !memopt.packed<8x64xf32, bit> -> tensor<8x64xf32>
  %d = memopt.decompress %p : !memopt.packed<8x64xf32, bit> -> tensor<8x64xf32>
  // CHECK: memopt.compress %{{.*}} : tensor<3x5xf16> -> !memopt.packed<3x5xf16, uint8>
  %q = memopt.compress %h : tensor<3x5xf16> -> !memopt.packed<3x5xf16, uint8>
  // CHECK: memopt.compress %{{.*}} : tensor<2xbf16> -> !memopt.packed<2xbf16, sparse>
  %r = memopt.compress %g : tensor<2xbf16> -> !memopt.packed<2xbf16, sparse>
  return %d : tensor<8x64xf32>
}

// CHECK-LABEL: func.func @offload
func.func @offload(%x: tensor<8x64xf32>, %s: tensor<16xf32>) -> (tensor<8x64xf32>, !memopt.packed<16xf32, bit>) {
  // CHECK: %[[H:.*]], %[[T:.*]] = memopt.offload host %{{.*}} : tensor<8x64xf32> -> !memopt.host<tensor<8x64xf32>>
  %h, %t = memopt.offload host %x : tensor<8x64xf32> -> !memopt.host<tensor<8x64xf32>>
  // CHECK: %[[R:.*]] = memopt.prefetch %[[H]] after %[[T]] : !memopt.host<tensor<8x64xf32>>
  %ready = memopt.prefetch %h after %t : !memopt.host<tensor<8x64xf32>>
  // CHECK: memopt.wait %[[R]], %[[H]] : !memopt.host<tensor<8x64xf32>>
  %y = memopt.wait %ready, %h : !memopt.host<tensor<8x64xf32>>
  // A packed tensor can be offloaded as well (compress, then move).
  %p = memopt.compress %s : tensor<16xf32> -> !memopt.packed<16xf32, bit>
  // CHECK: memopt.offload unified %{{.*}} : !memopt.packed<16xf32, bit> -> !memopt.host<!memopt.packed<16xf32, bit>>
  %hp, %tp = memopt.offload unified %p : !memopt.packed<16xf32, bit> -> !memopt.host<!memopt.packed<16xf32, bit>>
  // CHECK: memopt.prefetch %{{.*}} : !memopt.host<!memopt.packed<16xf32, bit>>
  %rp = memopt.prefetch %hp : !memopt.host<!memopt.packed<16xf32, bit>>
  %yp = memopt.wait %rp, %hp : !memopt.host<!memopt.packed<16xf32, bit>>
  return %y, %yp : tensor<8x64xf32>, !memopt.packed<16xf32, bit>
}

func.func private @forward_b64(tensor<64x3xf32>) -> tensor<64x10xf32>
func.func private @forward_b8(tensor<8x3xf32>) -> tensor<8x10xf32>
func.func private @forward_generic(tensor<?x3xf32>) -> tensor<?x10xf32>

// CHECK-LABEL: func.func @dispatch
func.func @dispatch(%x: tensor<?x3xf32>) -> (tensor<?x10xf32>, tensor<?x10xf32>) {
  // CHECK: memopt.dispatch(%{{.*}}) cases [#memopt.case<[tensor<64x3xf32>] -> @forward_b64, count = 90>, #memopt.case<[tensor<8x3xf32>] -> @forward_b8>] fallback @forward_generic : (tensor<?x3xf32>) -> tensor<?x10xf32>
  %r = memopt.dispatch (%x) cases [
      #memopt.case<[tensor<64x3xf32>] -> @forward_b64, count = 90>,
      #memopt.case<[tensor<8x3xf32>] -> @forward_b8>]
      fallback @forward_generic : (tensor<?x3xf32>) -> tensor<?x10xf32>
  // CHECK: memopt.dispatch(%{{.*}}) cases [#memopt.case<[tensor<8x3xf32>] -> @forward_b8>] strict : (tensor<?x3xf32>) -> tensor<?x10xf32>
  %s = memopt.dispatch (%x) cases [#memopt.case<[tensor<8x3xf32>] -> @forward_b8>] strict
      : (tensor<?x3xf32>) -> tensor<?x10xf32>
  return %r, %s : tensor<?x10xf32>, tensor<?x10xf32>
}

// Control flow on tensor data, kept whole with its graph.
// CHECK-LABEL: func.func @kept_control_flow
func.func @kept_control_flow(%c: i1, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: memopt.op "prim::If"(%{{.*}}, %{{.*}}) [#memopt.arg<0>, #memopt.arg<1>] {script = "graph(%0 : bool,\0A      %1 : Tensor):\0A  %2 : Tensor = prim::If(%0)\0A    block0():\0A      -> (%1)\0A    block1():\0A      -> (%1)\0A  return (%2)\0A"} : (i1, tensor<2x3xf32>) -> tensor<2x3xf32>
  %0 = memopt.op "prim::If"(%c, %x) [#memopt.arg<0>, #memopt.arg<1>] {script = "graph(%0 : bool,\0A      %1 : Tensor):\0A  %2 : Tensor = prim::If(%0)\0A    block0():\0A      -> (%1)\0A    block1():\0A      -> (%1)\0A  return (%2)\0A"} : (i1, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
