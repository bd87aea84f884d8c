// Bad signatures and signature files: one line each, naming what is wrong.
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signature 'x:2x3x8x8;count=abc' 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signature 'x:2x3x8x8;colour=red' 2>&1 | FileCheck %s --check-prefix=SETTING
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signature 'x:2xAx8x8' 2>&1 | FileCheck %s --check-prefix=SPEC
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signature 'x:2x3x8x8' --input-shape x:2x3x8x8 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signature 'x:2x3x8x8' --signature 'x:2x3x8x8' 2>&1 | FileCheck %s --check-prefix=REPEAT
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signature 'x:2x3x8x8' --signature 'x:2x3x8x8,y:2' 2>&1 | FileCheck %s --check-prefix=ARITY
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signature 'x:2x3x8x8' --signature 'x:2x3x8' 2>&1 | FileCheck %s --check-prefix=RANK
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signatures-file %t.missing.json 2>&1 | FileCheck %s --check-prefix=MISSING -DFILE=%t.missing.json
//
// RUN: printf '{"version": 1, "signatures": [' > %t.truncated.json
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signatures-file %t.truncated.json 2>&1 | FileCheck %s --check-prefix=SYNTAX -DFILE=%t.truncated.json
// RUN: printf '{"version": 2, "signatures": []}' > %t.version.json
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signatures-file %t.version.json 2>&1 | FileCheck %s --check-prefix=VERSION -DFILE=%t.version.json
// RUN: printf '{"version": 1, "signatures": []}' > %t.empty.json
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signatures-file %t.empty.json 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: printf '{"version": 1, "signatures": [{"inputs": [{"name": "x", "shape": [2, 3]}]}, {"inputs": [{"name": "x", "shape": [2, -3]}]}]}' > %t.negative.json
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signatures-file %t.negative.json 2>&1 | FileCheck %s --check-prefix=NEGATIVE -DFILE=%t.negative.json
// RUN: printf '{"version": 1, "signatures": [{"inputs": [{"name": "x", "shape": [2], "dtype": "f8"}]}]}' > %t.dtype.json
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signatures-file %t.dtype.json 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: printf '{"version": 1, "signatures": [{"inputs": [], "cuont": 3}]}' > %t.key.json
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signatures-file %t.key.json 2>&1 | FileCheck %s --check-prefix=KEY
// RUN: printf '{"version": 1, "signatures": [{"inputs": [{"name": "x", "shape": [2]}], "count": 2.5}]}' > %t.count.json
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signatures-file %t.count.json 2>&1 | FileCheck %s --check-prefix=FRACTION
// RUN: printf '{"version": 1, "signatures": [{"inputs": [{"name": "x", "shape": [2]}]}, {"inputs": [{"name": "x", "shape": [2]}]}]}' > %t.dup.json
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signatures-file %t.dup.json 2>&1 | FileCheck %s --check-prefix=DUP
// RUN: printf '[1, 2]' > %t.array.json
// RUN: not memopt-translate --import-torchscript %S/../Inputs/conv_bn.pt --signatures-file %t.array.json 2>&1 | FileCheck %s --check-prefix=ARRAY

// COUNT: memopt: error: invalid signature 'x:2x3x8x8;count=abc': count 'abc' is not a non-negative integer (expected spec,spec,...[;count=N][;budget=S][;passthrough], e.g. x:8x3x224x224;count=37)
// COUNT-NOT: memopt
// SETTING: memopt: error: invalid signature 'x:2x3x8x8;colour=red': unknown setting 'colour=red'
// SPEC: memopt: error: in signature 'x:2xAx8x8': invalid input spec 'x:2xAx8x8': dimension 'A' is not a non-negative integer
// BOTH: memopt: error: give input shapes either as one set of input specs or as signatures, not both
// REPEAT: memopt: error: signature #1 (x: 2x3x8x8 f32) repeats signature #0
// ARITY: memopt: error: signature #1 (x: 2x3x8x8 f32, y: 2 f32): the method takes 1 input(s) (x) but 2 --input-shape spec(s) were given
// ARITY-NOT: memopt
// RANK: memopt: error: signature #1 (x: 2x3x8 f32): running 'aten::conv2d' on inputs of the given shapes failed
// MISSING: memopt: error: cannot open signature file '[[FILE]]': No such file or directory
// SYNTAX: memopt: error: '[[FILE]]' is not valid JSON: [1:30, byte=30]: Unexpected EOF
// VERSION: memopt: error: '[[FILE]]': version is 2, this memopt reads version 1
// EMPTY: memopt: error: '{{.*}}': signatures is empty
// NEGATIVE: memopt: error: '[[FILE]]': signatures[1].inputs[0].shape[1] is -3, expected a non-negative integer
// DTYPE: memopt: error: '{{.*}}': signatures[0].inputs[0].dtype is 'f8', expected one of f32, f16, bf16, f64, i64, i32, i1
// KEY: memopt: error: '{{.*}}': signatures[0] has unknown key 'cuont' (expected inputs, count, budget, passthrough)
// FRACTION: memopt: error: '{{.*}}': signatures[0].count is 2.5, expected a non-negative integer
// DUP: memopt: error: '{{.*}}': signatures[1] repeats signatures[0] (x: 2 f32)
// ARRAY: memopt: error: '{{.*}}': the top level is an array, expected an object with "version" and "signatures"
