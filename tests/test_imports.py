"""`import irscope`, `irscope --help` and the dump path never import torch."""

import subprocess
import sys

import pytest

from tests.helpers import FBTRITON, VECTOR_ADD


def _torch_loaded(code: str) -> str:
    p = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print('TORCH', 'torch' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    return p.stdout.strip().splitlines()[-1]


def test_import_and_help_do_not_import_torch():
    assert _torch_loaded("import irscope, irscope.cli") == "TORCH False"
    code = (
        "from click.testing import CliRunner\nfrom irscope.cli import cli\n"
        "r = CliRunner().invoke(cli, ['--help']); assert r.exit_code == 0 and 'dump' in r.output"
    )
    assert _torch_loaded(code) == "TORCH False"


@pytest.mark.skipif(FBTRITON, reason="fbtriton 3.7.4 imports torch itself while compiling")
def test_dump_does_not_import_torch(tmp_path):
    code = (
        f"from click.testing import CliRunner\nfrom irscope.cli import cli\n"
        f"r = CliRunner().invoke(cli, ['dump', '{VECTOR_ADD}', '--signature', '*fp32, *fp32, *fp32, i32, 64',"
        f" '-o', '{tmp_path}', '--no-cache', '--json'])\nassert r.exit_code == 0, r.output"
    )
    assert _torch_loaded(code) == "TORCH False"
