// RUN: memopt-translate %s --emit-launch-stubs --split-input-file --verify-diagnostics
// RUN: rm -rf %t && mkdir -p %t
// RUN: not memopt-compile %memopt_src/test/Compile/Inputs/spiking_cnn.pt --emit-stubs %t/stubs -o %t/m.pt 2> %t/shapeless.err
// RUN: count 1 < %t/shapeless.err
// RUN: FileCheck %s --check-prefix=SHAPELESS < %t/shapeless.err
// RUN: not ls %t/stubs %t/m.pt
// SHAPELESS: memopt: error: --emit-stubs needs static sizes: give --input-shape or --spec (launch stubs fix every size at compile time)
// RUN: not memopt-compile %memopt_src/test/Compile/Inputs/spiking_cnn.pt --input-shape x:2x3x8x8 --emit-stubs %t/stubs --analyze-only 2> %t/analyze.err
// RUN: FileCheck %s --check-prefix=ANALYZE < %t/analyze.err
// ANALYZE: memopt: error: --emit-stubs writes the launchers of a plan; it cannot be combined with --analyze-only

// Launch stubs fix every size at compile time. A compressed input without
// a static shape never reaches the emitter: the verifier refuses the plan.
func.func @dynamic_region(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{input #0 of type 'tensor<?x16xf32>' cannot be compressed: it needs a static f16, bf16 or f32 tensor}}
  %r = memopt.checkpoint "r" (%x) policies [#memopt.compress<bit>] : (tensor<?x16xf32>) -> tensor<?x16xf32> {
  ^bb0(%a: tensor<?x16xf32>):
    memopt.yield %a : tensor<?x16xf32>
  }
  return %r : tensor<?x16xf32>
}

// -----

func.func @unranked_layer(%x: tensor<*xf32>, %y: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{saved_input needs a statically shaped floating-point tensor as operand 0}}
  %p = memopt.op "aten::mul"(%x, %y) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor", saved_input = #memopt.compress<bit>} : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  return %p : tensor<*xf32>
}

// -----

// An offload site fixes every size too: a region offloading an input
// without a static shape (the verifier allows it; the generic copies take
// any size) has no stubs.
func.func @dynamic_offload(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{cannot emit launch stubs for region 'r': input 0: tensor<?x16xf32> has no static shape; launch stubs need static sizes (compile with --input-shape or --spec)}}
  %r = memopt.checkpoint "r" (%x) policies [#memopt.offload<host>] : (tensor<?x16xf32>) -> tensor<?x16xf32> {
  ^bb0(%a: tensor<?x16xf32>):
    memopt.yield %a : tensor<?x16xf32>
  }
  return %r : tensor<?x16xf32>
}
