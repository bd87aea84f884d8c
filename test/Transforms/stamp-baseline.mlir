// RUN: memopt-opt %s --split-input-file --memopt-stamp-baseline="budget=50%" | FileCheck %s
// RUN: memopt-opt %s --split-input-file --memopt-stamp-baseline | FileCheck %s --check-prefix=NOBUDGET
// RUN: memopt-opt %s --split-input-file --memopt-stamp-baseline="budget=50%" --memopt-insert-checkpoints="budget=10% allow-over-budget=true" | FileCheck %s --check-prefix=PLAN

// The predicted peak as written, and the budget resolved against it: 50 %
// is half of the stamped peak. Without a budget only the peak is stamped.
// The planner refers to the stamps, not to its own budget option.
// CHECK-LABEL: func.func @given
// CHECK-SAME: memopt.budget_bytes = [[#BUDGET:]] : i64,
// CHECK-SAME: memopt.unplanned_peak_bytes = [[#mul(BUDGET,2)]] : i64
// NOBUDGET-LABEL: func.func @given
// NOBUDGET-NOT: budget_bytes
// NOBUDGET-SAME: memopt.unplanned_peak_bytes =
// PLAN-LABEL: func.func @given
// PLAN-SAME: memopt.plan = #memopt.plan<baseline_peak_bytes = [[#PEAK:]],
// PLAN-SAME: budget_bytes = [[#div(PEAK,2)]],
func.func @given(%x: tensor<256x64xf32>) -> tensor<256x64xf32> {
  %w = memopt.param "fc.weight" : tensor<64x64xf32> loc("fc"("model.py":3:4))
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<256x64xf32>, tensor<64x64xf32>) -> tensor<256x64xf32> loc("fc"("model.py":3:9))
  %t = memopt.op "aten::tanh"(%h) [#memopt.arg<0>] {overload = ""} : (tensor<256x64xf32>) -> tensor<256x64xf32> loc("act"("model.py":4:9))
  return %t : tensor<256x64xf32>
}

// -----

// A signature's own budget overrides the option's.
// CHECK-LABEL: func.func @own
// CHECK-SAME: memopt.budget_bytes = 102400 : i64
// NOBUDGET-LABEL: func.func @own
// NOBUDGET-SAME: memopt.budget_bytes = 102400 : i64
func.func @own(%x: tensor<256x64xf32>) -> tensor<256x64xf32> attributes {memopt.budget = "100KiB"} {
  %t = memopt.op "aten::tanh"(%x) [#memopt.arg<0>] {overload = ""} : (tensor<256x64xf32>) -> tensor<256x64xf32>
  return %t : tensor<256x64xf32>
}

// -----

// Stamps already there stay (the driver stamps before the pipeline); a
// percentage refers to the stamped peak.
// CHECK-LABEL: func.func @stamped
// CHECK-SAME: memopt.budget_bytes = 500000 : i64, memopt.unplanned_peak_bytes = 1000000 : i64
func.func @stamped(%x: tensor<256x64xf32>) -> tensor<256x64xf32> attributes {memopt.unplanned_peak_bytes = 1000000 : i64} {
  %t = memopt.op "aten::tanh"(%x) [#memopt.arg<0>] {overload = ""} : (tensor<256x64xf32>) -> tensor<256x64xf32>
  return %t : tensor<256x64xf32>
}

// -----

// A passthrough signature is compiled without planning: nothing to stamp.
// CHECK-LABEL: func.func @passthrough
// CHECK-NOT: memopt.unplanned_peak_bytes
// CHECK: return
func.func @passthrough(%x: tensor<256x64xf32>) -> tensor<256x64xf32> attributes {memopt.passthrough} {
  %t = memopt.op "aten::tanh"(%x) [#memopt.arg<0>] {overload = ""} : (tensor<256x64xf32>) -> tensor<256x64xf32>
  return %t : tensor<256x64xf32>
}
