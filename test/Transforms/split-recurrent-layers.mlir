// RUN: memopt-opt %s --split-input-file --memopt-split-recurrent-layers | FileCheck %s

// nn.LSTM(8, 16, num_layers=2, dropout=0.25, batch_first=True) in a
// module whose `training` flag is read at run time: the input is
// transposed to time-major once, each layer takes its slice of (h0, c0)
// and its four weights, dropout runs between the layers with the same
// flag, the last output is transposed back and the final states are the
// layers' concatenated.
// CHECK-LABEL: func.func @lstm_batch_first
// CHECK: %[[T:.*]] = memopt.get_attr "rnn.training"
// CHECK: %[[X:.*]] = memopt.op "aten::transpose"(%arg0) [#memopt.arg<0>, 0, 1] {overload = "int", views = array<i64: 0>} : (tensor<3x5x8xf32>) -> tensor<5x3x8xf32>
// CHECK: %[[H0:.*]] = memopt.op "aten::slice"(%arg1) [#memopt.arg<0>, 0, 0, 1, 1] {overload = "Tensor", views = array<i64: 0>} : (tensor<2x3x16xf32>) -> tensor<1x3x16xf32>
// CHECK: %[[C0:.*]] = memopt.op "aten::slice"(%arg2) [#memopt.arg<0>, 0, 0, 1, 1]
// CHECK: %[[S0:.*]] = memopt.op "prim::ListConstruct"(%[[H0]], %[[C0]])
// CHECK: %[[P0:.*]] = memopt.op "prim::ListConstruct"(%[[W0:.*]], %[[W1:.*]], %[[W2:.*]], %[[W3:.*]]) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>]
// CHECK: %[[L0:.*]]:3 = memopt.op "aten::lstm"(%[[X]], %[[S0]], %[[P0]], %[[T]]) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, true, 1, 0.000000e+00, #memopt.arg<3>, false, false] {overload = "input"} : ({{.*}}) -> (tensor<5x3x16xf32>, tensor<1x3x16xf32>, tensor<1x3x16xf32>)
// CHECK: %[[D:.*]] = memopt.op "aten::dropout"(%[[L0]]#0, %[[T]]) [#memopt.arg<0>, 2.500000e-01, #memopt.arg<1>] {nondeterministic}
// CHECK: memopt.op "aten::slice"(%arg1) [#memopt.arg<0>, 0, 1, 2, 1]
// CHECK: memopt.op "aten::slice"(%arg2) [#memopt.arg<0>, 0, 1, 2, 1]
// CHECK: %[[L1:.*]]:3 = memopt.op "aten::lstm"(%[[D]], %{{.*}}, %{{.*}}, %[[T]]) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, true, 1, 0.000000e+00, #memopt.arg<3>, false, false]
// CHECK: %[[Y:.*]] = memopt.op "aten::transpose"(%[[L1]]#0) [#memopt.arg<0>, 0, 1] {{.*}} -> tensor<3x5x16xf32>
// CHECK: %[[HL:.*]] = memopt.op "prim::ListConstruct"(%[[L0]]#1, %[[L1]]#1)
// CHECK: %[[H:.*]] = memopt.op "aten::cat"(%[[HL]]) [#memopt.arg<0>, 0] : (!memopt.list<tensor<*xf32>>) -> tensor<2x3x16xf32>
// CHECK-NOT: aten::cat
// CHECK-NOT: num_layers
// CHECK: return %[[Y]], %[[H]]
func.func @lstm_batch_first(%x: tensor<3x5x8xf32>, %h0: tensor<2x3x16xf32>, %c0: tensor<2x3x16xf32>) -> (tensor<3x5x16xf32>, tensor<2x3x16xf32>) {
  %w0 = memopt.param "rnn.weight_ih_l0" : tensor<64x8xf32>
  %w1 = memopt.param "rnn.weight_hh_l0" : tensor<64x16xf32>
  %w2 = memopt.param "rnn.bias_ih_l0" : tensor<64xf32>
  %w3 = memopt.param "rnn.bias_hh_l0" : tensor<64xf32>
  %w4 = memopt.param "rnn.weight_ih_l1" : tensor<64x16xf32>
  %w5 = memopt.param "rnn.weight_hh_l1" : tensor<64x16xf32>
  %w6 = memopt.param "rnn.bias_ih_l1" : tensor<64xf32>
  %w7 = memopt.param "rnn.bias_hh_l1" : tensor<64xf32>
  %params = memopt.op "prim::ListConstruct"(%w0, %w1, %w2, %w3, %w4, %w5, %w6, %w7) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, #memopt.arg<5>, #memopt.arg<6>, #memopt.arg<7>]
      : (tensor<64x8xf32>, tensor<64x16xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x16xf32>, tensor<64x16xf32>, tensor<64xf32>, tensor<64xf32>) -> !memopt.list<tensor<*xf32>>
  %train = memopt.get_attr "rnn.training" : i1
  %states = memopt.op "prim::ListConstruct"(%h0, %c0) [#memopt.arg<0>, #memopt.arg<1>] : (tensor<2x3x16xf32>, tensor<2x3x16xf32>) -> !memopt.list<tensor<*xf32>>
  %y:3 = memopt.op "aten::lstm"(%x, %states, %params, %train) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, true, 2, 2.500000e-01, #memopt.arg<3>, false, true] {overload = "input"}
      : (tensor<3x5x8xf32>, !memopt.list<tensor<*xf32>>, !memopt.list<tensor<*xf32>>, i1) -> (tensor<3x5x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>)
  return %y#0, %y#1 : tensor<3x5x16xf32>, tensor<2x3x16xf32>
}

// -----

// A time-major, bidirectional GRU of three layers without biases and
// without dropout: each layer takes two directions' weights (w_ih, w_hh,
// w_ih_reverse, w_hh_reverse) and two rows of h0; no transpose, no
// dropout; the final state is unused, so no concatenation.
// CHECK-LABEL: func.func @gru_bidirectional
// CHECK-NOT: aten::transpose
// CHECK: memopt.op "aten::slice"(%arg1) [#memopt.arg<0>, 0, 0, 2, 1] {{.*}} -> tensor<2x3x8xf32>
// CHECK: %[[G0:.*]]:2 = memopt.op "aten::gru"(%arg0, %{{.*}}, %{{.*}}) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, false, 1, 0.000000e+00, true, true, false] {overload = "input"} : (tensor<5x3x4xf32>, tensor<2x3x8xf32>, !memopt.list<tensor<*xf32>>) -> (tensor<5x3x16xf32>, tensor<2x3x8xf32>)
// CHECK: memopt.op "aten::slice"(%arg1) [#memopt.arg<0>, 0, 2, 4, 1]
// CHECK: %[[G1:.*]]:2 = memopt.op "aten::gru"(%[[G0]]#0,
// CHECK: memopt.op "aten::slice"(%arg1) [#memopt.arg<0>, 0, 4, 6, 1]
// CHECK: %[[G2:.*]]:2 = memopt.op "aten::gru"(%[[G1]]#0,
// CHECK-NOT: aten::dropout
// CHECK-NOT: aten::cat
// CHECK: return %[[G2]]#0
func.func @gru_bidirectional(%x: tensor<5x3x4xf32>, %h0: tensor<6x3x8xf32>) -> tensor<5x3x16xf32> {
  %a0 = memopt.param "a0" : tensor<24x4xf32>
  %a1 = memopt.param "a1" : tensor<24x8xf32>
  %a2 = memopt.param "a2" : tensor<24x4xf32>
  %a3 = memopt.param "a3" : tensor<24x8xf32>
  %b0 = memopt.param "b0" : tensor<24x16xf32>
  %b1 = memopt.param "b1" : tensor<24x8xf32>
  %b2 = memopt.param "b2" : tensor<24x16xf32>
  %b3 = memopt.param "b3" : tensor<24x8xf32>
  %c0 = memopt.param "c0" : tensor<24x16xf32>
  %c1 = memopt.param "c1" : tensor<24x8xf32>
  %c2 = memopt.param "c2" : tensor<24x16xf32>
  %c3 = memopt.param "c3" : tensor<24x8xf32>
  %params = memopt.op "prim::ListConstruct"(%a0, %a1, %a2, %a3, %b0, %b1, %b2, %b3, %c0, %c1, %c2, %c3) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, #memopt.arg<5>, #memopt.arg<6>, #memopt.arg<7>, #memopt.arg<8>, #memopt.arg<9>, #memopt.arg<10>, #memopt.arg<11>]
      : (tensor<24x4xf32>, tensor<24x8xf32>, tensor<24x4xf32>, tensor<24x8xf32>, tensor<24x16xf32>, tensor<24x8xf32>, tensor<24x16xf32>, tensor<24x8xf32>, tensor<24x16xf32>, tensor<24x8xf32>, tensor<24x16xf32>, tensor<24x8xf32>) -> !memopt.list<tensor<*xf32>>
  %y:2 = memopt.op "aten::gru"(%x, %h0, %params) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, false, 3, 0.000000e+00, true, true, false] {overload = "input"}
      : (tensor<5x3x4xf32>, tensor<6x3x8xf32>, !memopt.list<tensor<*xf32>>) -> (tensor<5x3x16xf32>, tensor<6x3x8xf32>)
  return %y#0 : tensor<5x3x16xf32>
}

// -----

// Left alone: one layer already; an LSTM with projections (five weights a
// direction: the list does not divide into four per layer); weights read
// from a module attribute the function cannot see into.
// CHECK-LABEL: func.func @left_alone
// CHECK: memopt.op "aten::rnn_tanh"(%arg0, %arg1, %{{.*}}) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, true, 1,
// CHECK: memopt.op "aten::lstm"(%arg0, %{{.*}}, %{{.*}}) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, true, 2,
// CHECK: memopt.op "aten::gru"(%arg0, %{{.*}}, %{{.*}}) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, true, 2,
// CHECK-NOT: aten::slice
func.func @left_alone(%x: tensor<5x3x4xf32>, %h: tensor<1x3x8xf32>, %h2: tensor<2x3x8xf32>) -> (tensor<5x3x8xf32>, tensor<5x3x4xf32>, tensor<5x3x8xf32>) {
  %w0 = memopt.param "w0" : tensor<8x4xf32>
  %w1 = memopt.param "w1" : tensor<8x8xf32>
  %w2 = memopt.param "w2" : tensor<8xf32>
  %w3 = memopt.param "w3" : tensor<8xf32>
  %one = memopt.op "prim::ListConstruct"(%w0, %w1, %w2, %w3) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>]
      : (tensor<8x4xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>) -> !memopt.list<tensor<*xf32>>
  %r:2 = memopt.op "aten::rnn_tanh"(%x, %h, %one) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, true, 1, 0.000000e+00, true, false, false] {overload = "input"}
      : (tensor<5x3x4xf32>, tensor<1x3x8xf32>, !memopt.list<tensor<*xf32>>) -> (tensor<5x3x8xf32>, tensor<1x3x8xf32>)
  %p0 = memopt.param "p0" : tensor<32x4xf32>
  %p1 = memopt.param "p1" : tensor<32x4xf32>
  %p2 = memopt.param "p2" : tensor<32xf32>
  %p3 = memopt.param "p3" : tensor<32xf32>
  %p4 = memopt.param "p4" : tensor<4x8xf32>
  %projected = memopt.op "prim::ListConstruct"(%p0, %p1, %p2, %p3, %p4, %p0, %p1, %p2, %p3, %p4) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, #memopt.arg<5>, #memopt.arg<6>, #memopt.arg<7>, #memopt.arg<8>, #memopt.arg<9>]
      : (tensor<32x4xf32>, tensor<32x4xf32>, tensor<32xf32>, tensor<32xf32>, tensor<4x8xf32>, tensor<32x4xf32>, tensor<32x4xf32>, tensor<32xf32>, tensor<32xf32>, tensor<4x8xf32>) -> !memopt.list<tensor<*xf32>>
  %hs = memopt.op "prim::ListConstruct"(%h2, %h2) [#memopt.arg<0>, #memopt.arg<1>] : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> !memopt.list<tensor<*xf32>>
  %l:3 = memopt.op "aten::lstm"(%x, %hs, %projected) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, true, 2, 0.000000e+00, true, false, false] {overload = "input"}
      : (tensor<5x3x4xf32>, !memopt.list<tensor<*xf32>>, !memopt.list<tensor<*xf32>>) -> (tensor<5x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x8xf32>)
  %flat = memopt.get_attr "gru._flat_weights" : !memopt.list<tensor<*xf32>>
  %g:2 = memopt.op "aten::gru"(%x, %h2, %flat) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, true, 2, 0.000000e+00, true, false, false] {overload = "input"}
      : (tensor<5x3x4xf32>, tensor<2x3x8xf32>, !memopt.list<tensor<*xf32>>) -> (tensor<5x3x8xf32>, tensor<2x3x8xf32>)
  return %r#0, %l#0, %g#0 : tensor<5x3x8xf32>, tensor<5x3x4xf32>, tensor<5x3x8xf32>
}
