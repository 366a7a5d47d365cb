"""Steering the compiler: recipes (TOML data) and pins (IR rewrites checked against the output).

Three kinds of pin, reachable from a recipe and from the command line (pins.py):

  loop       `--pin-loop 'LINE:num_stages=4'`: the per-loop attributes `tl.range(...)` would set,
             written on the scf.for of that Python line in TTIR (loops.py); the TTGIR pipeline then
             runs on the edited TTIR, so the compiler's own passes honour them.
  layout     `--pin-layout 'blocked=#ttg.blocked<{...}>'` or `'blocked:sizePerThread=[1]'`: replaces
             or edits the layout a TTGIR alias names, checked against the layout rules and the MLIR
             parser/verifier (layouts.py); the later stages compile from the edited TTGIR.
  constexpr  a recipe's constexpr values (Gluon layouts included); part of the specialization.

The package, in the order a compile meets it:

    mlir          MLIR text: brackets, layouts, locations -> Python lines, scf.for loops
    pins          the pin model (LoopPin, LayoutPin, PartitionPin, ConstPin), its parsing, which pin wins
    loops         the TTIR loop rewrite
    layouts       the TTGIR layout rewrite and its rules
    checks        every pin and option checked against the compiled output
    pinset        Pins (Settings.pins, kernel/settings' PinSet) and its Plan: which stages to edit, then the checks
    toml_lines    line numbers for TOML keys (tomllib has none)
    recipe_model  Recipe, Variant, Layer
    recipe_file   a recipe file read and validated, every problem as FILE:LINE
    recipes       finding, loading and checking recipes (layering.apply lays them on); what `recipes list/show` shows

Errors in pins are BadInput (exit 2, nothing written): a malformed pin, a loop line with no loop,
an alias the TTGIR lacks, an illegal layout. A recipe's default-table pin (optional=True) that
finds no loop, alias or field is skipped instead: the defaults apply to every kernel, and not
every kernel has them. kernel/ and compile/ never import steer: Settings.pins brings its own plan.
"""
