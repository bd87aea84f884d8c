// Tensor constants in region bodies, a region nested in another included,
// enter the regions as inputs made in forward (printed into a region's IR
// text they would be values the runtime's parser cannot read). The exported
// module runs, and its gradient is the constants'.
// RUN: %python -c "import torch; torch.jit.script(torch.nn.Identity()).save('%t.pt')"
// RUN: sed -e 's|@SOURCE@|%t.pt|g' %s | memopt-translate --export-torchscript -o %t.out.pt
// RUN: %python %s.py %t.out.pt memopt-translate | FileCheck %s
// CHECK: output [1.5, 5.0]
// CHECK: grad [1.5, 5.0]
module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = memopt.checkpoint "outer"(%x) policies [#memopt.keep] : (tensor<2xf32>) -> tensor<2xf32> {
    ^bb0(%a: tensor<2xf32>):
      %c = memopt.op "prim::Constant"() [[1.5, 2.5]] : () -> tensor<2xf32>
      %s = memopt.op "aten::mul"(%a, %c) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      %n = memopt.checkpoint "inner"(%s) policies [#memopt.keep] : (tensor<2xf32>) -> tensor<2xf32> {
      ^bb0(%b: tensor<2xf32>):
        %d = memopt.op "prim::Constant"() [[1.0, 2.0]] : () -> tensor<2xf32>
        %t = memopt.op "aten::mul"(%b, %d) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
        memopt.yield %t : tensor<2xf32>
      }
      memopt.yield %n : tensor<2xf32>
    }
    return %0 : tensor<2xf32>
  }
}
