// memopt.op with saved_input exports as a call of the runtime's
// memopt::conv_packed / memopt::linear_packed / memopt::mul_packed (declared,
// not loaded, while
// exporting). The saved code is read from the archive: loading it needs the
// runtime.
// RUN: %python -c "import torch; torch.jit.script(torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.Linear(8, 2), torch.nn.Conv1d(2, 2, 1), torch.nn.Conv3d(1, 1, 1, bias=False))).save('%t.pt')"
// RUN: sed -e 's|@SOURCE@|%t.pt|g' %s | memopt-translate --export-torchscript -o %t.out.pt
// RUN: %python -c "import sys, zipfile; z = zipfile.ZipFile('%t.out.pt'); [sys.stdout.write(z.read(n).decode()) for n in z.namelist() if '/code/' in n and n.endswith('.py')]" | FileCheck %s

// CHECK: def forward(self
// CHECK: ops.memopt.conv_packed(input, weight, bias, [1, 1], [1, 1], [1, 1], 1, "bit")
// CHECK: ops.memopt.linear_packed({{.*}}, "bool")
// CHECK: ops.memopt.conv_packed({{.*}}, [2], [0], [1], 1, "bit")
// CHECK: ops.memopt.conv_packed({{.*}}, None, [1, 1, 1], [0, 0, 0], [1, 1, 1], 1, "bool")
// An op without saved_input stays the ATen call.
// CHECK: torch.conv2d(input, weight, bias, [1, 1], [1, 1])
// CHECK: ops.memopt.mul_packed({{.*}}, "bit")

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x3x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x2xf32>, tensor<2x2x2xf32>, tensor<1x1x2x2x2xf32>, tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>) {
    %w = memopt.param "0.weight" : tensor<4x3x3x3xf32>
    %b = memopt.param "0.bias" : tensor<4xf32>
    %lw = memopt.param "1.weight" : tensor<2x8xf32>
    %lb = memopt.param "1.bias" : tensor<2xf32>
    %cw = memopt.param "2.weight" : tensor<2x2x1xf32>
    %cb = memopt.param "2.bias" : tensor<2xf32>
    %vw = memopt.param "3.weight" : tensor<1x1x1x1x1xf32>
    %y = memopt.op "aten::conv2d"(%x, %w, %b) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1] {overload = "", saved_input = #memopt.compress<bit>} : (tensor<2x3x4x4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
    %r = memopt.op "aten::reshape"(%y) [#memopt.arg<0>, [2, 4, 4, 4]] {overload = ""} : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
    %v = memopt.op "aten::reshape"(%r) [#memopt.arg<0>, [2, 4, 4, 2, 2]] {overload = ""} : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x2x2xf32>
    %s = memopt.op "aten::reshape"(%y) [#memopt.arg<0>, [2, 4, 4, 8]] {overload = ""} : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x8xf32>
    %l = memopt.op "aten::linear"(%s, %lw, %lb) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>] {overload = "", saved_input = #memopt.compress<bool>} : (tensor<2x4x4x8xf32>, tensor<2x8xf32>, tensor<2xf32>) -> tensor<2x4x4x2xf32>
    // A traced model may pass a single int for an int[N] argument.
    %c0 = memopt.op "aten::reshape"(%y) [#memopt.arg<0>, [2, 2, 16]] {overload = ""} : (tensor<2x4x4x4xf32>) -> tensor<2x2x16xf32>
    %c = memopt.op "aten::conv1d"(%c0, %cw, %cb) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, 2, 0, 1, 1] {overload = "", saved_input = #memopt.compress<bit>} : (tensor<2x2x16xf32>, tensor<2x2x1xf32>, tensor<2xf32>) -> tensor<2x2x8xf32>
    %c1 = memopt.op "aten::slice"(%c) [#memopt.arg<0>, 2, 0, 2, 1] {overload = "Tensor"} : (tensor<2x2x8xf32>) -> tensor<2x2x2xf32>
    %t0 = memopt.op "aten::reshape"(%y) [#memopt.arg<0>, [1, 1, 8, 8, 2]] {overload = ""} : (tensor<2x4x4x4xf32>) -> tensor<1x1x8x8x2xf32>
    %t = memopt.op "aten::conv3d"(%t0, %vw) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, [1, 1, 1], [0, 0, 0], [1, 1, 1], 1] {overload = "", saved_input = #memopt.compress<bool>} : (tensor<1x1x8x8x2xf32>, tensor<1x1x1x1x1xf32>) -> tensor<1x1x8x8x2xf32>
    %t1 = memopt.op "aten::slice"(%t) [#memopt.arg<0>, 2, 0, 2, 1] {overload = "Tensor"} : (tensor<1x1x8x8x2xf32>) -> tensor<1x1x2x8x2xf32>
    %t2 = memopt.op "aten::reshape"(%t1) [#memopt.arg<0>, [1, 1, 2, 2, 2]] {overload = ""} : (tensor<1x1x2x8x2xf32>) -> tensor<1x1x2x2x2xf32>
    %p = memopt.op "aten::conv2d"(%x, %w, %b) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1] {overload = ""} : (tensor<2x3x4x4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
    %l2 = memopt.op "aten::reshape"(%l) [#memopt.arg<0>, [2, 4, 4, 2]] {overload = ""} : (tensor<2x4x4x2xf32>) -> tensor<2x4x4x2xf32>
    %m = memopt.op "aten::mul"(%y, %p) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor", saved_input = #memopt.compress<bit>} : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
    return %y, %l2, %c1, %t2, %p, %m : tensor<2x4x4x4xf32>, tensor<2x4x4x2xf32>, tensor<2x2x2xf32>, tensor<1x1x2x2x2xf32>, tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>
  }
}
