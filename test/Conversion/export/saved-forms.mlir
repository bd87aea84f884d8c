// memopt.op with saved_form exports as a call of the runtime's
// memopt::relu_masked(_) / memopt::dropout_masked / memopt::max_pool2d_lean, and a batch-norm with
// backward = #memopt.backward<by_channel> as memopt::batch_norm_by_channel
// (declared, not loaded,
// while exporting), with the ATen op's arguments; a single int for an int[2]
// argument broadcasts. The saved code is read from the archive.
// RUN: %python -c "import torch; torch.jit.script(torch.nn.Sequential(torch.nn.ReLU(), torch.nn.MaxPool2d(2))).save('%t.pt')"
// RUN: sed -e 's|@SOURCE@|%t.pt|g' %s | memopt-translate --export-torchscript -o %t.out.pt
// RUN: %python -c "import sys, zipfile; z = zipfile.ZipFile('%t.out.pt'); [sys.stdout.write(z.read(n).decode()) for n in z.namelist() if '/code/' in n and n.endswith('.py')]" | FileCheck %s

// CHECK: def forward(self
// CHECK: ops.memopt.relu_masked_(
// CHECK: ops.memopt.relu_masked(
// CHECK: ops.memopt.max_pool2d_lean({{.*}}, [3, 3], [2, 2], [1, 1], [1, 1], False)
// CHECK: ops.memopt.max_pool2d_lean({{.*}}, [2, 2], [2, 2], [0, 0], [1, 1], True)
// CHECK: ops.memopt.batch_norm_by_channel({{.*}}, None, None, None, None, True, 0.10000000000000001, 1.0000000000000001e-05, True)
// CHECK: ops.memopt.dropout_masked({{.*}}, 0.25, True)
// Without saved_form: the ATen ops.
// CHECK: torch.max_pool2d(torch.relu(

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x3x8x8xf32>) -> (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>) {
    %n = memopt.op "aten::neg"(%x) [#memopt.arg<0>] {overload = ""} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %r = memopt.op "aten::relu_"(%n) [#memopt.arg<0>] {mutates = array<i64: 0>, overload = "", saved_form = #memopt.saved<mask>, views = array<i64: 0>} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %s = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {overload = "", saved_form = #memopt.saved<mask>} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %p = memopt.op "aten::max_pool2d"(%r) [#memopt.arg<0>, [3, 3], [2, 2], [1, 1], [1, 1], false] {overload = "", saved_form = #memopt.saved<indices>} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
    %q = memopt.op "aten::max_pool2d"(%s) [#memopt.arg<0>, 2, 2, 0, 1, true] {overload = "", saved_form = #memopt.saved<indices>} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
    %bn = memopt.op "aten::batch_norm"(%x) [#memopt.arg<0>, #memopt.none, #memopt.none, #memopt.none, #memopt.none, true, 0.1, 1.0e-05, true] {backward = #memopt.backward<by_channel>, overload = ""} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %dr = memopt.op "aten::dropout"(%bn) [#memopt.arg<0>, 0.25, true] {nondeterministic, overload = "", saved_form = #memopt.saved<mask>} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %t = memopt.op "aten::relu"(%dr) [#memopt.arg<0>] {overload = ""} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %u = memopt.op "aten::max_pool2d"(%t) [#memopt.arg<0>, [2, 2], [2, 2], [0, 0], [1, 1], false] {overload = ""} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
    return %p, %q, %u : tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>
  }
}
