// RUN: memopt-opt %s -split-input-file -verify-diagnostics
// Every verifier rule of memopt.op, memopt.param, memopt.buffer,
// memopt.get_attr and memopt.set_attr, with its exact message.

func.func @unqualified(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.op' op operator name 'relu' is not qualified (expected 'namespace::name')}}
  %y = memopt.op "relu"(%x) [#memopt.arg<0>] : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @empty_namespace(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.op' op operator name '::relu' is not qualified (expected 'namespace::name')}}
  %y = memopt.op "::relu"(%x) [#memopt.arg<0>] : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @operand_order(%x: tensor<4xf32>, %z: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.op' op argument #0 refers to operand 1, expected operand 0}}
  %y = memopt.op "aten::sub"(%x, %z) [#memopt.arg<1>, #memopt.arg<0>, 1] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @not_a_constant(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.op' op argument #1 is not a TorchScript constant: f32}}
  %y = memopt.op "aten::relu"(%x) [#memopt.arg<0>, f32] : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @operand_ref_inside_list(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.op' op argument #0 is not a TorchScript constant: [#memopt.arg<0>]}}
  %y = memopt.op "aten::cat"(%x) [[#memopt.arg<0>]] : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @unreferenced_operand(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.op' op has 1 operands but its args reference 0}}
  %y = memopt.op "aten::relu"(%x) [] : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @mutates_out_of_range(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.op' op mutated operand 1 is out of range [0, 1)}}
  %y = memopt.op "aten::relu_"(%x) [#memopt.arg<0>] {mutates = array<i64: 1>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @mutates_twice(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.op' op mutated operand 0 is listed twice}}
  %y = memopt.op "aten::relu_"(%x) [#memopt.arg<0>] {mutates = array<i64: 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @channels_last_rank(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.op' op channels_last operand 0 is not a 4-d or 5-d ranked tensor operand}}
  %y = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {channels_last = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @channels_last_range(%x: tensor<1x2x3x4xf32>) {
  // expected-error @+1 {{'memopt.op' op channels_last operand 1 is not a 4-d or 5-d ranked tensor operand}}
  %y = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {channels_last = array<i64: 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return
}

// -----

func.func @views_size(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.op' op views has 2 entries for 1 results}}
  %y = memopt.op "aten::view"(%x) [#memopt.arg<0>, [4]] {views = array<i64: 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @views_range(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.op' op view of operand 3 is out of range [-1, 1)}}
  %y = memopt.op "aten::view"(%x) [#memopt.arg<0>, [4]] {views = array<i64: 3>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @empty_path() {
  // expected-error @+1 {{'memopt.param' op module path must not be empty}}
  %w = memopt.param "" : tensor<4xf32>
  return
}

// -----

func.func @empty_segment() {
  // expected-error @+1 {{'memopt.buffer' op module path 'bn..running_mean' has an empty segment}}
  %w = memopt.buffer "bn..running_mean" : tensor<4xf32>
  return
}

// -----

func.func @space_in_path() {
  // expected-error @+1 {{'memopt.get_attr' op module path 'bn 1.training' contains a space}}
  %t = memopt.get_attr "bn 1.training" : i1
  return
}

// -----

func.func @set_attr_path(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.set_attr' op module path 'lif.' has an empty segment}}
  memopt.set_attr "lif." = %x : tensor<4xf32>
  return
}

// -----

func.func @param_not_tensor() {
  // expected-error @+1 {{'memopt.param' op result #0 must be tensor of any type values, but got 'i64'}}
  %w = "memopt.param"() {path = "w"} : () -> i64
  return
}

// -----

func.func @saved_input_on_relu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{saved_input is only supported on convolutions, linear layers and aten::mul.Tensor, not 'aten::relu'}}
  %0 = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {saved_input = #memopt.compress<bit>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @saved_input_on_scalar_mul(%x: tensor<2x3xf32>, %s: f64) -> tensor<2x3xf32> {
  // expected-error @+1 {{saved_input on aten::mul needs the Tensor overload with two operands of the same type}}
  %0 = memopt.op "aten::mul"(%x, %s) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Scalar", saved_input = #memopt.compress<bit>} : (tensor<2x3xf32>, f64) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @saved_input_on_broadcasting_mul(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{saved_input on aten::mul needs the Tensor overload with two operands of the same type}}
  %0 = memopt.op "aten::mul"(%x, %y) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor", saved_input = #memopt.compress<bit>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @saved_input_not_float(%x: tensor<2x3xi64>, %w: tensor<4x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{saved_input needs a statically shaped floating-point tensor as operand 0}}
  %0 = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {saved_input = #memopt.compress<bit>} : (tensor<2x3xi64>, tensor<4x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @saved_input_sparse(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{saved_input supports bit and bool packing, not sparse}}
  %0 = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {saved_input = #memopt.compress<sparse>} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @mask_on_sigmoid(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{saved_form #memopt.saved<mask> is not supported on 'aten::sigmoid' (mask: aten::relu, aten::relu_, aten::dropout; indices: aten::max_pool2d)}}
  %0 = memopt.op "aten::sigmoid"(%x) [#memopt.arg<0>] {saved_form = #memopt.saved<mask>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @mask_on_feature_dropout(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // expected-error @+1 {{saved_form #memopt.saved<mask> is not supported on 'aten::feature_dropout'}}
  %0 = memopt.op "aten::feature_dropout"(%x) [#memopt.arg<0>, 5.000000e-01, true] {nondeterministic, saved_form = #memopt.saved<mask>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

func.func @mask_on_dropout_overload(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{saved_form #memopt.saved<mask> is not supported on 'aten::dropout'}}
  %0 = memopt.op "aten::dropout"(%x) [#memopt.arg<0>, 5.000000e-01, true] {nondeterministic, overload = "out", saved_form = #memopt.saved<mask>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @mask_on_dropout_integer(%x: tensor<2x3xi64>) -> tensor<2x3xi64> {
  // expected-error @+1 {{saved_form needs a statically shaped floating-point tensor as operand 0}}
  %0 = memopt.op "aten::dropout"(%x) [#memopt.arg<0>, 5.000000e-01, true] {nondeterministic, saved_form = #memopt.saved<mask>} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// -----

func.func @indices_on_relu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{saved_form #memopt.saved<indices> is not supported on 'aten::relu'}}
  %0 = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {saved_form = #memopt.saved<indices>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @mask_dynamic(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{saved_form needs a statically shaped floating-point tensor as operand 0}}
  %0 = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {saved_form = #memopt.saved<mask>} : (tensor<?x3xf32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

func.func @both_saved_attrs(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{has both saved_input and saved_form}}
  %0 = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {saved_input = #memopt.compress<bit>, saved_form = #memopt.saved<mask>} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @unknown_form(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{expected ::mlir::memopt::SavedForm to be one of: mask, indices}}
  // expected-error @+1 {{failed to parse Memopt_SavedFormAttr parameter 'form'}}
  %0 = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {saved_form = #memopt.saved<bits>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @by_channel_on_relu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{backward #memopt.backward<by_channel> is only supported on a training-mode aten::batch_norm (constant training = true), not 'aten::relu'}}
  %0 = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {backward = #memopt.backward<by_channel>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @by_channel_in_eval_mode(%x: tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32> {
  // expected-error @+1 {{backward #memopt.backward<by_channel> is only supported on a training-mode aten::batch_norm (constant training = true), not 'aten::batch_norm'}}
  %0 = memopt.op "aten::batch_norm"(%x) [#memopt.arg<0>, #memopt.none, #memopt.none, #memopt.none, #memopt.none, false, 0.1, 1.0e-05, true] {backward = #memopt.backward<by_channel>} : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  return %0 : tensor<2x3x4x4xf32>
}

// -----

func.func @by_channel_dynamic(%x: tensor<?x3x4x4xf32>) -> tensor<?x3x4x4xf32> {
  // expected-error @+1 {{backward #memopt.backward<by_channel> needs a statically shaped floating-point tensor with a channel dimension as operand 0}}
  %0 = memopt.op "aten::batch_norm"(%x) [#memopt.arg<0>, #memopt.none, #memopt.none, #memopt.none, #memopt.none, true, 0.1, 1.0e-05, true] {backward = #memopt.backward<by_channel>} : (tensor<?x3x4x4xf32>) -> tensor<?x3x4x4xf32>
  return %0 : tensor<?x3x4x4xf32>
}

// -----

func.func @weight_rows_on_conv(%x: tensor<2x3x4x4xf32>, %w: tensor<8x3x1x1xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{backward #memopt.backward<weight_rows> is only supported on 'aten::linear', not 'aten::conv2d'}}
  %0 = memopt.op "aten::conv2d"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, [1, 1], [0, 0], [1, 1], 1] {backward = #memopt.backward<weight_rows>} : (tensor<2x3x4x4xf32>, tensor<8x3x1x1xf32>) -> tensor<2x8x4x4xf32>
  return %0 : tensor<2x8x4x4xf32>
}

// -----

func.func @weight_rows_dynamic_input(%x: tensor<?x16xf32>, %w: tensor<8x16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{backward #memopt.backward<weight_rows> needs statically shaped floating-point input and 2-D weight tensors}}
  %0 = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {backward = #memopt.backward<weight_rows>} : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @weight_rows_constant_weight(%x: tensor<2x16xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{backward #memopt.backward<weight_rows> needs statically shaped floating-point input and 2-D weight tensors}}
  %0 = memopt.op "aten::linear"(%x) [#memopt.arg<0>, #memopt.none, #memopt.none] {backward = #memopt.backward<weight_rows>} : (tensor<2x16xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @unknown_backward_kernel(%x: tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32> {
  // expected-error @+2 {{expected ::mlir::memopt::BackwardKernel to be one of: by_channel, weight_rows}}
  // expected-error @+1 {{failed to parse Memopt_BackwardKernelAttr parameter 'kernel'}}
  %0 = memopt.op "aten::batch_norm"(%x) [#memopt.arg<0>, #memopt.none, #memopt.none, #memopt.none, #memopt.none, true, 0.1, 1.0e-05, true] {backward = #memopt.backward<by_row>} : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  return %0 : tensor<2x3x4x4xf32>
}

// -----

func.func @high_water_three_masks(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{expected 4 backward high-water marks (one per gradient mask), got 3}}
  %0 = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {high_water = #memopt.high_water<forward = 24, backward = [-1, 48, 0]>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @high_water_negative(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{backward high-water mark -2 is below -1 (not measured)}}
  %0 = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {high_water = #memopt.high_water<forward = 24, backward = [-1, -2, -1, -1]>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @measured_saves_negative(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{measured saved bytes -8 are negative}}
  %0 = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {measured_saves = #memopt.saves<bytes = -8, operands = [0]>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @measured_saves_operand(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{measured_saves names operand 1 of 1}}
  %0 = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {measured_saves = #memopt.saves<bytes = 8, operands = [1]>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @script_on_an_operator(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{script is only carried by prim::If and prim::Loop, not 'aten::relu'}}
  %0 = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {script = "graph(%0 : Tensor):\0A  return (%0)\0A"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @control_flow_without_script(%c: i1, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'prim::If' needs the script of the control flow it keeps}}
  %0 = memopt.op "prim::If"(%c, %x) [#memopt.arg<0>, #memopt.arg<1>] : (i1, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @high_water_held_negative(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{backward_held high-water mark -2 is below -1 (not measured)}}
  %0 = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {high_water = #memopt.high_water<forward = 24, backward = [-1, 48, 48, 48], backward_held = -2>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @measured_saves_element(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %l = memopt.op "prim::ListConstruct"(%x, %y) [#memopt.arg<0>, #memopt.arg<1>] : (tensor<2x3xf32>, tensor<2x3xf32>) -> !memopt.list<tensor<*xf32>>
  // expected-error @+1 {{measured_saves names element 2 of operand 0, which is not a list built here with that many elements}}
  %0 = memopt.op "aten::einsum"(%l) ["ij,ij->ij", #memopt.arg<0>, #memopt.none] {measured_saves = #memopt.saves<bytes = 0, elements = [0, 2]>} : (!memopt.list<tensor<*xf32>>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @measured_saves_element_pairs(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{saved list elements come in (operand, element) pairs, got 3 numbers}}
  %0 = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {measured_saves = #memopt.saves<bytes = 0, elements = [0, 1, 2]>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @measured_saves_result(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{measured_saves names result 1 of 1}}
  %0 = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {measured_saves = #memopt.saves<bytes = 0, results = [1]>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @measured_saves_order(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{expected 'operands', 'elements' or 'results', in that order}}
  %0 = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {measured_saves = #memopt.saves<bytes = 0, results = [0], operands = [0]>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @dense_order_not_a_permutation(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{dense_order must be a permutation of the dims of its first result, a ranked tensor}}
  %0 = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {dense_order = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @dense_order_rank(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{dense_order must be a permutation of the dims of its first result, a ranked tensor}}
  %0 = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {dense_order = array<i64: 0, 1, 2>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
