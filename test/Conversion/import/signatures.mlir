// Several input signatures: one function per signature, @forward_s<i>, with
// static types from that signature and its recorded count and settings.
// RUN: memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signature 'x:2x3x8x8;count=5' --signature 'x:4x3x8x8:f32;budget=1MiB;passthrough' | FileCheck %s
// RUN: memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signatures-file %S/../Inputs/signatures.json | FileCheck %s --check-prefix=FILE
// RUN: memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signatures-file %S/../Inputs/signatures.json --signature 'x:1x3x8x8' | FileCheck %s --check-prefix=ADD
// One signature imports as plain input specs do: @forward.
// RUN: memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signature 'x:2x3x8x8;budget=1MiB' | FileCheck %s --check-prefix=ONE
// Control flow folded on sizes is recorded per function (memopt.shape_assumes);
// input checks and loops over the rank (batch norm's) are not.
// RUN: %python %S/../Inputs/shape_models.py %t
// RUN: memopt-translate --import-torchscript %t/sized_branch.pt --signature x:8x3 --signature x:2x3 | FileCheck %s --check-prefix=BRANCH
// RUN: memopt-translate --import-torchscript %t/sized_loop.pt --input-shape x:3x2 | FileCheck %s --check-prefix=LOOP
// RUN: memopt-translate --import-torchscript %t/checked.pt --signature x:8x3x2x2 --signature x:3x3x2x2 | FileCheck %s --check-prefix=CHECKED

// CHECK: module attributes {memopt.source = "{{.*}}conv_bn.pt"}
// CHECK: func.func @forward_s0(%{{.*}}: tensor<2x3x8x8xf32>) -> tensor<2x4x8x8xf32> attributes {memopt.assumes = {bn.training = true}, memopt.signature = #memopt.signature<index = 0, count = 5>}
// CHECK: memopt.op "aten::conv2d"{{.*}} -> tensor<2x4x8x8xf32>
// CHECK: func.func @forward_s1(%{{.*}}: tensor<4x3x8x8xf32>) -> tensor<4x4x8x8xf32> attributes {memopt.assumes = {bn.training = true}, memopt.budget = "1MiB", memopt.passthrough, memopt.signature = #memopt.signature<index = 1, count = 1>}
// CHECK: memopt.op "aten::conv2d"{{.*}} -> tensor<4x4x8x8xf32>
// CHECK-NOT: func.func

// FILE: func.func @forward_s0(%{{.*}}: tensor<2x3x8x8xf32>) {{.*}}memopt.signature = #memopt.signature<index = 0, count = 37>
// FILE: func.func @forward_s1(%{{.*}}: tensor<4x3x8x8xf32>) {{.*}}memopt.budget = "64KiB", memopt.passthrough, memopt.signature = #memopt.signature<index = 1, count = 5>

// ADD: func.func @forward_s0(
// ADD: func.func @forward_s1(
// ADD: func.func @forward_s2(%{{.*}}: tensor<1x3x8x8xf32>) {{.*}}memopt.signature = #memopt.signature<index = 2, count = 1>

// ONE: func.func @forward(%{{.*}}: tensor<2x3x8x8xf32>) -> tensor<2x4x8x8xf32> attributes {memopt.assumes = {bn.training = true}, memopt.budget = "1MiB"} {
// ONE-NOT: memopt.signature

// BRANCH: func.func @forward_s0(%{{.*}}: tensor<8x3xf32>) {{.*}}memopt.shape_assumes = ["prim::If condition at shape_models.py:16"]
// BRANCH-NEXT: "aten::mul"
// BRANCH: func.func @forward_s1(%{{.*}}: tensor<2x3xf32>) {{.*}}memopt.shape_assumes = ["prim::If condition at shape_models.py:16"]
// BRANCH-NEXT: "aten::add"

// LOOP: func.func @forward(%{{.*}}: tensor<3x2xf32>) -> tensor<2xf32> attributes {memopt.shape_assumes = ["prim::Loop trip count at shape_models.py:26"]}

// CHECKED: func.func @forward_s0(%{{.*}}: tensor<8x3x2x2xf32>) -> tensor<8x12xf32> attributes {memopt.signature
// CHECKED-NOT: shape_assumes
