"""Tests that need a real CUDA GPU, one module per area: test_bench_gpu.py (timing), test_capture_gpu.py (a real
run of `irscope capture SCRIPT`), test_frontier_gpu.py (the frontier matmuls compute torch.matmul), test_sweep_gpu.py
(sweep --time) and test_fidelity.py (irscope's PTX equals what Triton's JIT builds for the launch).

Each module is marked `pytestmark = pytest.mark.gpu` and nothing more: tests/conftest.py skips every gpu test,
with one reason, where torch sees no CUDA GPU. Module-level imports need no GPU. On the GPU machine:
    pytest tests/gpu
Their CPU counterparts stay in tests/test_*.py (tests/conftest.py describes the layout).
"""
