// A list-of-tensors attribute (as nn.LSTM's _flat_weights) read in a region
// nested in another one: forward reads it, the outer region takes its
// elements as inputs and rebuilds it, the inner one takes them from there.
// x = [1, 1]: out = x * x * (a + b) = [3, 3]; d out.sum / dx = 2 x (a + b)
// = [6, 6]; d / da = d / db = x * x = [1, 1].
// RUN: %python %s.py source %t.pt
// RUN: sed -e 's|@SOURCE@|%t.pt|g' %s | memopt-translate --export-torchscript -o %t.out.pt
// RUN: %python %s.py run %t.out.pt memopt-translate | FileCheck %s
// CHECK: output [3.0, 3.0]
// CHECK: grad x [6.0, 6.0] a [1.0, 1.0] b [1.0, 1.0]
module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = memopt.checkpoint "outer"(%x) policies [#memopt.keep] : (tensor<2xf32>) -> tensor<2xf32> {
    ^bb0(%a: tensor<2xf32>):
      %y = memopt.op "aten::mul"(%a, %a) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      %n = memopt.checkpoint "inner"(%y) policies [#memopt.keep] : (tensor<2xf32>) -> tensor<2xf32> {
      ^bb0(%b: tensor<2xf32>):
        %w = memopt.get_attr "weights" : !memopt.list<tensor<*xf32>>
        %s = memopt.op "aten::stack"(%w) [#memopt.arg<0>, 0] {overload = ""} : (!memopt.list<tensor<*xf32>>) -> tensor<2x2xf32>
        %t = memopt.op "aten::sum"(%s) [#memopt.arg<0>, [0], false, #memopt.none] {overload = "dim_IntList"} : (tensor<2x2xf32>) -> tensor<2xf32>
        %r = memopt.op "aten::mul"(%b, %t) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
        memopt.yield %r : tensor<2xf32>
      }
      memopt.yield %n : tensor<2xf32>
    }
    return %0 : tensor<2xf32>
  }
}
