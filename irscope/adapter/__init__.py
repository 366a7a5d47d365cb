"""Every difference between Triton versions lives here (3.5 ... 3.9 and Meta's fork supported).

The rest of irscope talks to Triton only through these functions, so a Triton release that moves
an API is fixed in one place. Each function says which versions behave how. Triton is imported
lazily: `import irscope` stays cheap. Three modules, by what irscope does with Triton:

    binding     versions, kernels, backends and their options, the launch binder, sources
    compiling   stage hooks, the compile call, env knobs, tools, recipe knobs
    runtime     the JIT's hook slots, drivers, autotuners, compiled kernels (capture)

Callers use `from irscope import adapter` and `adapter.NAME` for binding and compiling (the
names below); capture and the stand-in GPU import `adapter.runtime` itself, which keeps it off the
plain dump's start-up.
"""

from irscope.adapter.binding import (  # noqa: F401
    amd_buffer_ops_enabled,
    bind,
    cache_invalidating_env,
    canonical_pointer_dtype,
    default_option_notes,
    default_options,
    is_gluon,
    jit_function_type,
    kernel_cache_key,
    kernel_params,
    kernel_source,
    launch_kwargs,
    make_backend,
    make_source,
    options_fields,
    pointer_dtype,
    pointer_dtype_names,
    quiet_replaced_warnings,
    tensor_descriptor,
    triton_version,
    unwrap_kernel,
    version_tuple,
)
from irscope.adapter.compiling import (  # noqa: F401
    StageWrapper,
    compile,
    compile_error_types,
    compile_identity,
    cuobjdump_path,
    environment,
    fresh_compile,
    ir_stage_names,
    nvdisasm_path,
    pass_dump_env,
    prebuild_driver_utils,
    prebuild_launcher,
    recipe_env_knobs,
    run_with_ptxas_log,
    split_outputs,
    stage_hook,
    stages_of_compiles_wrapped,
)
