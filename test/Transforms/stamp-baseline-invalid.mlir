// RUN: memopt-opt %s --split-input-file --verify-diagnostics --memopt-stamp-baseline
// RUN: not memopt-opt %s --split-input-file --memopt-stamp-baseline="budget=lots" 2>&1 | FileCheck %s --check-prefix=OPTION

// OPTION: error: invalid --budget 'lots': unknown unit 'lots'

// A signature's own budget is checked like --budget.
// expected-error @+1 {{invalid --budget '12 parsecs': unknown unit 'parsecs'}}
func.func @own(%x: tensor<4xf32>) -> tensor<4xf32> attributes {memopt.budget = "12 parsecs"} {
  %t = memopt.op "aten::tanh"(%x) [#memopt.arg<0>] {overload = ""} : (tensor<4xf32>) -> tensor<4xf32>
  return %t : tensor<4xf32>
}
