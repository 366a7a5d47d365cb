"""The kernel and its specialization: the file and its @jit functions (loader), the signature grammar
(elements), the specialization checked against Triton's binder (spec, specfile), the settings and
where they came from (settings), targets and the one chip table (targets, hardware), and the checks of
command-line text made before anything loads (inputs)."""
