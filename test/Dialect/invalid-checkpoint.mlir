// RUN: memopt-opt %s -split-input-file -verify-diagnostics
// Every verifier rule of memopt.checkpoint and memopt.yield.

func.func @no_label(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.checkpoint' op needs a non-empty label}}
  %r = memopt.checkpoint "" (%x) policies [#memopt.keep] : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    memopt.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @no_results(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.checkpoint' op must return at least one value}}
  memopt.checkpoint "r" (%x) policies [#memopt.keep] : (tensor<4xf32>) -> () {
  ^bb0(%a: tensor<4xf32>):
    memopt.yield
  }
  return
}

// -----

func.func @policy_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.checkpoint' op has 1 inputs but 2 save policies}}
  %r = memopt.checkpoint "r" (%x) policies [#memopt.keep, #memopt.keep] : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    memopt.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @not_a_policy(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.checkpoint' op save policy #0 is "keep", expected #memopt.keep, #memopt.compress<...> or #memopt.offload<...>}}
  %r = memopt.checkpoint "r" (%x) policies ["keep"] : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    memopt.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @compress_integer(%x: tensor<4xi64>) {
  // expected-error @+1 {{'memopt.checkpoint' op input #0 of type 'tensor<4xi64>' cannot be compressed: it needs a static f16, bf16 or f32 tensor}}
  %r = memopt.checkpoint "r" (%x) policies [#memopt.compress<bit>] : (tensor<4xi64>) -> tensor<4xi64> {
  ^bb0(%a: tensor<4xi64>):
    memopt.yield %a : tensor<4xi64>
  }
  return
}

// -----

func.func @compress_dynamic(%x: tensor<?xf32>) {
  // expected-error @+1 {{'memopt.checkpoint' op input #0 of type 'tensor<?xf32>' cannot be compressed: it needs a static f16, bf16 or f32 tensor}}
  %r = memopt.checkpoint "r" (%x) policies [#memopt.compress<bit>] : (tensor<?xf32>) -> tensor<?xf32> {
  ^bb0(%a: tensor<?xf32>):
    memopt.yield %a : tensor<?xf32>
  }
  return
}

// -----

func.func @offload_scalar(%x: i64, %y: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.checkpoint' op input #0 of type 'i64' cannot be offloaded: it is not a tensor}}
  %r = memopt.checkpoint "r" (%x, %y) policies [#memopt.offload<host>, #memopt.keep] : (i64, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: i64, %b: tensor<4xf32>):
    memopt.yield %b : tensor<4xf32>
  }
  return
}

// -----

func.func @body_arguments(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.checkpoint' op body has 0 arguments for 1 inputs}}
  %r = memopt.checkpoint "r" (%x) policies [#memopt.keep] : (tensor<4xf32>) -> tensor<4xf32> {
    %c = memopt.op "aten::zeros"() [[4], #memopt.none, #memopt.none, #memopt.none, #memopt.none] : () -> tensor<4xf32>
    memopt.yield %c : tensor<4xf32>
  }
  return
}

// -----

func.func @body_argument_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.checkpoint' op body argument #0 has type 'tensor<4xf16>' but input #0 has type 'tensor<4xf32>'}}
  %r = memopt.checkpoint "r" (%x) policies [#memopt.keep] : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf16>):
    %c = memopt.op "aten::float"(%a) [#memopt.arg<0>] : (tensor<4xf16>) -> tensor<4xf32>
    memopt.yield %c : tensor<4xf32>
  }
  return
}

// -----

func.func @set_attr_inside(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.checkpoint' op body contains 'memopt.set_attr', a side effect that recomputation would repeat}}
  %r = memopt.checkpoint "r" (%x) policies [#memopt.keep] : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    memopt.set_attr "lif.v" = %a : tensor<4xf32>
    memopt.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @print_inside(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.checkpoint' op body contains 'prim::Print', a side effect that recomputation would repeat}}
  %r = memopt.checkpoint "r" (%x) policies [#memopt.keep] : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    memopt.op "prim::Print"(%a) [#memopt.arg<0>] {side_effects} : (tensor<4xf32>) -> ()
    memopt.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @uses_value_from_above(%x: tensor<4xf32>) {
  %r = memopt.checkpoint "r" (%x) policies [#memopt.keep] : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+2 {{'memopt.op' op using value defined outside the region}}
    // expected-note @-3 {{required by region isolation constraints}}
    %y = memopt.op "aten::add"(%a, %x) [#memopt.arg<0>, #memopt.arg<1>, 1] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    memopt.yield %y : tensor<4xf32>
  }
  return
}

// -----

func.func @yield_types(%x: tensor<4xf32>) {
  %r = memopt.checkpoint "r" (%x) policies [#memopt.keep] : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %c = memopt.op "aten::half"(%a) [#memopt.arg<0>] : (tensor<4xf32>) -> tensor<4xf16>
    // expected-error @+1 {{'memopt.yield' op yields types ('tensor<4xf16>') but the region returns ('tensor<4xf32>')}}
    memopt.yield %c : tensor<4xf16>
  }
  return
}

// -----

func.func @yield_outside(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.yield' op expects parent op 'memopt.checkpoint'}}
  memopt.yield %x : tensor<4xf32>
}

// -----

func.func @prefetch_at_without_offload(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.checkpoint' op has prefetch_at but no offloaded input}}
  %r = memopt.checkpoint "a" (%x) policies [#memopt.keep] {prefetch_at = "a"} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%i: tensor<4xf32>):
    memopt.yield %i : tensor<4xf32>
  }
  return
}

// -----

func.func @prefetch_at_unknown(%x: tensor<4xf32>) {
  // expected-error @+1 {{prefetch_at names 'zz', which is not the label of a checkpoint region in this block}}
  %r = memopt.checkpoint "a" (%x) policies [#memopt.offload<host>] {prefetch_at = "zz"} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%i: tensor<4xf32>):
    memopt.yield %i : tensor<4xf32>
  }
  return
}

// -----

func.func @prefetch_at_earlier_region(%x: tensor<4xf32>) {
  %a = memopt.checkpoint "a" (%x) policies [#memopt.keep] : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%i: tensor<4xf32>):
    memopt.yield %i : tensor<4xf32>
  }
  // expected-error @+1 {{prefetch_at names 'a', a region that runs before this one in forward; its backward starts too late to prefetch for this one}}
  %b = memopt.checkpoint "b" (%a) policies [#memopt.offload<host>] {prefetch_at = "a"} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%i: tensor<4xf32>):
    memopt.yield %i : tensor<4xf32>
  }
  return
}

// -----

func.func @prefetch_at_ambiguous(%x: tensor<4xf32>) {
  // expected-error @+1 {{prefetch_at names 'c', the label of 2 regions; it must name exactly one}}
  %a = memopt.checkpoint "a" (%x) policies [#memopt.offload<host>] {prefetch_at = "c"} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%i: tensor<4xf32>):
    memopt.yield %i : tensor<4xf32>
  }
  %b = memopt.checkpoint "c" (%a) policies [#memopt.keep] : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%i: tensor<4xf32>):
    memopt.yield %i : tensor<4xf32>
  }
  %c = memopt.checkpoint "c" (%b) policies [#memopt.keep] : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%i: tensor<4xf32>):
    memopt.yield %i : tensor<4xf32>
  }
  return
}

// -----

func.func @offload_held_for_without_offload(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.checkpoint' op has offload_held_for but no offloaded input}}
  %r = memopt.checkpoint "a" (%x) policies [#memopt.keep] {offload_held_for = 2} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%i: tensor<4xf32>):
    memopt.yield %i : tensor<4xf32>
  }
  return
}

// -----

func.func @offload_held_for_zero(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.checkpoint' op attribute 'offload_held_for' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  %r = memopt.checkpoint "a" (%x) policies [#memopt.offload<host>] {offload_held_for = 0} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%i: tensor<4xf32>):
    memopt.yield %i : tensor<4xf32>
  }
  return
}
