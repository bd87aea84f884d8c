// Forward assigns a list it built to a module attribute and loops over the
// attribute (RAFT keeps its correlation pyramid so): the reads after the
// assignment are the assigned list itself, whose length the import knows,
// so the loop unrolls over its three levels. Before: "prim::Loop trip count
// depends on tensor data (through 'prim::GetAttr')". The assignment stays.
// RUN: memopt-translate --import-torchscript %S/../Inputs/assigned_attribute.pt --input-shape x:2x4 | FileCheck %s
// CHECK-LABEL: func.func @forward(%arg0: tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[LEVELS:.*]] = memopt.op "prim::ListConstruct"(%arg0)
// CHECK: memopt.set_attr "levels" = %[[LEVELS]]
// CHECK-NOT: memopt.get_attr "levels"
// CHECK: memopt.op "aten::__getitem__"(%[[LEVELS]]) [#memopt.arg<0>, 0]
// CHECK-NEXT: aten::add
// CHECK-NEXT: memopt.op "aten::__getitem__"(%[[LEVELS]]) [#memopt.arg<0>, 1]
// CHECK-NEXT: aten::add
// CHECK-NEXT: memopt.op "aten::__getitem__"(%[[LEVELS]]) [#memopt.arg<0>, 2]
// CHECK-NEXT: aten::add
// CHECK-NEXT: return
