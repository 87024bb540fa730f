"""The package as a user gets it: one version, the license text, type markers, and an install
from nothing (a fresh venv, ``pip install`` of this repository without extras) that runs.

The install test uses PyPI (or the index pip is configured with) and pip's own cache, so a
second run costs about half a minute; it skips only where ``venv`` or ``pip`` cannot be used.
"""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import eagle
import hawk

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_one_version():
    version = PYPROJECT["project"]["version"]
    assert eagle.__version__ == hawk.__version__ == version
    literal = re.compile(r"^__version__\s*=\s*['\"]", re.MULTILINE)
    written = [str(p.relative_to(ROOT)) for p in (ROOT / "src").rglob("*.py")
               if literal.search(p.read_text())]
    assert written == [], f"a version literal besides pyproject.toml's: {written}"


def test_license_text_type_markers_and_metadata_are_shipped():
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the full text, not a notice
    for package in ("eagle", "hawk"):
        assert (ROOT / "src" / package / "py.typed").is_file()
        assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"][package]
    assert "Typing :: Typed" in project["classifiers"] and project["urls"]
    for name in ("CHANGELOG.md", "CONTRIBUTING.md"):
        assert (ROOT / name).is_file()
    assert f"## {project['version']}" in (ROOT / "CHANGELOG.md").read_text()


def test_every_data_file_in_the_packages_is_package_data():
    """A file beside the modules that is not Python (a tableau's coefficients,
    ``hawk/ode/tableaus/vern9.json``) is read at import: a wheel without it breaks ``import
    hawk``, so every such file matches a ``package-data`` pattern."""
    for package in ("eagle", "hawk"):
        patterns = PYPROJECT["tool"]["setuptools"]["package-data"][package]
        folder = ROOT / "src" / package
        data = [p.relative_to(folder).as_posix() for p in folder.rglob("*")
                if p.is_file() and p.suffix not in (".py", ".pyc")
                and "__pycache__" not in p.parts]
        missing = [d for d in data if not any(fnmatch.fnmatch(d, p) for p in patterns)]
        assert not missing, f"{package}: not in package-data: {missing}"


def test_install_hints_name_the_distribution():
    wrong = [str(p.relative_to(ROOT)) for p in (ROOT / "src").rglob("*.py")
             if "pip install 'eagle[" in p.read_text()]
    assert wrong == [], f"'eagle' on PyPI is another project; say eagle-hawk in {wrong}"
    readme = (ROOT / "README.md").read_text()
    assert readme.index("pip install eagle-hawk") < readme.index("```python") \
        < readme.index("make test")


KERNEL = '''\
import hawk
from hawk import Mutable, Param, Scalar, Terminated


@hawk.kernel
def fall(h: Mutable[Scalar], v: Mutable[Scalar], dt: Param, done: Terminated):
    v = v - 9.81 * dt
    h = h + dt * v
    done = h <= 0.0
'''

SIMULATE = '''\
import sys
import numpy as np
import eagle
from hawk.source import import_file

fall = import_file(sys.argv[1], "falling").fall
h, v = np.linspace(1.0, 10.0, 64), np.zeros(64)
report = eagle.simulate(fall, max_steps=10_000, progress=True, h=h, v=v, dt=1e-3)
assert report.done == 64 and report.device == "cpu", report
assert (h <= 0.0).all()
print("simulated", report.steps, "steps on", report.device, "with eagle", eagle.__version__,
      "from", eagle.__file__)
'''


def _fresh_venv(where: Path) -> Path:
    try:
        subprocess.run([sys.executable, "-m", "venv", str(where)], check=True,
                       capture_output=True, timeout=120)
    except (subprocess.CalledProcessError, OSError) as exc:
        pytest.skip(f"python -m venv is not usable here: {exc}")
    python = where / "bin" / "python"
    probe = subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True,
                           timeout=120)
    if probe.returncode != 0:
        pytest.skip(f"pip is not usable in a fresh venv: {probe.stderr.decode()[-500:]}")
    return python


@pytest.mark.slow
def test_installs_into_a_fresh_venv_without_extras_and_runs(tmp_path):
    python = _fresh_venv(tmp_path / "venv")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["EAGLE_CACHE_DIR"] = str(tmp_path / "cache")
    env.pop("PIP_NO_CACHE_DIR", None)  # reuse pip's cache: the second run downloads nothing
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(ROOT)],
                             capture_output=True, text=True, timeout=600, env=env,
                             cwd=tmp_path)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]

    def run(*args):
        done = subprocess.run([str(python), *args], capture_output=True, text=True,
                              timeout=300, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done

    version = PYPROJECT["project"]["version"]
    assert run("-m", "eagle", "--version").stdout.startswith(f"eagle {version}")
    assert run("-m", "hawk", "--version").stdout.startswith(f"hawk {version}")
    info = run("-m", "eagle", "info").stdout
    assert f"eagle {version}, hawk {version}" in info
    assert "cache: cache (" in info  # shown relative to the current folder
    (tmp_path / "falling.py").write_text(KERNEL)
    (tmp_path / "simulate.py").write_text(SIMULATE)
    done = run(str(tmp_path / "simulate.py"), str(tmp_path / "falling.py"))
    assert "simulated" in done.stdout and "on cpu" in done.stdout
    installed = Path(done.stdout.split(" from ")[-1].strip()).parent
    assert installed.is_relative_to(tmp_path / "venv"), installed  # not this checkout
    assert "64/64" in done.stderr  # the progress bar (tqdm, a dependency without extras)
    site = installed.parent
    assert (site / "eagle" / "py.typed").is_file() and (site / "hawk" / "py.typed").is_file()
    assert (site / "hawk" / "ode" / "tableaus" / "vern9.json").is_file()
    licenses = list(site.glob("eagle_hawk-*.dist-info/licenses/LICENSE"))
    assert licenses and "Apache License" in licenses[0].read_text()
    assert not list(site.glob("cuda*")), "no extras: cuda-bindings must not be installed"


NATIVE_PROJECT = tomllib.loads((ROOT / "native" / "pyproject.toml").read_text())["project"]


def test_the_native_distribution_has_eagles_version_and_licence():
    """eagle-hawk-cuda (native/) is released with eagle-hawk: the same version (the ABI check
    tells a user to install the eagle-hawk-cuda of eagle's own version) and licence."""
    assert NATIVE_PROJECT["name"] == "eagle-hawk-cuda"
    assert NATIVE_PROJECT["version"] == PYPROJECT["project"]["version"]
    assert NATIVE_PROJECT["license"] == {"text": PYPROJECT["project"]["license"]}


@pytest.mark.slow
def test_the_native_distribution_builds_one_py3_wheel_that_loads_with_no_driver(tmp_path):
    """``pip wheel ./native`` (scikit-build-core and the nvidia-cuda-runtime headers fetched
    into the build's own environment, CMake, no CUDA toolkit): one wheel for every Python 3,
    holding the library, its headers and CMake package, and none of NVIDIA's files; loaded
    with ctypes where no driver is, it says why no GPU is usable."""
    import zipfile

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.pop("PIP_NO_CACHE_DIR", None)
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"  # cmake and ninja of [test]
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                           str(ROOT / "native"), "-w", str(tmp_path)], capture_output=True,
                          text=True, timeout=900, env=env, cwd=tmp_path)
    if done.returncode != 0 and re.search(r"(?i)connection|resolve|network|index",
                                          done.stderr):
        pytest.skip(f"no package index to fetch the build's requirements: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    wheels = list(tmp_path.glob("eagle_hawk_cuda-*.whl"))
    assert len(wheels) == 1 and "-py3-none-" in wheels[0].name, wheels
    names = zipfile.ZipFile(wheels[0]).namelist()
    for needed in ("eagle_cuda_native/__init__.py", "eagle_cuda_native/lib/libeagle_cuda.so",
                   "eagle_cuda_native/include/eagle/cuda/c_api.h",
                   "eagle_cuda_native/lib/cmake/eagle_cuda/eagle_cudaConfig.cmake"):
        assert needed in names, needed
    assert not [n for n in names if n.endswith(("cuda.h", "cudaTypedefs.h", "libcudart.so"))]
    # once: a wheel stores a library's versioned links as copies
    assert [n for n in names if "libeagle_cuda.so" in n] == [
        "eagle_cuda_native/lib/libeagle_cuda.so"]
    target = tmp_path / "site"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                              "--target", str(target), str(wheels[0])], capture_output=True,
                             text=True, timeout=300, env=env)
    assert install.returncode == 0, install.stderr[-3000:]
    child = ("import ctypes, eagle_cuda_native as n\n"
             "lib = ctypes.CDLL(str(n.library_path()))\n"
             "out = ctypes.create_string_buffer(512)\n"
             "print(lib.eagle_cuda_abi_version(), n.ABI_VERSION, "
             "lib.eagle_unavailable_reason(out, 512), out.value.decode())")
    env.update(PYTHONPATH=str(target), EAGLE_LIBCUDA=str(tmp_path / "libcuda.so.1"))
    run = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                         timeout=120, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("1 1 0 no NVIDIA driver found ("), run.stdout
