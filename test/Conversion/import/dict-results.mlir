// Dicts built in forward by item assignment (torchvision's
// IntermediateLayerGetter taps stages into a dict under names a module
// attribute gives; its segmentation models fill a result dict): reads of
// known keys become the stored tensors, the writes go, and the returned
// dict is built once, right before the return. Before, both dicts were
// mutable values live across the whole network and written in its
// middle, so no checkpoint region could be cut (fcn_resnet50: -2 %).
// The keys read from `taps` rest on its value: forward checks it.
// RUN: memopt-translate --import-torchscript %S/../Inputs/dict_taps.pt --input-shape x:2x4 | FileCheck %s
// CHECK-LABEL: func.func @forward(%arg0: tensor<2x4xf32>) -> !memopt.script<"Dict(str, Tensor)">
// CHECK-SAME: memopt.assumes = {taps = {{\[\["a", "low"\], \["c", "high"\]\]}}}
// CHECK-NOT: aten::dict
// CHECK-NOT: aten::_set_item
// CHECK-NOT: aten::__getitem__
// CHECK: %[[LOW:.*]] = memopt.op "aten::relu"
// CHECK: memopt.op "aten::relu"
// CHECK: %[[HIGH:.*]] = memopt.op "aten::relu"
// CHECK: %[[OUT:.*]] = memopt.op "aten::mul"(%[[HIGH]])
// CHECK: %[[AUX:.*]] = memopt.op "aten::add"(%[[LOW]])
// CHECK: %[[DICT:.*]] = memopt.op "prim::DictConstruct"(%[[OUT]], %[[AUX]]) ["out", #memopt.arg<0>, "aux", #memopt.arg<1>]
// CHECK-NEXT: return %[[DICT]]

// Folding on an attribute whose value the exported forward could not
// compare would go stale silently: refused with the attribute and line.
// RUN: not memopt-translate --import-torchscript %S/../Inputs/uncheckable_attribute.pt --input-shape x:2x4 2>&1 | FileCheck %s --check-prefix=UNCHECKABLE
// UNCHECKABLE: memopt: error: prim::If condition depends on module attribute 'cfg' of type Dict[str, List[int]], whose value memopt cannot check at run time, at make_models.py:{{[0-9]+}}
