// What the exported forward looks like once saved: GetAttr chains for state,
// constants re-materialized with their schema types, a guard per assumption.
// RUN: %python -c "import torch; torch.jit.script(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))).save('%t.pt')"
// RUN: sed -e 's|@SOURCE@|%t.pt|g' %s | memopt-translate --export-torchscript -o %t.out.pt
// RUN: %python -c "import torch; m = torch.jit.load('%t.out.pt'); print(m.code); print(list(m.state_dict()))" | FileCheck %s

// CHECK: def forward(self,
// CHECK-NEXT: input: Tensor) -> Tuple[Tensor, Tensor, List[int]]:
// CHECK: "memopt: this module was compiled for 1.training == True (memopt.assumes)
// CHECK: if torch.ne(training, True):
// CHECK-NEXT: ops.prim.RaiseException(
// CHECK: weight = _{{.*}}.weight
// CHECK: torch.linear(input, weight, bias)
// CHECK: torch.add_(num_batches_tracked, 1)
// CHECK: torch.batch_norm({{.*}}, training{{.*}}, 0.10000000000000001, 1.0000000000000001e-05, True)
// Empty list, device and float-from-int constants take the schema's types.
// CHECK: torch.zeros(annotate(List[int], []), dtype=None, layout=None, device=torch.device("cpu"))
// CHECK: (torch.dropout({{.*}}, 0., False), torch.add({{.*}}, CONSTANTS.c0), [2, 3])
// CHECK: ['0.weight', '0.bias', '1.weight', '1.bias', '1.running_mean', '1.running_var', '1.num_batches_tracked']

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x4xf32>) -> (tensor<2x3xf32>, tensor<f32>, !memopt.list<i64>) attributes {memopt.assumes = {"1.training" = true}} {
    %w = memopt.param "0.weight" : tensor<3x4xf32>
    %b = memopt.param "0.bias" : tensor<3xf32>
    %y = memopt.op "aten::linear"(%x, %w, %b) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>] {overload = ""} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %nb = memopt.buffer "1.num_batches_tracked" : tensor<i64>
    %nb2 = memopt.op "aten::add_"(%nb) [#memopt.arg<0>, 1, 1] {mutates = array<i64: 0>, overload = "Scalar", views = array<i64: 0>} : (tensor<i64>) -> tensor<i64>
    %t = memopt.get_attr "1.training" : i1
    %g = memopt.param "1.weight" : tensor<3xf32>
    %gb = memopt.param "1.bias" : tensor<3xf32>
    %rm = memopt.buffer "1.running_mean" : tensor<3xf32>
    %rv = memopt.buffer "1.running_var" : tensor<3xf32>
    %n = memopt.op "aten::batch_norm"(%y, %g, %gb, %rm, %rv, %t) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, #memopt.arg<5>, 1.000000e-01, 1.000000e-05, true] {overload = ""} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, i1) -> tensor<2x3xf32>
    %z = memopt.op "aten::zeros"() [[], #memopt.none, #memopt.none, "cpu", #memopt.none] {overload = ""} : () -> tensor<f32>
    %d = memopt.op "aten::dropout"(%n) [#memopt.arg<0>, 0, false] {overload = ""} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %c = memopt.op "prim::Constant"() [[1.5, 2.5]] : () -> tensor<2xf32>
    %s = memopt.op "aten::add"(%z, %c) [#memopt.arg<0>, #memopt.arg<1>, 1] {overload = "Tensor"} : (tensor<f32>, tensor<2xf32>) -> tensor<f32>
    %l = memopt.op "prim::ListConstruct"() [2, 3] : () -> !memopt.list<i64>
    return %d, %s, %l : tensor<2x3xf32>, tensor<f32>, !memopt.list<i64>
  }
}
