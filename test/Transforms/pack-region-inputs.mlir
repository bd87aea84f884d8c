// RUN: memopt-opt %s --split-input-file --memopt-pack-region-inputs | FileCheck %s
// RUN: memopt-opt %s --split-input-file --memopt-pack-saved-inputs | FileCheck %s --check-prefix=SAVEDONLY
// RUN: memopt-opt %s --split-input-file --memopt-pack-region-inputs="assume-binary=gate" | FileCheck %s --check-prefix=ASSUMED

// Binary inputs of checkpoint regions saved with keep are packed instead;
// non-binary ones and function inputs stay as they are.
// CHECK-LABEL: func.func @region_inputs
// CHECK: memopt.checkpoint "block"(%{{.*}}, %{{.*}}, %arg0) policies [#memopt.compress<bit>, #memopt.keep, #memopt.keep]
// Region inputs are this pass's alone.
// SAVEDONLY-LABEL: func.func @region_inputs
// SAVEDONLY: policies [#memopt.keep, #memopt.keep, #memopt.keep]
// ASSUMED-LABEL: func.func @region_inputs
// ASSUMED: policies [#memopt.compress<bit>, #memopt.compress<bit>, #memopt.keep]
func.func @region_inputs(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %b = memopt.op "aten::ge"(%x) [#memopt.arg<0>, 1.0] : (tensor<8x4xf32>) -> tensor<8x4xi1>
  %s = memopt.op "aten::to"(%b) [#memopt.arg<0>, 6, false, false, #memopt.none] : (tensor<8x4xi1>) -> tensor<8x4xf32>
  %t = memopt.op "aten::tanh"(%x) [#memopt.arg<0>] : (tensor<8x4xf32>) -> tensor<8x4xf32> loc("gate"("model.py":7:8))
  %r = memopt.checkpoint "block"(%s, %t, %x) policies [#memopt.keep, #memopt.keep, #memopt.keep] : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32> {
  ^bb0(%a: tensor<8x4xf32>, %c: tensor<8x4xf32>, %d: tensor<8x4xf32>):
    %m = memopt.op "aten::mul"(%a, %c) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    %n = memopt.op "aten::add"(%m, %d) [#memopt.arg<0>, #memopt.arg<1>, 1] {overload = "Tensor"} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    memopt.yield %n : tensor<8x4xf32>
  }
  return %r : tensor<8x4xf32>
}
