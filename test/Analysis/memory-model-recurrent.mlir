// RUN: memopt-opt %s -split-input-file -memopt-test-memory-model -o /dev/null 2>/dev/null | FileCheck %s

// A recurrent layer stack with what the kernel probe measured: it keeps
// 4000 new bytes and its input (operand 0: u, 480 bytes), not its initial
// states; its forward peaks 6000 bytes above what was live before it, its
// backward (input and weight gradients, mask 3) 3000 above, gradients
// counted, while it frees its per-step state.
//   forward  linear: u 480;  zeros: h0, c0 192 each          = 864
//            lstm:   864 + peak 6000                         = 6864
//                    then y 960 + hy, cy 192 each + kept 4000 + u 480;
//                    h0, c0 not kept, hy and cy unused
//            sum:    4000 + 480 + y 960 + 4                  = 5444
//   end of forward: y, which sum does not keep, is gone       = 4484
//   backward sum:    its gradient of y is an expanded view    = 4488
//            lstm:   before 4488 + 3000                      = 7488
//   (every gradient the lstm returns, 480 + 2048 + 4096 + 256 + 256, on
//   top of all it keeps would be 11624.)
// CHECK-LABEL: memory-model @measured_lstm
// CHECK-DAG: saved aten::lstm 4480
// CHECK: forward aten::linear live 480
// CHECK: forward aten::lstm live 6864
// CHECK-NEXT: forward aten::sum live 5444
// CHECK: backward aten::lstm live 7488
// CHECK-NOT: unknown
// CHECK: peak 7488 at backward aten::lstm
func.func @measured_lstm(%x: tensor<5x3x8xf32>) -> tensor<f32> {
  %wp = memopt.param "proj.weight" : tensor<8x8xf32>
  %u = memopt.op "aten::linear"(%x, %wp) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] : (tensor<5x3x8xf32>, tensor<8x8xf32>) -> tensor<5x3x8xf32>
  %w0 = memopt.param "rnn.weight_ih_l0" : tensor<64x8xf32>
  %w1 = memopt.param "rnn.weight_hh_l0" : tensor<64x16xf32>
  %w2 = memopt.param "rnn.bias_ih_l0" : tensor<64xf32>
  %w3 = memopt.param "rnn.bias_hh_l0" : tensor<64xf32>
  %params = memopt.op "prim::ListConstruct"(%w0, %w1, %w2, %w3) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>]
      : (tensor<64x8xf32>, tensor<64x16xf32>, tensor<64xf32>, tensor<64xf32>) -> !memopt.list<tensor<*xf32>>
  %h0 = memopt.op "aten::zeros"() [[1, 3, 16], #memopt.none, #memopt.none, #memopt.none, #memopt.none] : () -> tensor<1x3x16xf32>
  %c0 = memopt.op "aten::zeros"() [[1, 3, 16], #memopt.none, #memopt.none, #memopt.none, #memopt.none] : () -> tensor<1x3x16xf32>
  %states = memopt.op "prim::ListConstruct"(%h0, %c0) [#memopt.arg<0>, #memopt.arg<1>] : (tensor<1x3x16xf32>, tensor<1x3x16xf32>) -> !memopt.list<tensor<*xf32>>
  %y:3 = memopt.op "aten::lstm"(%u, %states, %params) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, true, 1, 0.000000e+00, true, false, false]
      {high_water = #memopt.high_water<forward = 6000, backward = [-1, -1, -1, 3000]>, measured_saves = #memopt.saves<bytes = 4000, operands = [0]>, overload = "input"}
      : (tensor<5x3x8xf32>, !memopt.list<tensor<*xf32>>, !memopt.list<tensor<*xf32>>) -> (tensor<5x3x16xf32>, tensor<1x3x16xf32>, tensor<1x3x16xf32>)
  %s = memopt.op "aten::sum"(%y#0) [#memopt.arg<0>, #memopt.none] : (tensor<5x3x16xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Without the probe's marks (--kernel-workspaces=model, or a CUDA plan) the
// stack is an unknown op, modelled as keeping every tensor it touches.
// CHECK-LABEL: memory-model @unmeasured_lstm
// CHECK: unknown aten::lstm
func.func @unmeasured_lstm(%x: tensor<5x3x8xf32>) -> tensor<f32> {
  %wp = memopt.param "proj.weight" : tensor<8x8xf32>
  %u = memopt.op "aten::linear"(%x, %wp) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] : (tensor<5x3x8xf32>, tensor<8x8xf32>) -> tensor<5x3x8xf32>
  %w0 = memopt.param "rnn.weight_ih_l0" : tensor<64x8xf32>
  %w1 = memopt.param "rnn.weight_hh_l0" : tensor<64x16xf32>
  %params = memopt.op "prim::ListConstruct"(%w0, %w1) [#memopt.arg<0>, #memopt.arg<1>]
      : (tensor<64x8xf32>, tensor<64x16xf32>) -> !memopt.list<tensor<*xf32>>
  %h0 = memopt.op "aten::zeros"() [[1, 3, 16], #memopt.none, #memopt.none, #memopt.none, #memopt.none] : () -> tensor<1x3x16xf32>
  %states = memopt.op "prim::ListConstruct"(%h0, %h0) [#memopt.arg<0>, #memopt.arg<1>] : (tensor<1x3x16xf32>, tensor<1x3x16xf32>) -> !memopt.list<tensor<*xf32>>
  %y:3 = memopt.op "aten::lstm"(%u, %states, %params) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, false, 1, 0.000000e+00, true, false, false] {overload = "input"}
      : (tensor<5x3x8xf32>, !memopt.list<tensor<*xf32>>, !memopt.list<tensor<*xf32>>) -> (tensor<5x3x16xf32>, tensor<1x3x16xf32>, tensor<1x3x16xf32>)
  %s = memopt.op "aten::sum"(%y#0) [#memopt.arg<0>, #memopt.none] : (tensor<5x3x16xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
