// RUN: memopt-opt %s -split-input-file -verify-diagnostics
// Every verifier rule of memopt.dispatch.

func.func private @f8(tensor<8x3xf32>) -> tensor<8x10xf32>
func.func private @g(tensor<?x3xf32>) -> tensor<?x10xf32>

func.func @no_cases(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{'memopt.dispatch' op needs at least one case}}
  %r = memopt.dispatch (%x) cases [] fallback @g : (tensor<?x3xf32>) -> tensor<?x10xf32>
  return
}

// -----

func.func private @f8(tensor<8x3xf32>) -> tensor<8x10xf32>
func.func private @g(tensor<?x3xf32>) -> tensor<?x10xf32>

func.func @strict_and_fallback(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{'memopt.dispatch' op cannot be strict and have a fallback}}
  %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<8x3xf32>] -> @f8>] fallback @g strict : (tensor<?x3xf32>) -> tensor<?x10xf32>
  return
}

// -----

func.func private @f8(tensor<8x3xf32>) -> tensor<8x10xf32>

func.func @neither(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{'memopt.dispatch' op without a fallback must be marked strict}}
  %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<8x3xf32>] -> @f8>] : (tensor<?x3xf32>) -> tensor<?x10xf32>
  return
}

// -----

func.func private @g(tensor<?x3xf32>) -> tensor<?x10xf32>

func.func @not_a_case(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{'memopt.dispatch' op case #0 is @g, expected #memopt.case<...>}}
  %r = memopt.dispatch (%x) cases [@g] fallback @g : (tensor<?x3xf32>) -> tensor<?x10xf32>
  return
}

// -----

func.func private @f8(tensor<8x3xf32>) -> tensor<8x10xf32>
func.func private @g(tensor<?x3xf32>) -> tensor<?x10xf32>

func.func @guard_count(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{'memopt.dispatch' op case #0 guards 2 inputs of 1}}
  %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<8x3xf32>, tensor<8x3xf32>] -> @f8>] fallback @g : (tensor<?x3xf32>) -> tensor<?x10xf32>
  return
}

// -----

func.func private @f8(tensor<8x3xf32>) -> tensor<8x10xf32>
func.func private @g(tensor<?x3xf32>) -> tensor<?x10xf32>

func.func @dynamic_guard(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{'memopt.dispatch' op case #0 guard #0 is 'tensor<?x3xf32>', expected a statically shaped tensor type}}
  %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<?x3xf32>] -> @f8>] fallback @g : (tensor<?x3xf32>) -> tensor<?x10xf32>
  return
}

// -----

func.func private @f8(tensor<8x3xf32>) -> tensor<8x10xf32>
func.func private @g(tensor<?x3xf32>) -> tensor<?x10xf32>

func.func @never_matches(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{'memopt.dispatch' op case #0 guard #0 'tensor<8x4xf32>' can never match input type 'tensor<?x3xf32>'}}
  %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<8x4xf32>] -> @f8>] fallback @g : (tensor<?x3xf32>) -> tensor<?x10xf32>
  return
}

// -----

func.func private @f8(tensor<8x3xf32>) -> tensor<8x10xf32>
func.func private @g(tensor<?x3xf32>) -> tensor<?x10xf32>

func.func @duplicate(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{'memopt.dispatch' op case #1 repeats the guard of case #0}}
  %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<8x3xf32>] -> @f8>, #memopt.case<[tensor<8x3xf32>] -> @f8>] fallback @g : (tensor<?x3xf32>) -> tensor<?x10xf32>
  return
}

// -----

func.func private @f8(tensor<8x3xf32>) -> tensor<8x10xf32>
func.func private @g(tensor<?x3xf32>) -> tensor<?x10xf32>

func.func @negative_count(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{'memopt.dispatch' op case #0 has a negative count}}
  %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<8x3xf32>] -> @f8, count = -1>] fallback @g : (tensor<?x3xf32>) -> tensor<?x10xf32>
  return
}

// -----

func.func private @g(tensor<?x3xf32>) -> tensor<?x10xf32>

func.func @missing_callee(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{'memopt.dispatch' op case #0 callee @nowhere does not name a func.func}}
  %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<8x3xf32>] -> @nowhere>] fallback @g : (tensor<?x3xf32>) -> tensor<?x10xf32>
  return
}

// -----

func.func private @f8(tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x10xf32>
func.func private @g(tensor<?x3xf32>) -> tensor<?x10xf32>

func.func @callee_arity(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{'memopt.dispatch' op case #0 callee @f8 takes 2 arguments, dispatch passes 1}}
  %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<8x3xf32>] -> @f8>] fallback @g : (tensor<?x3xf32>) -> tensor<?x10xf32>
  return
}

// -----

func.func private @f8(tensor<8x3xf16>) -> tensor<8x10xf32>
func.func private @g(tensor<?x3xf32>) -> tensor<?x10xf32>

func.func @callee_argument(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{'memopt.dispatch' op case #0 callee @f8 argument #0 has type 'tensor<8x3xf16>', incompatible with 'tensor<8x3xf32>'}}
  %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<8x3xf32>] -> @f8>] fallback @g : (tensor<?x3xf32>) -> tensor<?x10xf32>
  return
}

// -----

func.func private @f8(tensor<8x3xf32>) -> (tensor<8x10xf32>, tensor<8x10xf32>)
func.func private @g(tensor<?x3xf32>) -> tensor<?x10xf32>

func.func @callee_results(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{'memopt.dispatch' op case #0 callee @f8 returns 2 values, dispatch returns 1}}
  %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<8x3xf32>] -> @f8>] fallback @g : (tensor<?x3xf32>) -> tensor<?x10xf32>
  return
}

// -----

func.func private @f8(tensor<8x3xf32>) -> tensor<8x10xf32>
func.func private @g(tensor<?x3xf32>) -> tensor<?x11xf32>

func.func @fallback_result(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{'memopt.dispatch' op fallback @g result #0 has type 'tensor<?x11xf32>', incompatible with 'tensor<?x10xf32>'}}
  %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<8x3xf32>] -> @f8>] fallback @g : (tensor<?x3xf32>) -> tensor<?x10xf32>
  return
}

// -----

func.func private @f8(tensor<8x3xf32>) -> tensor<8x10xf32>
func.func private @g(tensor<5x3xf32>) -> tensor<?x10xf32>

func.func @fallback_not_generic(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{'memopt.dispatch' op fallback @h argument #0 has type 'tensor<5x3xf16>', incompatible with 'tensor<?x3xf32>'}}
  %r = memopt.dispatch (%x) cases [#memopt.case<[tensor<8x3xf32>] -> @f8>] fallback @h : (tensor<?x3xf32>) -> tensor<?x10xf32>
  return
}
func.func private @h(tensor<5x3xf16>) -> tensor<?x10xf32>
