"""The stand-in GPU: a script written for a GPU runs on a machine without one, as if it had it.

    gpu       machine(target): both halves up together; machine_unless_local for replays
    driver    Triton's active driver for the target: binds and compiles for it, runs nothing
    tensors   torch on the CPU for "cuda": tensors say cuda:0, torch.cuda answers as the chip
    interpret each recorded launch computed by Triton's interpreter, within budgets
    shapes    torch ops too big for the CPU run shape-only
    bench     do_bench* run once; CUDA graphs capture and replay as plain calls
    identity  torch.version, nvidia-smi / rocm-smi on PATH (smi.py) answer as the chip

Used by capture (compile-only runs) and by jobs (loading a captured script's kernel file again).
"""
