// A buffer registered as None (nn.InstanceNorm2d's running statistics when
// it does not track them) read in a region nested in another one: the
// inner body has no `self`, and the attribute, of type None, can hold
// nothing else, so it enters the body as the constant None.
// x = [[[1, 3]]]: instance_norm(x) = [[[-1, 1]]] (eps 0), out = 2 * that;
// d out.sum / dx = 0 (a normalized row sums to a constant).
// RUN: %python %s.py source %t.pt
// RUN: sed -e 's|@SOURCE@|%t.pt|g' %s | memopt-translate --export-torchscript -o %t.out.pt
// RUN: %python %s.py run %t.out.pt memopt-translate | FileCheck %s
// CHECK: output [-2.0, 2.0]
// CHECK: grad x [0.0, 0.0]
module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<1x1x2xf32>) -> tensor<1x1x2xf32> {
    %0 = memopt.checkpoint "outer"(%x) policies [#memopt.keep] : (tensor<1x1x2xf32>) -> tensor<1x1x2xf32> {
    ^bb0(%a: tensor<1x1x2xf32>):
      %y = memopt.op "aten::mul"(%a) [#memopt.arg<0>, 1.0] {overload = "Scalar"} : (tensor<1x1x2xf32>) -> tensor<1x1x2xf32>
      %n = memopt.checkpoint "inner"(%y) policies [#memopt.keep] : (tensor<1x1x2xf32>) -> tensor<1x1x2xf32> {
      ^bb0(%b: tensor<1x1x2xf32>):
        %rm = memopt.get_attr "norm.running_mean" : !memopt.none
        %rv = memopt.get_attr "norm.running_var" : !memopt.none
        %i = memopt.op "aten::instance_norm"(%b, %rm, %rv) [#memopt.arg<0>, #memopt.none, #memopt.none, #memopt.arg<1>, #memopt.arg<2>, true, 1.000000e-01, 0.0, false] {overload = ""} : (tensor<1x1x2xf32>, !memopt.none, !memopt.none) -> tensor<1x1x2xf32>
        %r = memopt.op "aten::mul"(%i) [#memopt.arg<0>, 2.0] {overload = "Scalar"} : (tensor<1x1x2xf32>) -> tensor<1x1x2xf32>
        memopt.yield %r : tensor<1x1x2xf32>
      }
      memopt.yield %n : tensor<1x1x2xf32>
    }
    return %0 : tensor<1x1x2xf32>
  }
}
