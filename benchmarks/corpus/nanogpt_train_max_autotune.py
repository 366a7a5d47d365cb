# Corpus script: nanoGPT training under torch.compile(model, mode="max-autotune"): forward, backward and a fused AdamW step.
# Origin: https://github.com/karpathy/nanoGPT/blob/3adf61e154c3fe3fca428ad6bc3818b27a3b8291/model.py (verbatim
#   in nanogpt_train_compile.py) and the training loop of train.py at the same commit (its lines that run on one
#   GPU, kept in order).
# Licence: MIT License, Copyright (c) 2022 Andrej Karpathy.
# Changed: nanogpt_train_compile.py (its header says what was changed there) run as this script with
#   compile_mode="max-autotune", the one line in which the two scripts differed.
import os
import runpy

runpy.run_path(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "nanogpt_train_compile.py"),
    init_globals={"compile_mode": "max-autotune"},
    run_name="__main__",
)
