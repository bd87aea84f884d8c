// Regions nested in the recompute that holds the peak, through memopt-opt's
// pipeline: the small spiking VGG of test_compile_e2e.py (8 conv-BN-LIF
// blocks, T=4, 2x2x32x32 events), scripted, imported, planned for
// prefer=memory. Its first block's recompute holds the flat plan's peak, so
// regions are nested inside that block's region; the memory model then
// follows a recompute within a recompute.
// RUN: %python -c "import sys; sys.path.insert(0, '%memopt_src/python'); from memopt import measure; print(' '.join('--input-shape ' + s for s in measure.save_zoo_model('spiking_vgg', dict(steps=4, batch=2, size=32), '%t.pt')))" > %t.shape
// RUN: memopt-translate --import-torchscript %t.pt $(cat %t.shape) --mlir-print-debuginfo -o %t.mlir
// RUN: memopt-opt %t.mlir --memopt-pipeline="prefer=memory" --mlir-print-debuginfo -o %t.planned.mlir
// RUN: FileCheck %s < %t.planned.mlir
// RUN: memopt-opt %t.planned.mlir -memopt-test-memory-model -o /dev/null | FileCheck %s --check-prefix=MODEL
// The same pipeline without nesting room: prefer=speed keeps regions flat.
// RUN: memopt-opt %t.mlir --memopt-pipeline="prefer=speed" | FileCheck %s --check-prefix=FLAT

// CHECK: memopt.checkpoint "[[OUTER:convs.0[^"]*]]"
// CHECK-NOT: memopt.yield
// CHECK: memopt.checkpoint "{{[^"]+}}"
// CHECK-SAME: within its enclosing region's recompute
// CHECK-SAME: lowers the peak within [[OUTER]] from
// The memory model reads the nested plan back (it is what the reasons'
// "from ... to ..." figures come from).
// MODEL: memory-model @forward
// MODEL: recompute aten::conv2d
// MODEL: peak {{[0-9]+}} at
// FLAT-NOT: within its enclosing region's recompute
