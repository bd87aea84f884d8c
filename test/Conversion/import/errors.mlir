// Import errors are one line, `memopt: error: ...`, with a location where
// there is one. (test/python/test_import_errors.py checks exit codes.)
// Control flow on tensor data is kept whole (data-dependent-control-flow.mlir)
// unless its results' shapes would depend on the data, or it assigns state.
// RUN: not memopt-translate --import-torchscript %S/../Inputs/data_dependent_shapes.pt --input-shape x:2x3 2>&1 | FileCheck %s --check-prefix=DATA
// DATA: memopt: error: prim::If on tensor data returns [2, 2] Float from its 'then' branch but [2, 3] Float from its 'else' branch (result 0; its condition depends on tensor data through 'aten::Bool'); memopt needs results whose shapes do not depend on tensor data, at make_models.py:{{[0-9]+}}
// RUN: not memopt-translate --import-torchscript %S/../Inputs/assign_in_data_branch.pt --input-shape x:2x3 2>&1 | FileCheck %s --check-prefix=ASSIGN
// ASSIGN: memopt: error: forward assigns module attribute 'hits' inside prim::If on tensor data; memopt keeps such control flow whole only when it assigns no module state, at make_models.py:{{[0-9]+}}
// RUN: not memopt-translate --import-torchscript %S/../Inputs/masked_index_if.pt --input-shape x:3x2x4 2>&1 | FileCheck %s --check-prefix=MASK
// MASK: memopt: error: prim::If condition depends on tensor data (through 'aten::index'); memopt folds control flow only on constants, module attributes and tensor shapes, at make_models.py:{{[0-9]+}}
// RUN: not memopt-translate --import-torchscript %S/../Inputs/custom_op.pt 2>&1 | FileCheck %s --check-prefix=SCHEMA
// SCHEMA: memopt: error: operator 'memopt_test::scale' has no schema
// RUN: not memopt-translate --import-torchscript %S/../Inputs/state_dict.pt 2>&1 | FileCheck %s --check-prefix=NOTTS
// NOTTS: memopt: error: 'state_dict.pt' is a zip archive but not a TorchScript module
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --input-shape x:2x3x8x8 --input-shape y:1 2>&1 | FileCheck %s --check-prefix=COUNT
// COUNT: memopt: error: the method takes 1 input(s) (x) but 2 --input-shape spec(s) were given
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --input-shape x:2x3x8 2>&1 | FileCheck %s --check-prefix=RANK
// RANK: memopt: error: running 'aten::conv2d' on inputs of the given shapes failed: {{.*}}, at conv (conv.py:{{[0-9]+}})
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --input-shape x:2xAx8 2>&1 | FileCheck %s --check-prefix=SYNTAX
// SYNTAX: memopt: error: invalid input spec 'x:2xAx8': dimension 'A' is not a non-negative integer
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --input-shape x:2x3x8x8 --method backward 2>&1 | FileCheck %s --check-prefix=METHOD
// METHOD: memopt: error: the module has no method 'backward' (methods: forward)
// BatchNorm's own shape checks need input shapes to be folded.
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt 2>&1 | FileCheck %s --check-prefix=NOSPEC
// NOSPEC: memopt: error: prim::If condition depends on values that are only known with --input-shape (tensor shapes or data), at {{.*}}batchnorm.py:{{[0-9]+}}
