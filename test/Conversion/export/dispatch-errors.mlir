// What a dispatching module cannot export as.
// RUN: %python -c "import torch; torch.jit.script(torch.nn.Linear(4, 3)).save('%t.pt')"
// RUN: sed -e 's|@SOURCE@|%t.pt|g' %s | memopt-translate --export-torchscript -split-input-file -verify-diagnostics -o %t.out

module attributes {memopt.source = "@SOURCE@"} {
  // expected-error@+1 {{cannot export @forward: a dispatching forward must be exactly one memopt.dispatch of its arguments, in order, returning its results (as memopt-specialize-signatures makes it)}}
  func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x3xf32> {
    %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<2x4xf32>] -> @forward_s0>] strict : (tensor<?x4xf32>) -> tensor<?x3xf32>
    %y = memopt.op "aten::relu"(%r) [#memopt.arg<0>] {overload = ""} : (tensor<?x3xf32>) -> tensor<?x3xf32>
    return %y : tensor<?x3xf32>
  }
  func.func @forward_s0(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
    %w = memopt.param "weight" : tensor<3x4xf32>
    %y = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    return %y : tensor<2x3xf32>
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<*xf32>) -> tensor<*xf32> {
    %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<2x4xf32>] -> @forward_s0>] fallback @forward_original : (tensor<*xf32>) -> tensor<*xf32>
    return %r : tensor<*xf32>
  }
  func.func @forward_s0(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
    %w = memopt.param "weight" : tensor<3x4xf32>
    %y = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    return %y : tensor<2x3xf32>
  }
  // expected-error@+1 {{cannot export @forward_original: a declaration is exportable only as the source's own method (memopt.original_method = "forward")}}
  func.func private @forward_original(tensor<*xf32>) -> tensor<*xf32>
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<*xf32>) -> tensor<*xf32> {
    %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<2x4xf32>] -> @forward_s0>] fallback @forward_original : (tensor<*xf32>) -> tensor<*xf32>
    return %r : tensor<*xf32>
  }
  func.func @forward_s0(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
    %w = memopt.param "weight" : tensor<3x4xf32>
    %y = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    return %y : tensor<2x3xf32>
  }
  // expected-error@+1 {{cannot export @forward_original: the source module has no method 'predict' (memopt.original_method)}}
  func.func private @forward_original(tensor<*xf32>) -> tensor<*xf32> attributes {memopt.original_method = "predict"}
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x3xf32> {
    %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<2x4xf32>] -> @weight>] strict : (tensor<?x4xf32>) -> tensor<?x3xf32>
    return %r : tensor<?x3xf32>
  }
  // expected-error@+1 {{cannot export @weight as a method: the module already has a member 'weight'}}
  func.func @weight(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
    %w = memopt.param "weight" : tensor<3x4xf32>
    %y = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    return %y : tensor<2x3xf32>
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<*xf32>) -> !memopt.list<i64> {
    // expected-error@+1 {{cannot export the dispatch: method 'forward_original' returns Tensor but 'forward_s0' returns List[int]}}
    %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<2x4xf32>] -> @forward_s0>] fallback @forward_original : (tensor<*xf32>) -> !memopt.list<i64>
    return %r : !memopt.list<i64>
  }
  func.func @forward_s0(%x: tensor<2x4xf32>) -> !memopt.list<i64> {
    %l = memopt.op "aten::size"(%x) [#memopt.arg<0>] {overload = ""} : (tensor<2x4xf32>) -> !memopt.list<i64>
    return %l : !memopt.list<i64>
  }
  func.func private @forward_original(tensor<*xf32>) -> !memopt.list<i64> attributes {memopt.original_method = "forward"}
}
