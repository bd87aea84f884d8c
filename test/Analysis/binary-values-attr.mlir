// RUN: memopt-opt %s -memopt-test-binary-values -o /dev/null 2>&1 | FileCheck %s

// `memopt.assume_binary` on the module asserts the outputs of a module path:
// values defined inside it and used outside. features.3.act is internal;
// features.4 multiplies by 2 and is not binary.
// CHECK-NOT: features.3.act
// CHECK: remark: loc("features.3"): result #0 is assumed binary
// CHECK-NOT: remark
module attributes {memopt.assume_binary = ["features.3"]} {
  func.func @assumed(%v: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %a = memopt.op "aten::sigmoid"(%v) [#memopt.arg<0>] : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("features.3.act")
    %m = memopt.op "aten::round"(%a) [#memopt.arg<0>] : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("features.3")
    %r = memopt.op "aten::mul"(%m) [#memopt.arg<0>, 2.0] : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("features.4")
    return %r : tensor<2x8xf32>
  }
}
