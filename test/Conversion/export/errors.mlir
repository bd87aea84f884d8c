// Every way an export can fail says why, on the op it concerns.
// RUN: %python -c "import torch; torch.jit.script(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))).save('%t.pt')"
// RUN: sed -e 's|@SOURCE@|%t.pt|g' -e 's|@SELF@|%s|g' %s | memopt-translate --export-torchscript -split-input-file -verify-diagnostics -o %t.out

// expected-error@+1 {{the module has no 'memopt.source' string attribute}}
module {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    return %x : tensor<2x4xf32>
  }
}

// -----

// expected-error@+1 {{source model '/nonexistent/model.pt' (memopt.source) does not exist}}
module attributes {memopt.source = "/nonexistent/model.pt"} {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    return %x : tensor<2x4xf32>
  }
}

// -----

// A file that is not a TorchScript archive (this test itself).
// expected-error@+1 {{does not load}}
module attributes {memopt.source = "@SELF@"} {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    return %x : tensor<2x4xf32>
  }
}

// -----

// expected-error@+1 {{no func.func @forward with a body to export}}
module attributes {memopt.source = "@SOURCE@"} {
  func.func @predict(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    return %x : tensor<2x4xf32>
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<3x4xf32> {
    // expected-error@+1 {{parameter '0.wieght' does not exist in}}
    %w = memopt.param "0.wieght" : tensor<3x4xf32>
    return %w : tensor<3x4xf32>
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<4x4xf32> {
    // expected-error@+1 {{parameter '0.weight' has shape [3, 4] in}}
    %w = memopt.param "0.weight" : tensor<4x4xf32>
    return %w : tensor<4x4xf32>
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<3x4xf64> {
    // expected-error@+1 {{parameter '0.weight' has dtype Float in}}
    %w = memopt.param "0.weight" : tensor<3x4xf64>
    return %w : tensor<3x4xf64>
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<3x4xf32> {
    // expected-error@+1 {{parameter '0.weight' is frozen in the IR but requires grad in}}
    %w = memopt.param "0.weight" frozen : tensor<3x4xf32>
    return %w : tensor<3x4xf32>
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<3xf32> {
    // expected-error@+1 {{'1.running_mean' is a buffer in}}
    %m = memopt.param "1.running_mean" : tensor<3xf32>
    return %m : tensor<3xf32>
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<3xf32> {
    // expected-error@+1 {{buffer '1' is a submodule in}}
    %m = memopt.buffer "1" : tensor<3xf32>
    return %m : tensor<3xf32>
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x4xf32>) -> i64 {
    // expected-error@+1 {{attribute '1.training' has type bool in}}
    %t = memopt.get_attr "1.training" : i64
    return %t : i64
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  // expected-error@+1 {{assumed attribute '2.training' (memopt.assumes) does not exist}}
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {memopt.assumes = {"2.training" = true}} {
    return %x : tensor<2x4xf32>
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    // expected-error@+1 {{cannot export 'foo::bar': no TorchScript operator has this name}}
    %y = memopt.op "foo::bar"(%x) [#memopt.arg<0>] : (tensor<2x4xf32>) -> tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    // expected-error@+1 {{cannot export 'aten::relu': it has no overload 'Nope'}}
    %y = memopt.op "aten::relu"(%x) [#memopt.arg<0>] {overload = "Nope"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    // expected-error@+1 {{cannot export 'aten::relu': no schema accepts arguments (Tensor, str)}}
    %y = memopt.op "aten::relu"(%x) [#memopt.arg<0>, "x"] : (tensor<2x4xf32>) -> tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    // expected-error@+1 {{cannot export 'prim::CallFunction': calls must be inlined}}
    %y = memopt.op "prim::CallFunction"(%x) [#memopt.arg<0>] : (tensor<2x4xf32>) -> tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  // expected-error@+1 {{argument #0 of type '!memopt.token' has no TorchScript equivalent}}
  func.func @forward(%t: !memopt.token) -> !memopt.token {
    return %t : !memopt.token
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<8xf32>) -> tensor<8xf32> {
    // expected-error@+1 {{cannot export 'memopt.compress' to TorchScript}}
    %p = memopt.compress %x : tensor<8xf32> -> !memopt.packed<8xf32, bit>
    %y = memopt.decompress %p : !memopt.packed<8xf32, bit> -> tensor<8xf32>
    return %y : tensor<8xf32>
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<2xf32> {
    // expected-error@+1 {{cannot export tensor constant: tensor constant has 3 elements for 2}}
    %c = memopt.op "prim::Constant"() [[1.0, 2.0, 3.0]] : () -> tensor<2xf32>
    return %c : tensor<2xf32>
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x4xf32>) -> !memopt.script<"Device"> {
    // expected-error@+1 {{cannot export constant: 'gpu0' is not a device}}
    %d = memopt.op "prim::Constant"() ["gpu0"] : () -> !memopt.script<"Device">
    return %d : !memopt.script<"Device">
  }
}

// -----

// A list of tensors enters a region element by element; one that an op
// changed after it was built (append) would enter without what was added.
module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x2x4xf32> {
    %l = memopt.op "prim::ListConstruct"(%x) [#memopt.arg<0>] : (tensor<2x4xf32>) -> !memopt.list<tensor<*xf32>>
    %a = memopt.op "aten::append"(%l, %x) [#memopt.arg<0>, #memopt.arg<1>] {mutates = array<i64: 0>, views = array<i64: 0>} : (!memopt.list<tensor<*xf32>>, tensor<2x4xf32>) -> !memopt.list<tensor<*xf32>>
    // expected-error@+1 {{cannot export checkpoint region 'stack': input of type '!memopt.list<tensor<*xf32>>' is a list of tensors changed after it was built}}
    %0 = memopt.checkpoint "stack"(%l) policies [#memopt.keep] : (!memopt.list<tensor<*xf32>>) -> tensor<2x2x4xf32> {
    ^bb0(%b: !memopt.list<tensor<*xf32>>):
      %s = memopt.op "aten::stack"(%b) [#memopt.arg<0>, 0] {overload = ""} : (!memopt.list<tensor<*xf32>>) -> tensor<2x2x4xf32>
      memopt.yield %s : tensor<2x2x4xf32>
    }
    return %0 : tensor<2x2x4xf32>
  }
}
